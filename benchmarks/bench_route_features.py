"""The router's feature pass, part by part, on the mixed workload's store: p50/p95 in ms of each part beyond
the hybrid first stage (query words, filter extraction, index, filter, first-stage and collection features),
over the first N test queries, each in its own collection; extraction also per collection.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/bench_route_features.py --limit 600

Measured 2026-11-27 night, machine to itself, alternating runs: filter extraction p95 1.6-1.7 ms after the
extractor's speed-up (51448de) against 2.6-2.8 ms before it (5d5fb12); the whole feature pass p95 3.1-3.3 ms
against 3.9-4.4 ms. Run each checkout with ``PYTHONPATH=<checkout>/src``. The first query of each collection
builds its extractor and shows as the maximum.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

from waypost.engine import Engine, EngineConfig
from waypost.evaluation.mixed import default_store, default_workload
from waypost.retrieval.hybrid import HybridRetriever
from waypost.route import features as F

PARTS = ("query", "extract", "index", "filter", "first_stage", "collection")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=600)
    args = ap.parse_args()
    engine = Engine(default_store(), EngineConfig())
    times: dict[str, list[float]] = {p: [] for p in (*PARTS, "total")}
    extract_by: dict[str, list[float]] = {}
    for q in default_workload(None).queries("test")[: args.limit]:
        ctx = engine.collection(q.collection).context()
        first = HybridRetriever(ctx, engine.config.fusion).retrieve(q.text, 10, q.filters)
        t = [time.perf_counter()]
        F.query_features(q.text)
        t.append(time.perf_counter())
        extracted = F.extracted_filter(q.text, ctx.indexes)
        t.append(time.perf_counter())
        F.index_features(q.text, ctx)
        t.append(time.perf_counter())
        F.filter_features(extracted, ctx.indexes)
        t.append(time.perf_counter())
        F.first_stage_features(q.text, ctx, first, q.filters)
        t.append(time.perf_counter())
        F.collection_features(ctx.indexes)
        t.append(time.perf_counter())
        for i, part in enumerate(PARTS):
            times[part].append((t[i + 1] - t[i]) * 1000)
        times["total"].append((t[-1] - t[0]) * 1000)
        extract_by.setdefault(q.collection, []).append(times["extract"][-1])
    engine.close()
    for part, values in times.items():
        print(f"{part:12} p50 {np.percentile(values, 50):6.2f}  p95 {np.percentile(values, 95):6.2f} ms")
    for name, values in sorted(extract_by.items()):
        p50, p95 = np.percentile(values, 50), np.percentile(values, 95)
        print(f"extract {name:18} {len(values):4} queries  p50 {p50:6.2f}  p95 {p95:6.2f} ms")


if __name__ == "__main__":
    main()
