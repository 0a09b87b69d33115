"""Metadata strategy: extract filters from the query text, pre-filter, then hybrid on what is left."""

from __future__ import annotations

from waypost.context import QueryFilterExtractor, SearchContext, Timer
from waypost.filters.extract import combine
from waypost.filters.model import Filter
from waypost.llm.accounting import QueryMetadata
from waypost.retrieval.fusion import FusionConfig
from waypost.retrieval.hybrid import hybrid_search
from waypost.types import RetrievalResult

__all__ = ["MetadataRetriever", "QueryFilterExtractor"]


class MetadataRetriever:
    name = "metadata"

    def __init__(
        self, ctx: SearchContext, config: FusionConfig | None = None, extractor: QueryFilterExtractor | None = None
    ) -> None:
        self.ctx = ctx
        self.config = config or FusionConfig()
        self.extractor = extractor or ctx.filter_extractor()

    def retrieve(self, query: str, k: int = 10, filters: Filter | None = None) -> RetrievalResult:
        timer = Timer()
        usage = QueryMetadata(self.name)
        with timer.stage("extract_filters"):
            extraction = self.extractor.extract(query, usage)
        flt = combine(filters, extraction.filter)
        mask = self.ctx.prefilter(flt, timer)
        # With no words left, every candidate matches equally; the full query still orders them.
        semantic = extraction.semantic_query or query
        positions, scores, stages = hybrid_search(self.ctx, semantic, k, mask, self.config, timer)
        with timer.stage("fetch"):
            hits = self.ctx.hits(positions, scores, self.name, stages)
        explanation = self.ctx.explain(self.name, query, extraction.semantic_query, flt, mask, timer)
        explanation.notes.extend(extraction.matches)
        explanation.llm = usage if usage.llm_calls or usage.fallbacks else None
        return RetrievalResult(hits, explanation)
