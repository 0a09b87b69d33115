"""What the ``auto-merge`` and ``small-to-big`` strategies share: retrieve small chunks with a base
strategy taken from the registry, then assemble them into passages with one policy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from waypost.context import SearchContext
from waypost.filters.model import Filter
from waypost.retrieval.fusion import FusionConfig
from waypost.types import RetrievalResult

if TYPE_CHECKING:
    from waypost.post.passages import PassagePolicy

PASSAGE_TOKENS = 1024  # as PassageConfig.tokens


@dataclass(frozen=True)
class PassageStrategyParams:
    base: str = "hybrid"  # the strategy that finds the small chunks
    tokens: int = PASSAGE_TOKENS  # the longest passage
    window: int = 1  # small-to-big: neighbours taken on each side
    candidates: int = 3  # chunks retrieved per passage asked for

    def check(self) -> str:
        if self.base in ("auto-merge", "small-to-big", "web"):
            return f"base cannot be {self.base!r}"
        if self.tokens < 1 or self.candidates < 1 or self.window < 0:
            return "tokens and candidates must be positive, window zero or more"
        return ""


class PassageStrategy:
    """A base strategy's chunks, assembled into passages by ``policy``."""

    policy: PassagePolicy
    name: str

    def __init__(self, ctx: SearchContext, fusion: FusionConfig, params: PassageStrategyParams | None = None) -> None:
        self.ctx = ctx
        self.fusion = fusion
        self.params = params or PassageStrategyParams()

    def retrieve(self, query: str, k: int = 10, filters: Filter | None = None) -> RetrievalResult:
        from waypost.post.passages import PassageAssembler, PassageConfig
        from waypost.retrieval.registry import make_retriever

        p = self.params
        base = make_retriever(p.base, self.ctx, self.fusion).retrieve(query, k * p.candidates, filters)
        config = PassageConfig(self.policy, tokens=p.tokens, window=p.window, alpha=self.fusion.alpha)
        result = PassageAssembler(self.ctx, config).assemble(query, base, k)
        result.explanation.strategy = self.name
        result.explanation.notes.insert(0, f"base strategy {p.base}, {len(base.hits)} chunks")
        return result
