"""Strategy names as used on the CLI and in the API."""

from __future__ import annotations

from collections.abc import Callable

from waypost.base import Retriever
from waypost.errors import WaypostError
from waypost.retrieval.bm25 import BM25Retriever
from waypost.retrieval.context import SearchContext
from waypost.retrieval.dense import DenseRetriever
from waypost.retrieval.fusion import FusionConfig
from waypost.retrieval.hybrid import HybridRetriever
from waypost.retrieval.metadata import MetadataRetriever

STRATEGIES: dict[str, Callable[[SearchContext, FusionConfig], Retriever]] = {
    "dense": lambda ctx, _cfg: DenseRetriever(ctx),
    "bm25": lambda ctx, _cfg: BM25Retriever(ctx),
    "hybrid": lambda ctx, cfg: HybridRetriever(ctx, cfg),
    "metadata": lambda ctx, cfg: MetadataRetriever(ctx, cfg),
}


def make_retriever(name: str, ctx: SearchContext, fusion: FusionConfig | None = None) -> Retriever:
    if name == "web":
        from waypost.retrieval.web import WebRetriever, web_search_provider

        return WebRetriever(web_search_provider())  # a clear error while no provider is configured
    try:
        factory = STRATEGIES[name]
    except KeyError:
        raise WaypostError(f"unknown strategy {name!r}; choose one of {', '.join(STRATEGIES)}") from None
    return factory(ctx, fusion or FusionConfig())
