"""What running a split question's sub-queries changes, on a split of the mixed workload, per pipeline.

For every question the rule planner splits: each pipeline of the outcome table runs on each sub-query;
those hits are interleaved with the question's own stored hits (the question leading each round, as the
router does, ``evaluation.outcomes.interleave_hits``) and scored against the question's own hits alone.
Reported per pipeline: all split questions, those with headroom (the question alone scores under 1, so
the parts could raise it), and the mean change, gains and losses over the latter. With ``--profile`` it
also reports the change under the pipeline that profile chooses for each question (in sample when the
profile was fitted on the same split). Run after ``waypost bench mixed`` (it reads that store's outcome
cache).

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/bench_decomposition.py --split train \
        --profile src/waypost/route/profiles/default.json
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from waypost.engine import Engine
from waypost.evaluation.mixed import default_store, default_workload, mixed_pool
from waypost.evaluation.outcomes import OutcomeCache, interleave_hits, outcome_table, retrieve_hits, score
from waypost.route.model import GainModel
from waypost.route.planner import RulePlanner
from waypost.route.selectors.learned import LearnedSelector
from waypost.route.train import router_features


def summary(changes: list[tuple[float, float]]) -> dict[str, Any]:
    """``changes``: (the question alone, the change with its parts) per question."""
    room = [delta for alone, delta in changes if alone < 1.0]
    return {
        "questions": len(changes),
        "with_headroom": len(room),
        "mean_change_with_headroom": round(sum(room) / len(room), 4) if room else None,
        "mean_change": round(sum(delta for _alone, delta in changes) / len(changes), 4) if changes else None,
        "gains": sum(d > 0 for d in room),
        "losses": sum(d < 0 for d in room),
        "summed_change": round(sum(delta for _alone, delta in changes), 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=default_store())
    parser.add_argument("--split", choices=("train", "test"), default="train")
    parser.add_argument("--profile", type=Path, default=None)
    args = parser.parse_args()
    engine = Engine(args.store)
    table = outcome_table(list(OutcomeCache.under(args.store).rows.values()))
    planner = RulePlanner()
    model = GainModel.load(args.profile) if args.profile is not None else None
    selector = LearnedSelector(model) if model is not None else None
    feature_fn, _names = router_features()
    pool = mixed_pool()
    per_pipeline: dict[str, list[tuple[float, float]]] = {}
    chosen: dict[str, list[tuple[float, float]]] = {}
    try:
        for q in default_workload().queries(args.split):
            row = table.get(q.id)
            plan = planner.plan(q.text)
            if not row or not plan.sub_queries:
                continue
            parts = [replace(q, text=text) for text in plan.sub_queries]
            runs: dict[str, tuple[float, float]] = {}
            for pipeline in pool:
                label = pipeline.label
                if label not in row:
                    continue
                own = row[label].hits
                hits = [retrieve_hits(engine, part, pipeline) for part in parts]
                alone = score(q, own)
                runs[label] = (alone, score(q, interleave_hits([own, *hits], len(own))) - alone)
                per_pipeline.setdefault(label, []).append(runs[label])
            if selector is not None and model is not None:
                choice = selector.select(
                    q.text, feature_fn(engine, q)[0], [p for p in model.pipelines if p.label in row]
                )
                if choice.pipeline.label in runs:
                    chosen.setdefault(choice.pipeline.label, []).append(runs[choice.pipeline.label])
    finally:
        engine.close()
    report: dict[str, Any] = {
        "split": args.split,
        "parts_run_with": "the question's pipeline",
        "per_pipeline": {label: summary(v) for label, v in sorted(per_pipeline.items())},
    }
    if chosen:
        report["under_the_chosen_pipeline"] = {label: summary(v) for label, v in sorted(chosen.items())}
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
