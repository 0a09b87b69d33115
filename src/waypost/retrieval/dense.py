"""Dense retrieval: embed the query, inner product against every chunk vector (or HNSW candidates)."""

from __future__ import annotations

from waypost.context import SearchContext, Timer, ranked_table
from waypost.filters.model import Filter
from waypost.types import RetrievalResult


class DenseRetriever:
    name = "dense"

    def __init__(self, ctx: SearchContext) -> None:
        self.ctx = ctx

    def retrieve(self, query: str, k: int = 10, filters: Filter | None = None) -> RetrievalResult:
        timer = Timer()
        mask = self.ctx.prefilter(filters, timer)
        with timer.stage("embed_query"):
            self.ctx.query_vector(query)
        with timer.stage("dense_search"):
            positions, scores = self.ctx.dense(query).top(k, mask)
        with timer.stage("fetch"):
            hits = self.ctx.hits(positions, scores, self.name, {"dense": ranked_table(positions, scores)})
        explanation = self.ctx.explain(self.name, query, query, filters, mask, timer)
        explanation.notes.append(f"language={self.ctx.indexes.query_language(query)}")
        return RetrievalResult(hits, explanation)
