"""Strategy names as used on the CLI and in the API, each with its typed parameters."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from waypost.base import Retriever
from waypost.context import SearchContext
from waypost.errors import InvalidInputError
from waypost.filters.model import Filter
from waypost.retrieval.bm25 import BM25Retriever
from waypost.retrieval.dense import DenseRetriever
from waypost.retrieval.doc_summary import DocSummaryParams, DocSummaryRetriever
from waypost.retrieval.fusion import FusionConfig
from waypost.retrieval.graph_global import GlobalParams
from waypost.retrieval.graph_local import LocalParams
from waypost.retrieval.hipporag import HippoParams
from waypost.retrieval.hybrid import HybridRetriever
from waypost.retrieval.lightrag import LightParams
from waypost.retrieval.metadata import MetadataRetriever
from waypost.retrieval.multihop import MultihopParams
from waypost.retrieval.params import NoParams, parse_params
from waypost.retrieval.passage_strategy import PassageStrategyParams
from waypost.retrieval.raptor_collapsed import CollapsedParams, RaptorCollapsedRetriever
from waypost.retrieval.raptor_traversal import RaptorTraversalRetriever, TraversalParams
from waypost.types import RetrievalResult

if TYPE_CHECKING:
    from waypost.graph.live import LiveGraph


@dataclass(frozen=True)
class Strategy:
    """A registered strategy: how to make it, its parameters, what it needs, and its cost class (latency
    relative to hybrid's; the router breaks ties toward the cheaper pipeline)."""

    make: Callable[[SearchContext, FusionConfig, Any], Retriever]
    params: type[Any] = NoParams
    needs_tree: bool = False
    needs_graph: bool = False
    needs_llm: bool = False
    cost: float = 1.0
    extracts_filters: bool = False  # reads metadata filters out of the query text (the router's filter rule)


class GraphReading:
    """A graph strategy's retriever whose every query holds the graph's read section: no catch-up changes the
    graph while the query reads it."""

    def __init__(self, retriever: Retriever, graph: LiveGraph) -> None:
        self.retriever = retriever
        self.graph = graph
        self.name = retriever.name

    def retrieve(self, query: str, k: int = 10, filters: Filter | None = None) -> RetrievalResult:
        with self.graph.reading():
            return self.retriever.retrieve(query, k, filters)


def _hipporag(ctx: SearchContext, fusion: FusionConfig, params: HippoParams) -> Retriever:
    from waypost.retrieval.hipporag import HippoRAGRetriever  # the graph stack loads on first use

    return HippoRAGRetriever(ctx, fusion, params)


def _graph_local(ctx: SearchContext, fusion: FusionConfig, params: LocalParams) -> Retriever:
    from waypost.retrieval.graph_local import GraphLocalRetriever

    return GraphLocalRetriever(ctx, fusion, params)


def _graph_global(ctx: SearchContext, fusion: FusionConfig, params: GlobalParams) -> Retriever:
    from waypost.retrieval.graph_global import GraphGlobalRetriever

    llm = ctx.llm() if params.rate > 0 else None  # the map step, when an LLM is configured
    return GraphGlobalRetriever(ctx, fusion, params, llm, ctx.prices)


def _lightrag(ctx: SearchContext, fusion: FusionConfig, params: LightParams) -> Retriever:
    from waypost.retrieval.lightrag import LightRAGRetriever

    return LightRAGRetriever(ctx, fusion, params)


def _multihop(ctx: SearchContext, fusion: FusionConfig, params: MultihopParams) -> Retriever:
    from waypost.retrieval.multihop import MultihopRetriever

    return MultihopRetriever(ctx, fusion, params)


def _auto_merge(ctx: SearchContext, fusion: FusionConfig, params: PassageStrategyParams) -> Retriever:
    from waypost.retrieval.auto_merge import AutoMergeRetriever

    return AutoMergeRetriever(ctx, fusion, params)


def _small_to_big(ctx: SearchContext, fusion: FusionConfig, params: PassageStrategyParams) -> Retriever:
    from waypost.retrieval.small_to_big import SmallToBigRetriever

    return SmallToBigRetriever(ctx, fusion, params)


DEFAULT_STRATEGY = "hybrid"  # the reliability default: the router's first stage; gains are measured against it

STRATEGIES: dict[str, Strategy] = {
    "dense": Strategy(lambda ctx, _cfg, _p: DenseRetriever(ctx), cost=0.6),
    "bm25": Strategy(lambda ctx, _cfg, _p: BM25Retriever(ctx), cost=0.4),
    "hybrid": Strategy(lambda ctx, cfg, _p: HybridRetriever(ctx, cfg)),
    "metadata": Strategy(lambda ctx, cfg, _p: MetadataRetriever(ctx, cfg), cost=1.2, extracts_filters=True),
    "raptor-collapsed": Strategy(RaptorCollapsedRetriever, CollapsedParams, True, cost=2.0),
    "raptor-traversal": Strategy(RaptorTraversalRetriever, TraversalParams, True, cost=2.0),
    "doc-summary": Strategy(DocSummaryRetriever, DocSummaryParams, True, cost=2.0),
    "auto-merge": Strategy(_auto_merge, PassageStrategyParams, cost=1.5),
    "small-to-big": Strategy(_small_to_big, PassageStrategyParams, cost=1.5),
    "hipporag": Strategy(_hipporag, HippoParams, needs_graph=True, cost=4.0),
    "graph-local": Strategy(_graph_local, LocalParams, needs_graph=True, cost=3.0),
    "graph-global": Strategy(_graph_global, GlobalParams, needs_graph=True, cost=3.0),
    "lightrag": Strategy(_lightrag, LightParams, needs_graph=True, cost=3.0),
    "multihop": Strategy(_multihop, MultihopParams, needs_graph=True, cost=4.0),
}


def strategy(name: str) -> Strategy:
    try:
        return STRATEGIES[name]
    except KeyError:
        from waypost.retrieval.web import is_available

        known = [*STRATEGIES, "web"] if is_available() else list(STRATEGIES)  # web only with a provider
        raise InvalidInputError(f"unknown strategy {name!r}; choose one of {', '.join(known)}") from None


def make_retriever(
    name: str, ctx: SearchContext, fusion: FusionConfig | None = None, params: Mapping[str, object] | None = None
) -> Retriever:
    if name == "web":
        from waypost.retrieval.web import WebRetriever, web_search_provider

        return WebRetriever(web_search_provider())  # a clear error while no provider is configured
    spec = strategy(name)
    retriever = spec.make(ctx, fusion or FusionConfig(), parse_params(name, spec.params, params))
    return GraphReading(retriever, ctx.graph) if spec.needs_graph and ctx.graph is not None else retriever


# One line per strategy for prompts and listings (the LLM router shows them); a strategy without one is
# described from its declared needs and cost.
DESCRIPTIONS: dict[str, str] = {
    "dense": "embedding similarity only; paraphrases and semantic questions",
    "bm25": "keyword match only; rare names, codes and exact terms",
    "hybrid": "dense and keyword rankings fused; the reliable default for specific questions",
    "metadata": "reads filters (years, categories, ratings, people) out of the query, then hybrid on what matches",
    "raptor-collapsed": "summaries of every level of a document tree compete with passages; broad or summary questions",
    "raptor-traversal": "walks a summary tree from the top down; overview questions over long documents",
    "doc-summary": "finds the best documents by their summaries, then their best chunks",
    "auto-merge": "returns whole sections when several hits share one",
    "small-to-big": "matches small chunks, returns them with their neighbours",
    "hipporag": "personalized PageRank over an entity graph; multi-hop questions linking several entities",
    "graph-local": "an entity's graph neighbourhood; questions about relations between named things",
    "graph-global": "community reports of the entity graph; corpus-wide themes",
    "lightrag": "entity and relation keywords over the graph; mixed specific and thematic questions",
    "multihop": "retrieves, reads bridge entities off the hits, retrieves again; two-step questions",
}
