"""Routing overhead: what ``strategy="auto"`` adds to a query, beside a plain hybrid query in the same run.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src .venv/bin/python benchmarks/bench_route.py [--data ../shared/data]
        [--dataset scifact] [--queries 300] [--selector heuristic] [--json]

Per query, interleaved so machine noise hits all alike: (1) ``retrieve(q, "hybrid")``; (2)
``retrieve(q, "auto")`` end to end; (3) the router's own work timed apart (features read beyond the
hybrid pass, the runnable candidates, the selector's choice), in wall time and in thread CPU time (the
latter is what a quiet machine sees when many processes share the cores). Reports p50/p95 of each. The dataset's eval
store (``waypost eval`` builds it) is reused; a missing one is ingested first.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from waypost.engine import Engine, EngineConfig
from waypost.evaluation.beir import load_beir
from waypost.evaluation.metrics import percentile
from waypost.evaluation.runner import COLLECTION, default_cache_dir, eval_store_dir, prepare
from waypost.retrieval.hybrid import HybridRetriever
from waypost.route.candidates import runnable_pipelines
from waypost.route.config import RouterConfig
from waypost.route.features import (
    collection_features,
    extracted_filter,
    filter_features,
    first_stage_features,
    index_features,
    query_features,
)


def ms(values: list[float]) -> dict[str, float]:
    return {"p50_ms": round(percentile(values, 0.5), 3), "p95_ms": round(percentile(values, 0.95), 3)}


def bench(data: Path, name: str, limit: int, selector: str) -> dict[str, Any]:
    dataset = load_beir(data / name)
    config = EngineConfig(
        embed_cache=default_cache_dir() / "embedding-cache.sqlite", router=RouterConfig(selector=selector)
    )
    engine = Engine(eval_store_dir(dataset, config, default_cache_dir()), config)
    try:
        prepare(dataset, engine, show_progress=True)
        coll = engine.collection(COLLECTION)
        queries = [q.text for q in dataset.queries][:limit]
        coll.retrieve(queries[0], "auto")  # indexes, model, selector
        hybrid, auto, wall, cpu = [], [], [], []
        chooser, structures = engine.router().selector(coll), engine.router().structures
        chosen: Counter[str] = Counter()
        for q in queries:
            t0 = time.perf_counter()
            coll.retrieve(q, "hybrid", k=10)
            t1 = time.perf_counter()
            result = coll.retrieve(q, "auto", k=10)
            t2 = time.perf_counter()
            hybrid.append((t1 - t0) * 1000)
            auto.append((t2 - t1) * 1000)
            chosen[str((result.explanation.route or {}).get("label"))] += 1
            # the router's own work, timed apart: features beyond the hybrid pass, candidates, choice
            ctx = coll.context()
            first = HybridRetriever(ctx, engine.config.fusion).retrieve(q, 10)
            w0, c0 = time.perf_counter(), time.thread_time()
            found = {**query_features(q), **index_features(q, ctx), **first_stage_features(q, ctx, first)}
            found.update(filter_features(extracted_filter(q, ctx.indexes), ctx.indexes))
            found.update(collection_features(ctx.indexes))
            chooser.select(q, found, runnable_pipelines(ctx, engine.llm_configured, structures=structures))
            wall.append((time.perf_counter() - w0) * 1000)
            cpu.append((time.thread_time() - c0) * 1000)
        return {
            "dataset": name,
            "queries": len(queries),
            "selector": selector,
            "hybrid": ms(hybrid),
            "router_overhead_wall": ms(wall),
            "router_overhead_cpu": ms(cpu),  # thread CPU time: what a quiet machine would see
            "auto_end_to_end": ms(auto),
            "chosen": dict(chosen.most_common()),
        }
    finally:
        engine.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[1] / "../shared/data")
    parser.add_argument("--dataset", default="scifact")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--selector", default="heuristic")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = bench(args.data, args.dataset, args.queries, args.selector)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for key, value in report.items():
        print(f"{key:24} {value}")


if __name__ == "__main__":
    main()
