"""Lexical retrieval with BM25 over stemmed chunk text."""

from __future__ import annotations

from waypost.context import SearchContext, Timer, ranked_table
from waypost.filters.model import Filter
from waypost.types import RetrievalResult


class BM25Retriever:
    name = "bm25"

    def __init__(self, ctx: SearchContext) -> None:
        self.ctx = ctx

    def retrieve(self, query: str, k: int = 10, filters: Filter | None = None) -> RetrievalResult:
        timer = Timer()
        mask = self.ctx.prefilter(filters, timer)
        with timer.stage("bm25_search"):
            positions, scores = self.ctx.indexes.bm25.search(query, k, mask)
        with timer.stage("fetch"):
            hits = self.ctx.hits(positions, scores, self.name, {"bm25": ranked_table(positions, scores)})
        explanation = self.ctx.explain(self.name, query, query, filters, mask, timer)
        explanation.notes.append(f"language={self.ctx.indexes.query_language(query)}")
        if not self.ctx.indexes.bm25.query_tokens(query):
            explanation.notes.append("no query term occurs in the collection")
        return RetrievalResult(hits, explanation)
