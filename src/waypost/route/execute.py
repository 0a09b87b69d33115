"""Run a pipeline value on a collection: a registered strategy through ``Collection.retrieve``, or the
reciprocal-rank fusion of several pipelines (hits deduplicated by chunk)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from waypost.filters.model import Filter
from waypost.route.base import FUSE, Pipeline
from waypost.types import Explanation, Hit, RetrievalResult

if TYPE_CHECKING:
    from waypost.engine import Collection

RRF_K = 60


def run_pipeline(
    collection: Collection, pipeline: Pipeline, query: str, k: int = 10, filters: Filter | None = None
) -> RetrievalResult:
    if pipeline.strategy == FUSE:
        return fuse_results(query, [run_pipeline(collection, p, query, k, filters) for p in pipeline.fuse], k)
    from waypost.post.passages import PassageConfig

    passages = None if pipeline.passages is None else PassageConfig(**dict(pipeline.passages))  # type: ignore[arg-type]
    return collection.retrieve(
        query,
        pipeline.strategy,
        k,
        filters=filters,
        params=dict(pipeline.params),
        passages=passages,
        rerank=pipeline.rerank,
    )


def fuse_results(query: str, results: list[RetrievalResult], k: int) -> RetrievalResult:
    """Reciprocal rank fusion of whole results; a chunk found by several keeps its first hit object."""
    scores: dict[tuple[str, int, int], float] = {}
    first: dict[tuple[str, int, int], Hit] = {}
    for result in results:
        for rank, hit in enumerate(result.hits, start=1):
            key = (hit.chunk.document_id, hit.chunk.start, hit.chunk.end)
            scores[key] = scores.get(key, 0.0) + 1.0 / (RRF_K + rank)
            first.setdefault(key, hit)
    order = sorted(scores, key=lambda key: -scores[key])[:k]
    hits = [replace(first[key], score=scores[key]) for key in order]
    timings: dict[str, float] = {}
    for result in results:
        for stage, ms in result.explanation.timings_ms.items():
            timings[stage] = timings.get(stage, 0.0) + ms
    explanation = Explanation(FUSE, query, query, None, None, timings)
    explanation.notes.append("fused " + ", ".join(r.explanation.strategy for r in results) + " by reciprocal rank")
    return RetrievalResult(hits, explanation)
