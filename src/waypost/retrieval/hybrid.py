"""Hybrid retrieval: dense and BM25 rankings fused by RRF, weighted blending or Borda count."""

from __future__ import annotations

import numpy as np

from waypost.context import SearchContext, Timer, ranked_table
from waypost.filters.model import Filter
from waypost.index.topk import Mask, Positions, Scores, top_k
from waypost.retrieval.fusion import FusionConfig, RankedList, follow_references, fuse
from waypost.types import RetrievalResult


def hybrid_search(
    ctx: SearchContext, query: str, k: int, mask: Mask | None, config: FusionConfig, timer: Timer
) -> tuple[Positions, Scores, dict[str, dict[int, tuple[int, float]]]]:
    depth = max(k, config.depth)
    with timer.stage("embed_query"):
        ctx.query_vector(query)
    with timer.stage("dense_search"):
        dense_all = ctx.dense(query)  # exact below exact_dense_below chunks, graph candidates above
        d_pos, d_scores = dense_all.top(depth, mask)
    with timer.stage("bm25_search"):
        sparse_all = ctx.lexical_scores(query).astype(np.float32)
        s_pos, s_scores = top_k(sparse_all, depth, mask)
        keep = s_scores > 0
        s_pos, s_scores = s_pos[keep], s_scores[keep]
    with timer.stage("language"):
        _language, weight, note = ctx.dense_weight(query)
    timer.notes.append(note)
    with timer.stage("fusion"):
        positions, scores = fuse(
            RankedList(d_pos, d_scores, dense_all), RankedList(s_pos, s_scores, sparse_all), config, weight
        )
    stages = {"dense": ranked_table(d_pos, d_scores), "bm25": ranked_table(s_pos, s_scores)}
    if config.reference_weight > 0:
        with timer.stage("references"):
            positions, scores, linked = follow_references(positions, scores, ctx.reference_links, config, mask)
        if linked:
            stages["references"] = linked
    return positions[:k], scores[:k], stages


class HybridRetriever:
    name = "hybrid"

    def __init__(self, ctx: SearchContext, config: FusionConfig | None = None) -> None:
        self.ctx = ctx
        self.config = config or FusionConfig()

    def retrieve(self, query: str, k: int = 10, filters: Filter | None = None) -> RetrievalResult:
        timer = Timer()
        mask = self.ctx.prefilter(filters, timer)
        positions, scores, stages = hybrid_search(self.ctx, query, k, mask, self.config, timer)
        with timer.stage("fetch"):
            hits = self.ctx.hits(positions, scores, self.name, stages)
        explanation = self.ctx.explain(self.name, query, query, filters, mask, timer)
        cfg = self.config
        explanation.notes.append(
            f"fusion={cfg.method.value} alpha={cfg.alpha} depth={cfg.depth} references={cfg.reference_weight}"
        )
        return RetrievalResult(hits, explanation)
