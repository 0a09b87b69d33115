"""Lexical retrieval with BM25 over stemmed chunk text."""

from __future__ import annotations

from waypost.filters.model import Filter
from waypost.retrieval.context import SearchContext, Timer, ranked_table
from waypost.types import Explanation, RetrievalResult


class BM25Retriever:
    name = "bm25"

    def __init__(self, ctx: SearchContext) -> None:
        self.ctx = ctx

    def retrieve(self, query: str, k: int = 10, filters: Filter | None = None) -> RetrievalResult:
        timer = Timer()
        mask = None
        if filters is not None:
            with timer.stage("prefilter"):
                mask = self.ctx.indexes.metadata.mask(filters)
        with timer.stage("bm25_search"):
            positions, scores = self.ctx.indexes.bm25.search(query, k, mask)
        with timer.stage("fetch"):
            hits = self.ctx.hits(positions, scores, self.name, {"bm25": ranked_table(positions, scores)})
        explanation = Explanation(
            self.name,
            query,
            query,
            str(filters) if filters else None,
            int(mask.sum()) if mask is not None else len(self.ctx.indexes),
            timer.ms,
        )
        if not self.ctx.indexes.bm25.query_tokens(query):
            explanation.notes.append("no query term occurs in the collection")
        return RetrievalResult(hits, explanation)
