"""The end-to-end ``auto`` path against routing alone, query by query, on the mixed workload's store.

For each query of a split: ``Engine.search(query, strategy="auto")`` (stage 1, router, planner, corrective loop)
scored against the outcome-table value of the pipeline the router chose (routing alone, the right collection
given). Reports, per set, the mean of both over queries whose collection stage 1 chose alone, and what the
planner and kept corrective retries changed. Run after ``waypost bench mixed`` (it reads that store's
outcome cache). Use ``--split train`` when examining the planner or the corrective threshold.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/bench_live_vs_table.py --split train \
        --profile src/waypost/route/profiles/default.json --correct-below 0.8
"""

from __future__ import annotations

import argparse
import json
import os
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from waypost.engine import Engine, EngineConfig
from waypost.evaluation.mixed import EVIDENCE1000, default_store, default_workload, with_sets
from waypost.evaluation.outcomes import DOC_DEPTH, SPAN_K, OutcomeCache, outcome_table, score
from waypost.route.config import RouterConfig
from waypost.route.model import DEFAULT_PROFILE, GainModel
from waypost.route.router import Router
from waypost.route.selectors.learned import LearnedSelector


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=default_store())
    parser.add_argument("--data", type=Path, default=None, help="the shared sets (default ../shared/data)")
    parser.add_argument("--split", choices=("train", "test"), default="train")
    parser.add_argument("--set", action="append", default=[], help="only these sets (repeat)")
    parser.add_argument("--profile", type=Path, default=DEFAULT_PROFILE)
    parser.add_argument("--correct-below", type=float, default=RouterConfig.correct_below)
    parser.add_argument("--planner", default="rules", choices=("none", "rules"))
    parser.add_argument("--list-planned", action="store_true", help="also list each planned query and its change")
    args = parser.parse_args()

    workload = default_workload(args.data)
    if args.set:
        workload = with_sets(workload, args.set)
    config = EngineConfig(router=RouterConfig(correct_below=args.correct_below, planner=args.planner))
    engine = Engine(args.store, config)
    router = Router.from_engine(engine)
    router.use_selector(LearnedSelector(GainModel.load(args.profile)))
    engine.use_router(router)
    table = outcome_table(list(OutcomeCache.under(args.store).rows.values()))
    per_set: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    stage1: dict[str, Counter[str]] = defaultdict(Counter)  # set -> the other stage-1 choices it got
    planned: list[dict[str, Any]] = []
    try:
        for q in workload.queries(args.split):
            k = SPAN_K if q.metric == EVIDENCE1000 else DOC_DEPTH * 3
            result = engine.search(q.text, k, strategy="auto", filters=q.filters)
            route: dict[str, Any] = result.explanation.route or {}
            chosen = route.get("collections", {}).get("collections", [])
            row = table.get(q.id, {})
            stats = per_set[q.set]
            stats["queries"] += 1
            if chosen != [q.collection] or route.get("label") not in row:
                stats["other_collections"] += 1  # fused or missed in stage 1: no single pipeline to compare
                stage1[q.set]["+".join(chosen)] += 1
                continue
            hits = [(h.chunk.document_id, h.chunk.start, h.chunk.end, max(1, h.chunk.token_count)) for h in result.hits]
            delta = score(q, hits) - row[route["label"]].value
            stats["compared"] += 1
            stats["live"] += score(q, hits)
            stats["routing_only"] += row[route["label"]].value
            kept = any(a.get("kept") for a in route.get("attempts", []))
            stats["kept_retries"] += kept
            stats["kept_retries_delta"] += delta if kept else 0.0
            stats["planned"] += "sub_routes" in route
            stats["planned_delta"] += delta if "sub_routes" in route and not kept else 0.0
            if "sub_routes" in route and not kept:
                plan = route.get("plan", {})
                planned.append(
                    {
                        "set": q.set,
                        "query": q.text,
                        "sub_queries": plan.get("sub_queries", []),
                        "reason": plan.get("reasoning", ""),
                        "delta": round(delta, 4),
                    }
                )
    finally:
        engine.close()
    out = {}
    for name, stats in per_set.items():
        n = max(1.0, stats["compared"])
        out[name] = {
            "live": round(stats["live"] / n, 4),
            "routing_only": round(stats["routing_only"] / n, 4),
            **{key: round(stats[key], 3) for key in ("queries", "compared", "other_collections", "planned")},
            **{key: round(stats[key], 3) for key in ("planned_delta", "kept_retries", "kept_retries_delta")},
            "stage1_other_choices": dict(stage1[name]),
        }
    report: dict[str, Any] = {"split": args.split, "correct_below": args.correct_below, "sets": out}
    if args.list_planned:
        report["planned_queries"] = planned
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
