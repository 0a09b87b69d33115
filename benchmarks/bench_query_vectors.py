"""What embedding a query once per search saves: ``Engine.search`` (stage 1 chooses the collection, then
``auto``) on the mixed workload's store, with stage 1's query vector kept for the collection's own pass
(``embeddings.query_vectors.one_search``, shipped) and without it (each stage embeds the query), the two
interleaved per query in one run so machine noise hits both alike. Run after ``waypost bench mixed`` (it
reads that store). Training-split questions; latency only.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/bench_query_vectors.py [--per-set 20] [--json]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import contextlib
import json
import time
from typing import Any

from waypost.embeddings import query_vectors
from waypost.engine import Engine, EngineConfig
from waypost.evaluation.metrics import percentile
from waypost.evaluation.mixed import default_store, default_workload

VARIANTS = ("kept", "embedded_again")


def bench(per_set: int) -> dict[str, Any]:
    # one engine per variant: each keeps its own caches (stage 1's, the query cache), so neither variant
    # searches a question the other's run has already answered
    engines = {v: Engine(default_store(), EngineConfig(background_index_work=False)) for v in VARIANTS}
    queries = default_workload(None).queries("train", per_set)
    shipped = query_vectors.one_search
    for engine in engines.values():
        for q in queries[-5:]:  # model, indexes, profiles (these five are then timed as well)
            engine.search(q.text, filters=q.filters)
        engine.query_cache.clear()
    timings: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for i, q in enumerate(queries):
        for variant in VARIANTS if i % 2 == 0 else VARIANTS[::-1]:
            query_vectors.one_search = shipped if variant == "kept" else contextlib.nullcontext  # type: ignore[assignment]
            started = time.perf_counter()
            engines[variant].search(q.text, filters=q.filters)
            timings[variant].append((time.perf_counter() - started) * 1000)
    query_vectors.one_search = shipped
    out: dict[str, Any] = {"queries": len(queries)}
    for variant, values in timings.items():
        out[variant] = {"p50_ms": round(percentile(values, 0.5), 2), "p95_ms": round(percentile(values, 0.95), 2)}
    out["p50_ratio"] = round(out["kept"]["p50_ms"] / out["embedded_again"]["p50_ms"], 3)
    out["p95_ratio"] = round(out["kept"]["p95_ms"] / out["embedded_again"]["p95_ms"], 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-set", type=int, default=20, help="training questions per set")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = bench(args.per_set)
    print(json.dumps(result, indent=None if args.json else 1))


if __name__ == "__main__":
    main()
