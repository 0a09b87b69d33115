"""Each test query's end-to-end ``auto`` value on the mixed store, saved to compare two checkouts or two builds.

The router is fitted on the store's training split as ``waypost bench mixed`` fits it; then every test query of
the chosen sets runs through ``Engine.search(strategy="auto")``. ``--out`` saves (pipeline, value, retries) per
query and prints each set's mean; ``--compare`` lists the queries whose value differs from a saved run.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=<other checkout>/src .venv/bin/python benchmarks/live_values.py \
        --set qmsum --set scifact --out /tmp/live-old.json
    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src .venv/bin/python benchmarks/live_values.py \
        --set qmsum --set scifact --out /tmp/live-new.json --compare /tmp/live-old.json
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
from pathlib import Path

from waypost.engine import Engine
from waypost.evaluation.mixed import default_store, default_workload, mixed_pool
from waypost.evaluation.mixed_bench import route_live
from waypost.route.train import router_features, train


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=default_store())
    parser.add_argument("--set", action="append", default=[], help="only these sets (repeat)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--compare", type=Path, default=None, help="a saved run to list differing queries against")
    args = parser.parse_args()
    workload = default_workload()
    engine = Engine(args.store)
    try:
        feature_fn, names = router_features()
        trained = train(engine, workload, list(mixed_pool()), feature_fn, names, None, False)
        queries = [q for q in workload.queries("test") if not args.set or q.set in args.set]
        routed = route_live(engine, queries, trained.model, True)
    finally:
        engine.close()
    values = {q.id: [routed.choices[q.id], routed.values[q.id], routed.retries[q.id]] for q in queries}
    args.out.write_text(json.dumps(values, indent=0), encoding="utf-8")
    report: dict[str, object] = {
        s: round(sum(values[q.id][1] for q in queries if q.set == s) / sum(q.set == s for q in queries), 4)
        for s in sorted({q.set for q in queries})
    }
    if args.compare is not None:
        old = json.loads(args.compare.read_text(encoding="utf-8"))
        report["changed"] = {
            qid: {"before": old[qid], "now": v} for qid, v in values.items() if qid in old and old[qid] != v
        }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
