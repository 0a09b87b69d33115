"""What route telemetry costs a query: ``record`` (on the query's thread: a list append) and the batched
write the background thread makes (one transaction per 50 records, trimming the log to the newest 10,000).

    PYTHONPATH=src python benchmarks/bench_telemetry.py
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from waypost.route.base import RouteRecord
from waypost.route.telemetry import RouteTelemetry
from waypost.store.backend import open_backend


def record(i: int) -> RouteRecord:
    return RouteRecord(time.time(), f"c{i % 6}", "hybrid", 0.8, "learned", i % 2, i % 3 == 0, {"route": 1.0}, 40)


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    with tempfile.TemporaryDirectory() as tmp, open_backend(Path(tmp) / "store") as backend:
        telemetry = RouteTelemetry(backend.routes)
        costs = []
        started = time.perf_counter()
        for i in range(n):
            t = time.perf_counter()
            telemetry.record(record(i))
            costs.append((time.perf_counter() - t) * 1e6)
        telemetry.close()
        wall = time.perf_counter() - started
        batches = []
        manual = RouteTelemetry(backend.routes, batch=10**9, interval_s=3600.0)  # its writer never wakes
        for _ in range(20):  # one batch written on this thread, timed, with the log full
            for i in range(50):
                manual.record(record(i))
            t = time.perf_counter()
            manual.flush()
            batches.append((time.perf_counter() - t) * 1000)
        report = {
            "records": n,
            "kept": backend.routes.count(),
            "record_us_p50": round(float(np.percentile(costs, 50)), 2),
            "record_us_p99": round(float(np.percentile(costs, 99)), 2),
            "batch_of_50_write_ms_p50": round(float(np.percentile(batches, 50)), 2),
            "batch_of_50_write_ms_p95": round(float(np.percentile(batches, 95)), 2),
            "records_per_s_end_to_end": round(n / wall),
        }
        manual.close()
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
