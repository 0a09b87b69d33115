"""``waypost router train``: run every pipeline of a pool on a workload's training split, record each
query's outcome, compute its features, fit a ``GainModel`` and write it as a JSON profile. Also the
controls the benchmark reports: a router fitted on shuffled labels, and leave-one-set-out routers."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from waypost.engine import Engine
from waypost.errors import InvalidInputError, WaypostError
from waypost.evaluation.mixed import MixedQuery, Workload
from waypost.evaluation.outcomes import Outcome, OutcomeCache, fuse_hits, outcome_table, run_outcomes, score
from waypost.progress import track
from waypost.retrieval.registry import strategy as strategy_spec
from waypost.route.base import Features, Pipeline
from waypost.route.candidates import default_pool, pipeline_cost
from waypost.route.fit import SEED, TrainingRows, fit_gain_model, shuffled
from waypost.route.model import GainModel

log = logging.getLogger("waypost.route.train")

DEFAULT = Pipeline.of("hybrid")


def parse_pool(specs: Sequence[str]) -> list[Pipeline]:
    """Pipelines from the CLI: a strategy name or a pipeline JSON value each; hybrid is always in."""
    pool = [Pipeline.from_json(s) if s.lstrip().startswith("{") else Pipeline.of(s) for s in specs]
    for pipeline in pool:
        for name in pipeline.strategies():
            strategy_spec(name)  # an unknown name (or "auto") is refused with the known ones listed
    return pool if DEFAULT in pool else [DEFAULT, *pool]


# -- features -------------------------------------------------------------------------------------
FeatureFn = Callable[[Engine, MixedQuery], tuple[Features, float]]  # features, ms of their hybrid first stage
# Not fitted on: whether the collection has a graph (a property of the collection, not the query), and the
# extracted filter's exclusions, which the heuristic rules act on and no training set of the router holds
STATE_FEATURES = ("graph_loaded", "filter_exclusions")


def router_features() -> tuple[FeatureFn, list[str]]:
    """The router's feature pass (``route.features.extract_features``) and its feature names."""
    try:
        from waypost.route.features import FEATURE_NAMES, extract_features
    except ImportError as exc:  # the router's module is not there
        raise WaypostError(f"the router's feature pass is missing ({exc}); reinstall waypost") from None

    def compute(engine: Engine, query: MixedQuery) -> tuple[Features, float]:
        col = engine.collection(query.collection)
        t0 = time.perf_counter()
        done = extract_features(query.text, col.context(), query.filters)
        return dict(done.features), min(
            (time.perf_counter() - t0) * 1000.0, sum(done.first_stage.explanation.timings_ms.values())
        )

    return compute, [n for n in FEATURE_NAMES if n not in STATE_FEATURES]


@dataclass
class FeatureTimes:
    total_ms: dict[str, float]  # the whole feature pass, hybrid first stage included
    overhead_ms: dict[str, float]  # beyond the hybrid first stage (which the router reuses)


def compute_features(
    engine: Engine,
    queries: Sequence[MixedQuery],
    feature_fn: FeatureFn,
    show_progress: bool = False,
) -> tuple[dict[str, Features], FeatureTimes]:
    """Features per query id, and the time each took."""
    out: dict[str, Features] = {}
    times = FeatureTimes({}, {})
    for q in track(list(queries), show_progress, "features"):
        t0 = time.perf_counter()
        out[q.id], first_ms = feature_fn(engine, q)
        total = (time.perf_counter() - t0) * 1000.0
        times.total_ms[q.id] = total
        times.overhead_ms[q.id] = max(0.0, total - first_ms)
    return out, times


# -- training rows --------------------------------------------------------------------------------
def training_rows(
    queries: Sequence[MixedQuery],
    outcomes: Sequence[Outcome],
    features: dict[str, Features],
    feature_names: list[str],
    pipelines: Sequence[Pipeline],
) -> TrainingRows:
    table = outcome_table(outcomes)
    kept = [q for q in queries if q.id in table and DEFAULT.label in table[q.id] and q.id in features]
    x = np.asarray([[features[q.id].get(n, 0.0) for n in feature_names] for q in kept], dtype=np.float64)
    y = np.asarray(
        [[table[q.id][p.label].value if p.label in table[q.id] else np.nan for p in pipelines] for q in kept],
        dtype=np.float64,
    )
    x = x.reshape(len(kept), len(feature_names))
    return TrainingRows(feature_names, x, list(pipelines), y, [q.set for q in kept], [q.id for q in kept])


def fuse_scorer(queries: Sequence[MixedQuery], outcomes: Sequence[Outcome]) -> Callable[[MixedQuery, str, str], float]:
    """The metric of the RRF of two pipelines' stored hits on a query (offline, no retrieval)."""
    table = outcome_table(outcomes)

    def value(query: MixedQuery, a: str, b: str) -> float:
        row = table[query.id]
        if a not in row or b not in row:
            return row[a].value if a in row else row[DEFAULT.label].value
        k = max(len(row[a].hits), len(row[b].hits))
        return score(query, fuse_hits([row[a].hits, row[b].hits], k))

    return value


@dataclass
class Trained:
    model: GainModel
    rows: TrainingRows
    queries: list[MixedQuery]
    outcomes: list[Outcome]
    features: dict[str, Features]
    seconds: dict[str, float]


def fit_rows(
    rows: TrainingRows,
    queries: Sequence[MixedQuery],
    outcomes: Sequence[Outcome],
    labels_from: Sequence[int] | None = None,
) -> GainModel:
    """Fit on ``rows``; ``labels_from[i]`` is the row whose outcomes row ``i`` carries (shuffled control)."""
    by_id = {q.id: q for q in queries}
    fuse = fuse_scorer(queries, outcomes)

    def fuse_value(i: int, a: str, b: str) -> float:
        source = labels_from[i] if labels_from is not None else i
        return fuse(by_id[rows.ids[source]], a, b)

    costs = {p.label: pipeline_cost(p) for p in rows.pipelines}
    from waypost.route.features import COLLECTION_FEATURES

    return fit_gain_model(rows, DEFAULT, costs, fuse_value if rows.ids else None, prior_features=COLLECTION_FEATURES)


def train(
    engine: Engine,
    workload: Workload,
    pipelines: Sequence[Pipeline] | None = None,
    feature_fn: FeatureFn | None = None,
    feature_names: list[str] | None = None,
    limit: int | None = None,
    show_progress: bool = False,
) -> Trained:
    """Outcomes and features of the training split, and the model fitted on them."""
    pipelines = list(pipelines or default_pool())
    if feature_fn is None or feature_names is None:
        feature_fn, feature_names = router_features()
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    outcomes = run_outcomes(engine, workload, pipelines, "train", limit, show_progress)
    seconds["outcomes"] = round(time.perf_counter() - t0, 1)
    queries = workload.queries("train", limit)
    t0 = time.perf_counter()
    features, _ = compute_features(engine, queries, feature_fn, show_progress)
    seconds["features"] = round(time.perf_counter() - t0, 1)
    rows = training_rows(queries, outcomes, features, feature_names, pipelines)
    t0 = time.perf_counter()
    model = fit_rows(rows, queries, outcomes)
    seconds["fit"] = round(time.perf_counter() - t0, 1)
    model.info["sets_trained"] = [s.name for s in workload.sets]
    model.info["seconds"] = seconds
    return Trained(model, rows, queries, outcomes, features, seconds)


def shuffled_control(trained: Trained, seed: int = SEED) -> GainModel:
    """The same fit with outcome rows permuted across training queries (``seed`` picks the permutation)."""
    rows, perm = shuffled(trained.rows, seed)
    model = fit_rows(rows, trained.queries, trained.outcomes, perm)
    model.info["control"] = "shuffled labels"
    return model


def leave_one_out(trained: Trained, held_out: str) -> GainModel:
    """A router fitted without the training queries of ``held_out``."""
    keep = [i for i, g in enumerate(trained.rows.groups) if g != held_out]
    if not keep:
        raise WaypostError(f"no training query is left once {held_out} is held out")
    r = trained.rows
    rows = TrainingRows(
        r.feature_names,
        r.features[keep],
        r.pipelines,
        r.values[keep],
        [r.groups[i] for i in keep],
        [r.ids[i] for i in keep],
    )
    model = fit_rows(rows, trained.queries, trained.outcomes)
    model.info["held_out"] = held_out
    return model


def write_profile(model: GainModel, path: str | Path) -> dict[str, Any]:
    model.to_json(path)
    return {"profile": str(path), **model.info, "threshold": model.threshold, "low_confidence": model.low_confidence}


def summary_json(model: GainModel) -> str:
    return json.dumps({"threshold": model.threshold, "low_confidence": model.low_confidence, **model.info}, indent=1)


def default_store() -> Path:
    return Path.home() / ".cache" / "waypost" / "router" / "store"


def train_command(
    datasets: Sequence[str | Path],
    store: str | Path | None = None,
    out: str | Path | None = None,
    pipelines: Sequence[str] = (),
    scope: str | None = None,
    limit: int | None = None,
    show_progress: bool = False,
) -> dict[str, Any]:
    """``waypost router train DATASET...``: each dataset becomes a collection of ``store`` (ingested and
    given the tree and graph the pool needs where missing); the fitted profile is written to ``out``."""
    from waypost.evaluation.mixed import prepare, workload_from_dirs

    workload = workload_from_dirs(list(datasets), scope=scope)
    pool = parse_pool(pipelines) if pipelines else default_pool()
    store_path = Path(store) if store is not None else default_store()
    t0 = time.perf_counter()
    prepare(store_path, workload, pipelines=pool, show_progress=show_progress)
    engine = Engine(store_path)
    try:
        trained = train(engine, workload, pool, limit=limit, show_progress=show_progress)
    finally:
        engine.close()
    path = Path(out) if out is not None else store_path.parent / "profile.json"
    summary = write_profile(trained.model, path)
    summary["seconds_total"] = round(time.perf_counter() - t0, 1)
    return summary


def train_on_feedback(
    store: str | Path,
    out: str | Path,
    pipelines: Sequence[str] = (),
    limit: int | None = None,
    show_progress: bool = False,
) -> dict[str, Any]:
    """``waypost router train --feedback``: the router fitted on the queries users gave feedback on in
    ``store``'s own collections (``evaluation.feedback``), over the pool's pipelines runnable there (a tree
    or graph that is missing is not built; those pipelines are left out). Outcomes are cached in the store."""
    from waypost.evaluation.feedback import feedback_workload
    from waypost.evaluation.mixed import runnable
    from waypost.store.backend import store_exists

    if not store_exists(store):
        raise InvalidInputError(f"no waypost store at {store}")
    t0 = time.perf_counter()
    engine = Engine(store)
    try:
        workload = feedback_workload(engine)
        pool = parse_pool(pipelines) if pipelines else default_pool()
        usable = [p for p in pool if any(runnable(engine, s.name, p) for s in workload.sets)]
        if DEFAULT not in usable:
            raise InvalidInputError(f"the pool must hold {DEFAULT.label}: gains are measured against it")
        trained = train(engine, workload, usable, limit=limit, show_progress=show_progress)
        generations = {s.name: engine.store.generation(s.name) for s in workload.sets}
        pruned = OutcomeCache.under(engine.path).prune(generations)  # rows of earlier data: never read again
    finally:
        engine.close()
    trained.model.info["trained_on"] = "feedback"
    trained.model.info["stale_outcomes_pruned"] = pruned
    summary = write_profile(trained.model, out)
    summary["pipelines"] = [p.label for p in usable]
    summary["seconds_total"] = round(time.perf_counter() - t0, 1)
    return summary
