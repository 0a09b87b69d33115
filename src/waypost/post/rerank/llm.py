"""An LLM as a reranker, pointwise (a 0-10 score per hit) or listwise (one call that orders numbered passages).

Passages are cut to fit a small context (SmolLM2 runs with ``n_ctx`` 4096) by a generous token estimate.
Replies are JSON, found and repaired by ``complete_structured``; a listwise reply may leave ids out or repeat
them: the hits it names come first in its order, the others keep their relative order after them. Calls, tokens
and cost go into ``explanation.llm`` (added to what retrieval already spent there). A provider failure or a reply
that cannot be read sends the query to the ``fallback`` reranker; the note and the accounting say so.
"""

from __future__ import annotations

import re
import time
from typing import Any, Literal

from pydantic import BaseModel, field_validator, model_validator

from waypost.base import Reranker
from waypost.errors import WaypostError
from waypost.llm.accounting import PriceTable, QueryMetadata
from waypost.llm.base import GenerationParams, LLMProvider, Message
from waypost.llm.cache import derived_from
from waypost.llm.structured import complete_structured
from waypost.post.rerank.cross_encoder import copy_result, rescored
from waypost.types import Explanation, Hit, RetrievalResult

Mode = Literal["pointwise", "listwise"]
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_EXAMPLE_QUERY = "how tall is the Eiffel Tower?"
_EXAMPLE_PASSAGES = (
    "Penguins live in the southern hemisphere.",
    "The Eiffel Tower in Paris is 330 metres tall.",
    "The Eiffel Tower was built for the 1889 World's Fair in Paris.",
)
_SCORE_KEYS = ("score", "relevance", "rating", "relevant")


class RerankFailed(Exception):
    """The LLM gave no usable answer; the reason goes into the note."""


class PointwiseReply(BaseModel):
    score: float

    @model_validator(mode="before")
    @classmethod
    def _tolerant(cls, data: Any) -> Any:
        """``{"score": 7}``, ``{"relevance": "7/10"}``, ``{"rating": 7}`` or ``[7]``; not any number (an id)."""
        if isinstance(data, dict) and "score" not in data:
            key = next((k for k in data if str(k).casefold() in _SCORE_KEYS), None)
            return {"score": data[key]} if key is not None else data
        if isinstance(data, list) and len(data) == 1:
            return {"score": data[0]}
        return data

    @field_validator("score", mode="before")
    @classmethod
    def _number(cls, value: Any) -> Any:
        number = _first_number(value)
        return value if number is None else min(10.0, max(0.0, number))


class ListwiseReply(BaseModel):
    order: list[int]

    @model_validator(mode="before")
    @classmethod
    def _tolerant(cls, data: Any) -> Any:
        """``{"order": [...]}``, a bare list, or an object whose first list value is the order."""
        if isinstance(data, list):
            return {"order": data}
        if isinstance(data, dict) and "order" not in data:
            lists = [v for v in data.values() if isinstance(v, list)]
            return {"order": lists[0]} if lists else data
        return data

    @field_validator("order", mode="before")
    @classmethod
    def _ids(cls, value: Any) -> Any:
        """Ids as numbers, "3", "[3]", "passage 3" or ``{"id": 3}``; items without one are dropped."""
        if not isinstance(value, list):
            return value
        ids: list[int] = []
        for item in value:
            if isinstance(item, dict):
                item = item.get("id", next(iter(item.values()), None))
            number = _first_number(item)
            if number is not None and number == int(number):
                ids.append(int(number))
        if not ids:
            raise ValueError("the order names no passage id")
        return ids


def _first_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        match = _NUMBER.search(value)
        return float(match.group()) if match else None
    return None


def estimate_tokens(text: str) -> float:
    """A generous guess of a small model's token count: SmolLM2 needs about 0.2 tokens a character of English,
    0.4 of German or code, and up to 2 of Chinese, Japanese or Cyrillic."""
    return sum(0.4 if ord(ch) < 128 else 2.0 for ch in text)


def clip(text: str, max_tokens: int) -> str:
    """``text`` on one line, cut at a word boundary to at most ``max_tokens`` estimated tokens."""
    flat = " ".join(text.split())
    if estimate_tokens(flat) <= max_tokens:
        return flat
    used, end = 1.0, 0  # one token for the ellipsis
    while end < len(flat):
        used += 0.4 if ord(flat[end]) < 128 else 2.0
        if used > max_tokens:
            break
        end += 1
    cut = flat[:end]
    space = cut.rfind(" ")
    return (cut[:space] if space > end // 2 else cut) + "..."


class LLMReranker:
    def __init__(
        self,
        llm: LLMProvider,
        fallback: Reranker,
        mode: str = "pointwise",
        prices: PriceTable | None = None,
        depth: int = 10,
        *,
        passage_tokens: int = 300,
        context_tokens: int = 2400,
        query_tokens: int = 100,
    ) -> None:
        if mode not in ("pointwise", "listwise"):
            raise WaypostError(f"LLM rerank mode must be pointwise or listwise, got {mode!r}")
        if depth < 1:
            raise WaypostError(f"LLM rerank depth must be at least 1, got {depth}")
        self.llm = llm
        self.fallback = fallback
        self.mode: Mode = "pointwise" if mode == "pointwise" else "listwise"
        self.name = f"llm-{mode}"
        self.prices = prices or PriceTable()
        self.depth = depth
        # Estimated tokens (``estimate_tokens``, generous): 2,400 of passages, the query, the instructions with
        # their example and the reply fit a 4,096-token context (SmolLM2's) with room to spare.
        self.passage_tokens = passage_tokens
        self.context_tokens = context_tokens
        self.query_tokens = query_tokens

    # -- prompts -------------------------------------------------------------------------------------
    # One worked example each: small models (SmolLM2-135M) answer in the asked format only when shown it.
    def pointwise_messages(self, query: str, text: str) -> list[Message]:
        system = (
            "You judge how well a passage answers a search query. Reply with JSON only: "
            '{"score": N}, where N is a whole number from 0 (unrelated) to 10 (answers the query fully).'
        )
        passage = clip(text, min(self.passage_tokens, self.context_tokens))
        return [
            {"role": "system", "content": system},
            {"role": "user", "content": f"Query: {_EXAMPLE_QUERY}\n\nPassage: {_EXAMPLE_PASSAGES[2]}\n\nJSON:"},
            {"role": "assistant", "content": '{"score": 3}'},
            {"role": "user", "content": f"Query: {clip(query, self.query_tokens)}\n\nPassage: {passage}\n\nJSON:"},
        ]

    def listwise_messages(self, query: str, texts: list[str]) -> list[Message]:
        per_passage = max(30, min(self.passage_tokens, self.context_tokens // max(1, len(texts))))
        passages = "\n".join(f"[{i}] {clip(text, per_passage)}" for i, text in enumerate(texts, 1))
        example = "\n".join(f"[{i}] {text}" for i, text in enumerate(_EXAMPLE_PASSAGES, 1))
        system = (
            "You rank passages by how well they answer a search query. Reply with JSON only: "
            '{"order": [ids]}, the passage ids from the most to the least relevant.'
        )
        return [
            {"role": "system", "content": system},
            {"role": "user", "content": f"Query: {_EXAMPLE_QUERY}\n\nPassages:\n{example}\n\nJSON:"},
            {"role": "assistant", "content": '{"order": [2, 3, 1]}'},
            {"role": "user", "content": f"Query: {clip(query, self.query_tokens)}\n\nPassages:\n{passages}\n\nJSON:"},
        ]

    # -- the two modes -------------------------------------------------------------------------------
    def _pointwise(self, query: str, head: list[Hit], usage: QueryMetadata) -> list[float]:
        values: list[float] = []
        for hit in head:
            with derived_from(texts=[hit.chunk.text]):
                reply = complete_structured(
                    self.llm,
                    self.pointwise_messages(query, hit.chunk.text),
                    PointwiseReply,
                    usage,
                    self.prices,
                    GenerationParams(max_tokens=24),
                    step="rerank",
                )
            if reply.value is None:  # stop at the first failure: a dead server is not asked ten times
                raise RerankFailed(f"passage {hit.chunk.id}: {reply.error}")
            values.append(reply.value.score)
        return values

    def _listwise(self, query: str, head: list[Hit], usage: QueryMetadata) -> tuple[list[float], int]:
        """A score per hit (``len(head)`` for the first in the model's order, down to 1) and how many it named."""
        with derived_from(texts=[hit.chunk.text for hit in head]):
            reply = complete_structured(
                self.llm,
                self.listwise_messages(query, [hit.chunk.text for hit in head]),
                ListwiseReply,
                usage,
                self.prices,
                GenerationParams(max_tokens=16 + 5 * len(head)),
                step="rerank",
            )
        if reply.value is None:
            raise RerankFailed(reply.error or "no reply")
        named: dict[int, None] = {}
        for pid in reply.value.order:
            if 1 <= pid <= len(head):
                named.setdefault(pid - 1, None)
        if not named:
            raise RerankFailed(f"the reply names none of the passages 1..{len(head)}: {reply.value.order[:10]}")
        order = [*named, *(i for i in range(len(head)) if i not in named)]
        values = [0.0] * len(head)
        for rank, i in enumerate(order):
            values[i] = float(len(head) - rank)
        return values, len(named)

    def rerank(self, query: str, result: RetrievalResult) -> RetrievalResult:
        if not result.hits:
            return result
        t0 = time.perf_counter()
        head = result.hits[: self.depth]
        usage = QueryMetadata("rerank")
        named = len(head)
        try:
            if self.mode == "pointwise":
                values = self._pointwise(query, head, usage)
            else:
                values, named = self._listwise(query, head, usage)
        except RerankFailed as exc:
            reason = " ".join(str(exc).split())[:200]
            if usage.fallbacks:  # complete_structured said why; say where the query went
                usage.fallbacks[-1] += f"; fell back to {self.fallback.name}"
            else:
                usage.fallbacks.append(f"rerank: {reason}; fell back to {self.fallback.name}")
            out = copy_result(self.fallback.rerank(query, result))
            out.explanation.notes.append(f"rerank: llm failed ({reason}); fell back to {self.fallback.name}")
            _account(out.explanation, usage)
            out.explanation.timings_ms["rerank"] = (time.perf_counter() - t0) * 1000.0
            return out
        order = sorted(range(len(head)), key=lambda i: -values[i])  # stable: ties keep the retrieval order
        out = copy_result(result)
        out.hits = [*(rescored(head[i], "llm", values[i]) for i in order), *result.hits[self.depth :]]
        out.explanation.timings_ms["rerank"] = (time.perf_counter() - t0) * 1000.0
        placed = f", {named} placed by the model" if self.mode == "listwise" else ""
        out.explanation.notes.append(
            f"rerank: llm {self.mode} {self.llm.model_id}, {len(head)} candidates, {usage.llm_calls} calls{placed}"
        )
        _account(out.explanation, usage)
        return out


def _account(explanation: Explanation, usage: QueryMetadata) -> None:
    """Add the reranker's calls, tokens, cost and fallbacks to what the result already records."""
    if not usage.llm_calls and not usage.fallbacks:
        return
    if explanation.llm is None:
        explanation.llm = QueryMetadata(explanation.strategy)
    total = explanation.llm
    total.llm_calls += usage.llm_calls
    total.llm_cache_hits += usage.llm_cache_hits
    total.prompt_tokens += usage.prompt_tokens
    total.completion_tokens += usage.completion_tokens
    total.cost_usd += usage.cost_usd
    total.fallbacks.extend(usage.fallbacks)
