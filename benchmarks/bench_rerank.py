"""What the feature rerank and passage assembly add to hybrid on scifact, measured in one run.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_rerank.py [--data ../shared/data] [--rerank default]

Per query, interleaved so machine noise hits every variant alike: hybrid (k=10); hybrid with the
feature rerank (30 candidates); hybrid with rerank and grow passages. Reported: end-to-end percentiles
of each, the percentiles of the rerank and passage stages' own time, and the per-query difference.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import time
from pathlib import Path
from typing import Any

from waypost.engine import Engine, EngineConfig
from waypost.evaluation.beir import load_beir
from waypost.evaluation.metrics import percentile
from waypost.evaluation.runner import COLLECTION, default_cache_dir, eval_store_dir, prepare
from waypost.post.passages import PassageConfig


def ms(values: list[float]) -> dict[str, float]:
    return {"p50_ms": round(percentile(values, 0.5), 3), "p95_ms": round(percentile(values, 0.95), 3)}


def bench(data: Path, rerank: str, limit: int | None) -> dict[str, Any]:
    dataset = load_beir(data / "scifact")
    config = EngineConfig(embed_cache=default_cache_dir() / "embedding-cache.sqlite")
    engine = Engine(eval_store_dir(dataset, config, default_cache_dir()), config)
    prepare(dataset, engine, show_progress=True)
    coll = engine.collection(COLLECTION)
    queries = [q.text for q in dataset.queries][:limit]
    for q in queries[:20]:  # build indexes, load the model, warm caches
        coll.retrieve(q, "hybrid", k=10, rerank=rerank, passages=PassageConfig())
    plain, reranked, both, stages, added = [], [], [], [], []
    for q in queries:
        t0 = time.perf_counter()
        coll.retrieve(q, "hybrid", k=10)
        t1 = time.perf_counter()
        coll.retrieve(q, "hybrid", k=10, rerank=rerank)
        t2 = time.perf_counter()
        result = coll.retrieve(q, "hybrid", k=10, rerank=rerank, passages=PassageConfig())
        t3 = time.perf_counter()
        plain.append((t1 - t0) * 1000)
        reranked.append((t2 - t1) * 1000)
        both.append((t3 - t2) * 1000)
        timings = result.explanation.timings_ms
        stages.append(timings.get("rerank", 0.0) + timings.get("passages", 0.0))
        added.append((t3 - t2 - (t1 - t0)) * 1000)
    engine.close()
    return {
        "queries": len(queries),
        "rerank": rerank,
        "hybrid": ms(plain),
        "hybrid_rerank": ms(reranked),
        "hybrid_rerank_passages": ms(both),
        "rerank_and_passage_stages": ms(stages),
        "added_per_query": ms(added),
        "added_p95_over_hybrid_p95_ms": round(percentile(both, 0.95) - percentile(plain, 0.95), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--rerank", default="default")
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    print(json.dumps(bench(args.data, args.rerank, args.limit), indent=2))


if __name__ == "__main__":
    main()
