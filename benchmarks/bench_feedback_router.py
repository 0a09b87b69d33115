"""What a router learned from feedback is worth: scifact's training claims recorded as feedback (each
relevant document's first chunk marked used, as a user who found it would), ``waypost router train
--feedback`` on that, and the learned router's choices scored on scifact's test claims from the mixed
benchmark's outcome table, beside hybrid, the shipped profile and the per-claim oracle.

It works on a copy of the mixed store (``--copy``, made here; the original is never written), so run
``waypost bench mixed`` first. The test claims are only scored, never used to fit.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/bench_feedback_router.py --copy /tmp/fb-store
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from waypost.engine import Engine
from waypost.evaluation.beir import load_beir
from waypost.evaluation.mixed import default_store, default_workload, mixed_pool, with_sets
from waypost.evaluation.mixed_bench import route_with
from waypost.evaluation.outcomes import OutcomeCache, outcome_table
from waypost.route.model import GainModel
from waypost.route.train import DEFAULT, compute_features, router_features, train_on_feedback
from waypost.store.backend import store_exists

SET = "scifact"


def record_feedback(store: Path, data: Path, limit: int | None) -> int:
    """Each training claim's relevant documents marked used (their first chunk), as feedback."""
    train = load_beir(data / SET, "train")
    count = 0
    with Engine(store) as engine:
        coll = engine.collection(SET)
        for query in train.queries[:limit]:
            for doc, grade in train.qrels.get(query.id, {}).items():
                if grade > 0 and engine.store.get_document(SET, doc) is not None:
                    coll.feedback(query.text, f"{doc}#0", "used")
                    count += 1
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=default_store(), help="the mixed store (read only)")
    parser.add_argument("--copy", type=Path, required=True, help="where the store is copied and trained")
    parser.add_argument("--data", type=Path, default=Path.cwd().parent / "shared" / "data")
    parser.add_argument("--limit", type=int, default=None, help="at most this many training claims")
    parser.add_argument("--profile", type=Path, default=Path("src/waypost/route/profiles/default.json"))
    args = parser.parse_args()
    if not store_exists(args.store):
        raise SystemExit(f"no store at {args.store}: run `waypost bench mixed` first")
    if args.copy.exists():
        raise SystemExit(f"{args.copy} exists: give a new path (the copy is written to)")
    t0 = time.perf_counter()
    shutil.copytree(args.store, args.copy)
    shutil.rmtree(args.copy / "outcomes", ignore_errors=True)  # a copy of the benchmark's cache: not needed
    recorded = record_feedback(args.copy, args.data, args.limit)
    out = args.copy.parent / f"{args.copy.name}-router.json"
    labels = [p.label for p in mixed_pool()]
    summary = train_on_feedback(args.copy, out, [json.dumps(p.to_dict()) for p in mixed_pool()])
    learned = GainModel.load(out)
    shipped = GainModel.load(args.profile)
    assert learned is not None and shipped is not None
    test = with_sets(default_workload(args.data), [SET]).queries("test")
    table = outcome_table(list(OutcomeCache.under(args.store).rows.values()))  # the original's test outcomes
    test = [q for q in test if q.id in table and all(label in table[q.id] for label in labels)]
    with Engine(args.copy) as engine:
        feature_fn, _names = router_features()
        features, _ms = compute_features(engine, test, feature_fn)
    report: dict[str, Any] = {
        "training_claims_with_feedback": summary.get("queries"),
        "feedback_recorded": recorded,
        "pipelines": summary.get("pipelines"),
        "oof_score": summary.get("oof_score"),
        "oof_default_score": summary.get("oof_default_score"),
        "test_claims": len(test),
    }
    for name, model in (("learned_from_feedback", learned), ("shipped_profile", shipped)):
        routed = route_with(model, test, table, features)
        report[name] = round(sum(routed.values.values()) / len(test), 4)
        choices: dict[str, int] = {}
        for label in routed.choices.values():
            choices[label] = choices.get(label, 0) + 1
        report[f"{name}_choices"] = choices
    report["hybrid"] = round(sum(table[q.id][DEFAULT.label].value for q in test) / len(test), 4)
    report["oracle"] = round(sum(max(o.value for o in table[q.id].values()) for q in test) / len(test), 4)
    report["seconds"] = round(time.perf_counter() - t0, 1)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
