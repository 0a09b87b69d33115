"""Run a pipeline value on a collection: a registered strategy through ``Collection.retrieve``, or the
reciprocal-rank fusion of several pipelines (hits deduplicated by chunk)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import replace
from enum import Enum
from typing import TYPE_CHECKING

from waypost.context import SearchContext
from waypost.errors import InvalidInputError
from waypost.filters.model import Filter
from waypost.retrieval.fusion import FusionConfig
from waypost.route.base import FUSE, Pipeline, Scalar
from waypost.types import Explanation, Hit, RetrievalResult

if TYPE_CHECKING:
    from waypost.engine import Collection
    from waypost.post.passages import PassageConfig

RRF_K = 60


def run_pipeline(
    collection: Collection,
    pipeline: Pipeline,
    query: str,
    k: int = 10,
    filters: Filter | None = None,
    *,
    ctx: SearchContext | None = None,
    fusion: FusionConfig | None = None,
) -> RetrievalResult:
    """``ctx``: a search context of ``collection`` to reuse (its query vector and score caches);
    ``fusion``: the hybrid fusion settings (None: the engine's)."""
    if pipeline.strategy == FUSE:
        parts = [run_pipeline(collection, p, query, k, filters, ctx=ctx, fusion=fusion) for p in pipeline.fuse]
        return fuse_results(query, parts, k)
    return collection.retrieve(
        query,
        pipeline.strategy,
        k,
        filters=filters,
        fusion=fusion,
        params=dict(pipeline.params),
        passages=None if pipeline.passages is None else passage_config(dict(pipeline.passages)),
        rerank=pipeline.rerank,
        context=ctx,
    )


def passage_config(fields: Mapping[str, Scalar]) -> PassageConfig:
    """A ``PassageConfig`` from a pipeline's passages mapping (the policy by its name)."""
    from waypost.post.passages import PassageConfig, PassagePolicy

    known = {f.name for f in dataclasses.fields(PassageConfig)}
    unknown = set(fields) - known
    if unknown:
        names = ", ".join(sorted(known))
        raise InvalidInputError(f"passages has no field {', '.join(sorted(unknown))}; known: {names}")
    values = dict(fields)
    for f in dataclasses.fields(PassageConfig):
        if f.name in values and f.name != "policy":
            value, want = values[f.name], str(f.type)
            numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
            if (want == "int" and not isinstance(value, int)) or isinstance(value, bool) or not numeric:
                raise InvalidInputError(f"passages {f.name} must be {'an integer' if want == 'int' else 'a number'}")
    if "policy" in values:
        try:
            values["policy"] = PassagePolicy(str(values["policy"]))
        except ValueError:
            choices = ", ".join(p.value for p in PassagePolicy)
            raise InvalidInputError(f"passage policy {values['policy']!r} is not one of {choices}") from None
    config = PassageConfig(**values)  # type: ignore[arg-type]
    config.check()
    return config


def passage_fields(config: PassageConfig) -> dict[str, Scalar]:
    """The mapping a pipeline carries for ``config`` (the inverse of ``passage_config``)."""
    out: dict[str, Scalar] = {}
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        out[f.name] = value.value if isinstance(value, Enum) else value
    return out


HitKey = tuple[str, str, int, int]


def hit_key(hit: Hit) -> HitKey:
    """One span of one document of one collection: document ids are unique only within a collection."""
    return (hit.provenance.collection, hit.chunk.document_id, hit.chunk.start, hit.chunk.end)


def fuse_results(
    query: str, results: list[RetrievalResult], k: int, weights: Sequence[float] | None = None
) -> RetrievalResult:
    """Reciprocal rank fusion of whole results; a chunk found by several keeps its first hit object.
    ``weights``: one per result (stage 1 gives each collection its probability, as MoR weights its
    retrievers), so a likelier source's hits lead."""
    if weights is not None and len(weights) != len(results):
        raise InvalidInputError(f"{len(weights)} weights for {len(results)} results")
    scores: dict[HitKey, float] = {}
    first: dict[HitKey, Hit] = {}
    for i, result in enumerate(results):
        weight = 1.0 if weights is None else float(weights[i])
        for rank, hit in enumerate(result.hits, start=1):
            key = hit_key(hit)
            scores[key] = scores.get(key, 0.0) + weight / (RRF_K + rank)
            first.setdefault(key, hit)
    order = sorted(scores, key=lambda key: -scores[key])[:k]
    hits = [replace(first[key], score=scores[key]) for key in order]
    return _combined(query, results, hits, "by reciprocal rank")


def merge_by_similarity(
    query: str, results: list[RetrievalResult], similarities: Sequence[Sequence[float]], k: int
) -> RetrievalResult:
    """Several collections' results as one list, each kept in its own order: the next hit comes from the
    result whose next hit is the most similar to the query. ``similarities[i][j]``: the cosine of hit j of
    result i under one embedding model, comparable across collections where their ranks are not. A span found
    twice keeps its first place."""
    if len(similarities) != len(results) or any(
        len(sims) != len(r.hits) for sims, r in zip(similarities, results, strict=True)
    ):
        raise InvalidInputError("merge_by_similarity needs one similarity per hit")
    seen: set[HitKey] = set()
    hits: list[Hit] = []
    at = [0] * len(results)
    while len(hits) < k:
        heads = [(float(similarities[i][at[i]]), -i) for i, r in enumerate(results) if at[i] < len(r.hits)]
        if not heads:
            break
        best = -max(heads)[1]
        hit = results[best].hits[at[best]]
        at[best] += 1
        key = hit_key(hit)
        if key not in seen:
            seen.add(key)
            hits.append(replace(hit, score=1.0 / (len(hits) + 1)))  # falls with the rank, as one list's would
    return _combined(query, results, hits, "by each next hit's similarity to the query")


def interleave_results(query: str, results: list[RetrievalResult], k: int) -> RetrievalResult:
    """Round-robin over ranked results (the first result leads each round), each chunk once. For the parts
    of a decomposed question: each part's best hits reach the top, where reciprocal rank fusion would
    favour what several parts found, the generic hits, over each part's own evidence."""
    seen: set[HitKey] = set()
    hits: list[Hit] = []
    depth = max((len(r.hits) for r in results), default=0)
    for rank in range(depth):
        for result in results:
            if rank < len(result.hits) and len(hits) < k:
                hit = result.hits[rank]
                key = hit_key(hit)
                if key not in seen:
                    seen.add(key)
                    hits.append(replace(hit, score=1.0 / (len(hits) + 1)))
    return _combined(query, results, hits, "by interleaving their ranks")


def _combined(query: str, results: list[RetrievalResult], hits: list[Hit], how: str) -> RetrievalResult:
    timings: dict[str, float] = {}
    for result in results:
        for stage, ms in result.explanation.timings_ms.items():
            timings[stage] = timings.get(stage, 0.0) + ms
    explanation = Explanation(FUSE, query, query, None, None, timings)
    explanation.notes.append("fused " + ", ".join(r.explanation.strategy for r in results) + " " + how)
    return RetrievalResult(hits, explanation)
