"""What applying the rest of a query plan would change, on a split of the mixed workload: its expansions
(run as extra queries beside the question, as sub-queries are) and its mode (precision or recall: the
feature reranker's profile of that name over the chosen pipeline's hits).

For every question of the split whose plan has expansions, or a mode other than balanced, the pipeline
the profile chooses for it (in sample when the profile was fitted on the same split) and hybrid are run
with and without that part of the plan, and scored with the set's metric. Reported per part, per
pipeline and per set: questions, mean change, gains and losses. Run after ``waypost bench mixed`` (it
reads that store's outcome cache).

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/bench_plan_apply.py --split train \
        --profile src/waypost/route/profiles/default.json
"""

from __future__ import annotations

import argparse
import json
import os
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from waypost.engine import Engine
from waypost.evaluation.mixed import default_store, default_workload
from waypost.evaluation.outcomes import OutcomeCache, interleave_hits, outcome_table, retrieve_hits, score
from waypost.route.base import Pipeline
from waypost.route.model import GainModel
from waypost.route.planner import RulePlanner
from waypost.route.selectors.learned import LearnedSelector
from waypost.route.train import router_features
from waypost.store.backend import store_exists


def summary(changes: list[float]) -> dict[str, Any]:
    return {
        "questions": len(changes),
        "mean_change": round(sum(changes) / len(changes), 4) if changes else None,
        "summed_change": round(sum(changes), 4),
        "gains": sum(d > 1e-9 for d in changes),
        "losses": sum(d < -1e-9 for d in changes),
    }


def with_rerank(pipeline: Pipeline, profile: str) -> Pipeline:
    return replace(pipeline, rerank=profile) if pipeline.strategy != "fuse" else pipeline


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=default_store())
    parser.add_argument("--split", choices=("train", "test"), default="train")
    parser.add_argument("--profile", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=0, help="at most this many questions per set (0: all)")
    args = parser.parse_args()
    if not store_exists(args.store):
        raise SystemExit(f"no store at {args.store}: run `waypost bench mixed` first")
    engine = Engine(args.store)
    table = outcome_table(list(OutcomeCache.under(args.store).rows.values()))
    planner = RulePlanner()
    model = GainModel.load(args.profile)
    if model is None:
        raise SystemExit(f"no router profile at {args.profile}")
    selector = LearnedSelector(model)
    feature_fn, _names = router_features()
    hybrid = Pipeline.of("hybrid")
    # part -> "chosen" | "hybrid" -> set -> changes
    changes: dict[str, dict[str, dict[str, list[float]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    by_pipeline: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    seen: dict[str, int] = defaultdict(int)
    try:
        for q in default_workload().queries(args.split):
            row = table.get(q.id)
            if not row:
                continue
            plan = planner.plan(q.text)
            if not plan.expansions and plan.mode == "balanced":
                continue
            if args.limit and seen[q.set] >= args.limit:
                continue
            seen[q.set] += 1
            choice = selector.select(q.text, feature_fn(engine, q)[0], [p for p in model.pipelines if p.label in row])
            for who, pipeline in (("chosen", choice.pipeline), ("hybrid", hybrid)):
                if pipeline.label not in row:
                    continue
                own = row[pipeline.label].hits
                alone = score(q, own)
                if plan.expansions:
                    extra = [retrieve_hits(engine, replace(q, text=text), pipeline) for text in plan.expansions]
                    delta = score(q, interleave_hits([own, *extra], len(own))) - alone
                    changes["expansions"][who][q.set].append(delta)
                    if who == "chosen":
                        by_pipeline["expansions"][pipeline.label].append(delta)
                if plan.mode != "balanced":
                    reranked = retrieve_hits(engine, q, with_rerank(pipeline, plan.mode))
                    delta = score(q, reranked) - alone
                    changes[f"mode:{plan.mode}"][who][q.set].append(delta)
                    if who == "chosen":
                        by_pipeline[f"mode:{plan.mode}"][pipeline.label].append(delta)
    finally:
        engine.close()
    report: dict[str, Any] = {"split": args.split, "profile": str(args.profile), "parts": {}}
    for part, per_who in sorted(changes.items()):
        report["parts"][part] = {
            who: {
                "all": summary([d for v in per_set.values() for d in v]),
                "per_set": {name: summary(v) for name, v in sorted(per_set.items())},
            }
            for who, per_set in per_who.items()
        }
        report["parts"][part]["chosen_by_pipeline"] = {
            label: summary(v) for label, v in sorted(by_pipeline[part].items())
        }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
