"""What selectors share: reading a pipeline's capabilities from the registry, ordering by cost, and
describing a pipeline in one line."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from waypost.retrieval.registry import DEFAULT_STRATEGY, DESCRIPTIONS, STRATEGIES
from waypost.route.base import FUSE, Pipeline
from waypost.route.candidates import pipeline_cost


def needs_tree(pipeline: Pipeline) -> bool:
    return any(STRATEGIES[s].needs_tree for s in pipeline.strategies() if s in STRATEGIES)


def needs_graph(pipeline: Pipeline) -> bool:
    return any(STRATEGIES[s].needs_graph for s in pipeline.strategies() if s in STRATEGIES)


def extracts_filters(pipeline: Pipeline) -> bool:
    spec = STRATEGIES.get(pipeline.strategy)
    return spec is not None and spec.extracts_filters


def assembles_passages(pipeline: Pipeline) -> bool:
    return pipeline.strategy != FUSE and pipeline.passages is not None


def is_default(pipeline: Pipeline) -> bool:
    """The plain default strategy: no parameters, passages, reranker or fusion."""
    return pipeline == Pipeline.of(DEFAULT_STRATEGY)


def cheapest(candidates: Sequence[Pipeline], wanted: Callable[[Pipeline], bool]) -> Pipeline | None:
    """The cheapest candidate ``wanted`` accepts (the first in pool order among equals), or None."""
    found = [p for p in candidates if wanted(p)]
    return min(found, key=pipeline_cost) if found else None


def fallback(candidates: Sequence[Pipeline]) -> Pipeline:
    """The default pipeline when it is a candidate, else the cheapest candidate."""
    default = Pipeline.of(DEFAULT_STRATEGY)
    if default in candidates or not candidates:
        return default
    return min(candidates, key=pipeline_cost)


def by_preference(chosen: Pipeline, candidates: Sequence[Pipeline]) -> list[Pipeline]:
    """The chosen pipeline, then the default, then the rest by cost: the order a corrective loop retries in."""
    rest = sorted((p for p in candidates if p != chosen), key=lambda p: (not is_default(p), pipeline_cost(p)))
    return [chosen, *rest]


def describe(pipeline: Pipeline) -> str:
    """One line: what the pipeline does, from the registry's description or its declared needs."""
    if pipeline.strategy == FUSE:
        return "reciprocal-rank fusion of " + ", ".join(p.label for p in pipeline.fuse)
    text = DESCRIPTIONS.get(pipeline.strategy, "")
    spec = STRATEGIES.get(pipeline.strategy)
    if not text:
        needs = [n for n, flag in (("tree", spec and spec.needs_tree), ("graph", spec and spec.needs_graph)) if flag]
        text = "a retrieval strategy" + (f" over the collection's {' and '.join(needs)}" if needs else "")
    if pipeline.passages is not None:
        text += "; hits grown into passages of the surrounding text (long documents)"
    if pipeline.rerank:
        text += f"; reranked by {pipeline.rerank}"
    return f"{text} (cost {pipeline_cost(pipeline):.1f}x)"
