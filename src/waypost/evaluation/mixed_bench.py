"""``waypost bench mixed``: the test split of the mixed workload under auto routing, against every fixed
pipeline, the best single fixed pipeline over the mix, the per-query oracle (ties count as correct), and
the controls (always-hybrid, a router fitted on shuffled labels, leave-one-set-out routers).

Fixed pipelines are scored from the outcome table of the test split (the right collection given). A
router's score on a query is the outcome of the pipeline it chose; a low-confidence fusion of two is
scored by fusing their stored hits as ``route.execute.fuse_results`` does. With ``live=True`` the auto
figures come from ``Collection.retrieve(strategy="auto")`` itself, end to end."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from waypost.engine import Engine
from waypost.evaluation.metrics import percentile
from waypost.evaluation.mixed import MixedQuery, Workload
from waypost.evaluation.outcomes import HitRow, Outcome, fuse_hits, outcome_table, run_outcomes, score
from waypost.progress import track
from waypost.route.base import FUSE, Features, Pipeline
from waypost.route.fit import SEED
from waypost.route.model import GainModel
from waypost.route.train import DEFAULT, FeatureFn
from waypost.types import RetrievalResult

EPS = 1e-9
SHUFFLES = 5  # routers fitted on differently shuffled labels, averaged into the control
Table = dict[str, dict[str, Outcome]]


@dataclass
class Routed:
    """One router's choices on the test queries and what they scored."""

    choices: dict[str, str] = field(default_factory=dict)  # query id -> pipeline label
    values: dict[str, float] = field(default_factory=dict)
    router_ms: list[float] = field(default_factory=list)  # features + select
    end_to_end_ms: list[float] = field(default_factory=list)
    retries: dict[str, int] = field(default_factory=dict)


@dataclass
class BenchResult:
    sets: list[str]
    metrics: dict[str, str]
    fixed: dict[str, dict[str, float]]  # set -> pipeline -> mean metric
    oracle: dict[str, float]
    auto: dict[str, float]
    controls: dict[str, dict[str, float]]  # control name -> set -> mean metric
    best_single: str  # the fixed pipeline with the best average over the sets
    strategy_accuracy: float
    oracle_gap_closed: float
    router_p95_ms: float
    auto_p95_ms: float
    collection_accuracy: float | None
    choices: list[tuple[str, str, str]] = field(default_factory=list)  # (set, chosen, oracle)
    retries: list[int] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Exactly the fields the issue lists."""
        datasets = {}
        for s in self.sets:
            best_p = max(self.fixed[s], key=lambda p: self.fixed[s][p])
            datasets[s] = {
                "metric": self.metrics[s],
                "auto": round(self.auto[s], 4),
                "best_fixed": round(self.fixed[s][best_p], 4),
                "best_fixed_pipeline": best_p,
                "oracle": round(self.oracle[s], 4),
                "fixed": {p: round(v, 4) for p, v in self.fixed[s].items()},
            }
        return {
            "collection_accuracy": None if self.collection_accuracy is None else round(self.collection_accuracy, 4),
            "strategy_accuracy": round(self.strategy_accuracy, 4),
            "oracle_gap_closed": round(self.oracle_gap_closed, 4),
            "router_p95_ms": round(self.router_p95_ms, 3),
            "auto_p95_ms": round(self.auto_p95_ms, 2),
            "datasets": datasets,
        }

    def averages(self) -> dict[str, float]:
        """Means over the sets: auto, best single fixed, oracle, and each control."""

        def mean(d: Mapping[str, float]) -> float:
            return sum(d[s] for s in self.sets) / len(self.sets)

        out = {"auto": mean(self.auto), "best_single": mean({s: self.fixed[s][self.best_single] for s in self.sets})}
        out["oracle"] = mean(self.oracle)
        out.update({name: mean(v) for name, v in self.controls.items() if all(s in v for s in self.sets)})
        return out


def mean_by_set(queries: Sequence[MixedQuery], values: Mapping[str, float]) -> dict[str, float]:
    sums: dict[str, list[float]] = {}
    for q in queries:
        if q.id in values:
            sums.setdefault(q.set, []).append(values[q.id])
    return {s: sum(v) / len(v) for s, v in sums.items()}


def oracle_values(table: Table) -> dict[str, float]:
    return {qid: max(o.value for o in row.values()) for qid, row in table.items()}


def best_single(fixed: Mapping[str, Mapping[str, float]], sets: Sequence[str]) -> str:
    """The fixed pipeline with the best mean over the sets (each set counts once)."""
    pipelines = set.intersection(*(set(fixed[s]) for s in sets))
    return max(sorted(pipelines), key=lambda p: sum(fixed[s][p] for s in sets) / len(sets))


def gap_closed(auto: float, best: float, oracle: float) -> float:
    """The share of the gap from the best single fixed pipeline to the oracle that auto closes."""
    return (auto - best) / (oracle - best) if oracle - best > EPS else 0.0


def value_of(query: MixedQuery, row: Mapping[str, Outcome], pipeline: Pipeline) -> float:
    """A pipeline's metric on a query from the outcome table; a fusion by fusing stored hits."""
    if pipeline.strategy == FUSE:
        lists = [row[p.label].hits for p in pipeline.fuse if p.label in row]
        return score(query, fuse_hits(lists, max((len(h) for h in lists), default=0)))
    return row[pipeline.label].value if pipeline.label in row else row[DEFAULT.label].value


def route_with(
    model: GainModel,
    queries: Sequence[MixedQuery],
    table: Table,
    features: Mapping[str, Features],
    feature_ms: Mapping[str, float] | None = None,
) -> Routed:
    """A router's choices scored from the table; its time is ``feature_ms`` (the feature pass beyond the
    hybrid first stage it reuses) plus ``choose``; end to end adds the chosen pipeline's own latency."""
    out = Routed()
    for q in queries:
        row = table[q.id]
        candidates = [p for p in model.pipelines if p.label in row]
        t0 = time.perf_counter()
        choice = model.choose(features[q.id], candidates)
        select_ms = (time.perf_counter() - t0) * 1000.0
        label = choice.pipeline.label
        out.choices[q.id] = label
        out.values[q.id] = value_of(q, row, choice.pipeline)
        ms = select_ms + (feature_ms or {}).get(q.id, 0.0)
        out.router_ms.append(ms)
        parts = choice.pipeline.fuse or (choice.pipeline,)
        out.end_to_end_ms.append(ms + sum(row[p.label].latency_ms for p in parts if p.label in row))
    return out


def foreign_id(collection: str, expected: str, document_id: str) -> str:
    """A document id as the metric reads it: another collection's document never matches the set's gold
    ids, even where the ids coincide (fused collections)."""
    return document_id if collection == expected else f"{collection}\x00{document_id}"


def scored_rows(result: RetrievalResult, collection: str) -> list[HitRow]:
    """An end-to-end result's hits as the metric reads them, for a query of ``collection``: another
    collection's documents (fused in by stage 1) never count as the set's."""
    return [
        (foreign_id(h.provenance.collection, collection, h.chunk.document_id), h.chunk.start, h.chunk.end,
         max(1, h.chunk.token_count))
        for h in result.hits
    ]  # fmt: skip


def route_live(
    engine: Engine, queries: Sequence[MixedQuery], model: GainModel | None = None, show_progress: bool = False
) -> Routed:
    """``Engine.search(query, strategy="auto")`` on each query, end to end: the collection is chosen, not
    given; then the router (with ``model`` as its learned selector), the planner and the corrective loop."""
    from waypost.evaluation.mixed import EVIDENCE1000
    from waypost.evaluation.outcomes import DOC_DEPTH, SPAN_K
    from waypost.route.router import Router
    from waypost.route.selectors.learned import LearnedSelector

    if model is not None:
        router = Router.from_engine(engine)
        router.use_selector(LearnedSelector(model))
        engine.use_router(router)
    out = Routed()
    for q in track(list(queries), show_progress, "auto queries"):
        k = SPAN_K if q.metric == EVIDENCE1000 else DOC_DEPTH * 3
        t0 = time.perf_counter()
        result = engine.search(q.text, k, strategy="auto", filters=q.filters)
        out.end_to_end_ms.append((time.perf_counter() - t0) * 1000.0)
        hits = scored_rows(result, q.collection)
        route: Mapping[str, Any] = getattr(result.explanation, "route", None) or {}
        pipeline = route.get("pipeline")
        out.choices[q.id] = Pipeline.from_dict(pipeline).label if pipeline else result.explanation.strategy
        out.values[q.id] = score(q, hits)
        out.retries[q.id] = int(route.get("retries", 0) or 0)
        timings = route.get("timings_ms") or {}
        if timings:
            out.router_ms.append(float(sum(v for k2, v in timings.items() if k2 in ("features", "select"))))
    return out


def collection_accuracy(engine: Engine, queries: Sequence[MixedQuery], names: Sequence[str]) -> float | None:
    """The share of queries whose collection selector (``Engine.collection_selector()``, where it exists)
    puts the query's own collection first among ``names``; ``None`` without a selector."""
    make: Callable[[], Any] | None = getattr(engine, "collection_selector", None)
    if make is None or not queries:
        return None
    selector = make()
    right = 0
    for q in queries:
        choice = selector.select(q.text, list(names), q.filters)
        right += bool(choice.collections) and choice.collections[0] == q.collection
    return right / len(queries)


def bench(
    engine: Engine,
    workload: Workload,
    model: GainModel,
    feature_fn: FeatureFn,
    controls: Mapping[str, GainModel | Sequence[GainModel]] | None = None,
    held_out: Mapping[str, GainModel] | None = None,
    limit: int | None = None,
    live: bool = False,
    show_progress: bool = False,
) -> BenchResult:
    """``controls``: more routers scored on every set (e.g. "shuffled labels"; several routers under one
    name are averaged set by set); ``held_out``: per set, a
    router trained without it (scored on that set only)."""
    from waypost.route.train import compute_features

    t_start = time.perf_counter()
    queries = workload.queries("test", limit)
    outcomes = run_outcomes(engine, workload, model.pipelines, "test", limit, show_progress)
    table = outcome_table(outcomes)
    queries = [q for q in queries if q.id in table]
    t_outcomes = time.perf_counter() - t_start
    features, times = compute_features(engine, queries, feature_fn, show_progress)
    routed = route_with(model, queries, table, features, times.overhead_ms)
    routing_only: dict[str, float] = {}
    if live:
        live_routed = route_live(engine, queries, model, show_progress)
        live_routed.router_ms = live_routed.router_ms or routed.router_ms
        routing_only = mean_by_set(queries, routed.values)  # the same model's choices, scored from the table
        routed = live_routed
    sets = [s.name for s in workload.sets if any(q.set == s.name for q in queries)]
    fixed: dict[str, dict[str, float]] = {s: {} for s in sets}
    for p in model.pipelines:
        for s, v in mean_by_set(
            queries, {qid: row[p.label].value for qid, row in table.items() if p.label in row}
        ).items():
            fixed[s][p.label] = v
    oracle = oracle_values(table)
    control_scores: dict[str, dict[str, float]] = {"always-hybrid": {s: fixed[s][DEFAULT.label] for s in sets}}
    if live:
        control_scores["auto, routing only (no planner or corrective loop)"] = routing_only
    for name, others in (controls or {}).items():
        runs = [
            mean_by_set(queries, route_with(other, queries, table, features).values)
            for other in ([others] if isinstance(others, GainModel) else others)
        ]
        control_scores[name] = {s: float(np.mean([run[s] for run in runs])) for s in runs[0]}
    if held_out:
        loso: dict[str, float] = {}
        for s, other in held_out.items():
            mine = [q for q in queries if q.set == s]
            loso.update(mean_by_set(mine, route_with(other, mine, table, features).values))
        control_scores["leave-one-set-out"] = loso
    correct = [routed.values[q.id] >= oracle[q.id] - EPS for q in queries]
    oracle_labels = {
        q.id: min(
            (lbl for lbl, o in table[q.id].items() if o.value >= oracle[q.id] - EPS),
            key=lambda lbl: (lbl != routed.choices[q.id], lbl),
        )
        for q in queries
    }
    auto = mean_by_set(queries, routed.values)
    oracle_by_set = mean_by_set(queries, oracle)
    single = best_single(fixed, sets)
    result = BenchResult(
        sets,
        {s: workload.spec(s).metric for s in sets},
        fixed,
        oracle_by_set,
        auto,
        control_scores,
        single,
        sum(correct) / len(correct) if correct else 0.0,
        0.0,
        percentile(routed.router_ms, 0.95),
        percentile(routed.end_to_end_ms, 0.95),
        collection_accuracy(engine, queries, [s.name for s in workload.sets]),
        [(q.set, routed.choices[q.id], oracle_labels[q.id]) for q in queries],
        [routed.retries.get(q.id, 0) for q in queries],
    )
    avg = result.averages()
    result.oracle_gap_closed = gap_closed(avg["auto"], avg["best_single"], avg["oracle"])
    result.info = {
        "queries": len(queries),
        "auto_mode": "live" if live else "table",
        "outcomes_s": round(t_outcomes, 1),
        "feature_pass_p95_ms": round(percentile(list(times.total_ms.values()), 0.95), 2),
        "total_s": round(time.perf_counter() - t_start, 1),
        "averages": {k: round(v, 4) for k, v in avg.items()},
        "best_single": single,
        "controls": {n: {s: round(v, 4) for s, v in c.items()} for n, c in control_scores.items()},
        "profile": model.info,
    }
    if live:
        result.info["corrective"] = retry_summary(queries, routed, routing_only)
    return result


def retry_summary(queries: Sequence[MixedQuery], routed: Routed, routing_only: Mapping[str, float]) -> dict[str, Any]:
    """How often the corrective loop retried, per set, and what auto gained over the same router's choices
    without the planner and the corrective loop (scored from the outcome table)."""
    by_set: dict[str, Any] = {}
    auto = mean_by_set(queries, routed.values)
    for s in dict.fromkeys(q.set for q in queries):
        mine = [routed.retries.get(q.id, 0) for q in queries if q.set == s]
        by_set[s] = {
            "retried_share": round(sum(r > 0 for r in mine) / len(mine), 4),
            "retries": sum(mine),
            "gain_over_routing_only": round(auto[s] - routing_only.get(s, auto[s]), 4),
        }
    every = [routed.retries.get(q.id, 0) for q in queries]
    return {
        "retried_share": round(sum(r > 0 for r in every) / max(1, len(every)), 4),
        "retries": sum(every),
        "by_set": by_set,
    }


def run_bench_mixed(
    store: str | Path,
    workload: Workload,
    limit: int | None = None,
    train_limit: int | None = None,
    profile: str | Path | None = None,
    pipelines: Sequence[Pipeline] | None = None,
    live: bool = False,
    show_progress: bool = False,
    prepare_store: bool = True,
    save_profile: str | Path | None = None,
) -> BenchResult:
    """The whole benchmark on ``store``: prepare what is missing, train the router and its controls on
    the training split (outcomes cached), score everything on the test split. ``profile``: score this
    trained router instead of the one fitted here (the controls are still fitted here). ``live``: auto
    through ``Collection.retrieve(strategy="auto")`` (the router merged), else the fitted model chooses
    and the outcome table scores its choice.
    ``save_profile``: where to write the router fitted here. ``prepare_store=False`` reads the store as
    it is (a pipeline whose structure is missing is left out)."""
    from waypost.evaluation.mixed import mixed_pool, prepare
    from waypost.route.train import leave_one_out, router_features, shuffled_control, train

    pool = list(pipelines or mixed_pool())
    if prepare_store:
        prepare(store, workload, pipelines=pool, show_progress=show_progress)
    feature_fn, names = router_features()
    engine = Engine(store)
    try:
        trained = train(engine, workload, pool, feature_fn, names, train_limit, show_progress)
        model = GainModel.load(profile) if profile is not None else trained.model
        if save_profile is not None:
            trained.model.to_json(save_profile)
        shuffles = [shuffled_control(trained, SEED + i) for i in range(SHUFFLES)]  # one shuffle is a lottery
        controls: dict[str, GainModel | Sequence[GainModel]] = {"shuffled-labels": shuffles}
        held = {s.name: leave_one_out(trained, s.name) for s in workload.sets if len(workload.sets) > 1}
        result = bench(engine, workload, model, feature_fn, controls, held, limit, live, show_progress)
        result.info["train_seconds"] = trained.seconds
        return result
    finally:
        engine.close()
