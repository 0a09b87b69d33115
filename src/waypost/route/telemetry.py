"""Route telemetry: every routed query's ``RouteRecord`` goes to the store's ``RouteLog``, in batches.

``record`` only appends to an in-memory buffer; a background thread writes the buffer every
``interval_s`` seconds, or as soon as ``batch`` records wait, in one transaction that also trims the log
to the newest ``keep`` records. ``close`` (``Engine.close``) writes what is left. A failed write is logged
and never reaches a query. Records carry no query text, only its length."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from waypost.route.base import RouteRecord
from waypost.store.protocols import DEFAULT_ROUTES_KEPT, RouteLog

if TYPE_CHECKING:
    from waypost.engine import Engine

logger = logging.getLogger("waypost.route.telemetry")

DEFAULT_BATCH = 50
DEFAULT_INTERVAL_S = 1.0


class RouteTelemetry:
    """A ``Telemetry`` (``route.base``) that buffers records and writes them to a ``RouteLog``."""

    def __init__(
        self,
        log: RouteLog,
        keep: int = DEFAULT_ROUTES_KEPT,
        batch: int = DEFAULT_BATCH,
        interval_s: float = DEFAULT_INTERVAL_S,
    ) -> None:
        self.log = log
        self.keep = keep
        self.batch = max(1, batch)
        self.interval_s = interval_s
        self._buffer: list[RouteRecord] = []
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()  # one write at a time, in record order
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.dropped = 0  # records lost to failed writes

    def record(self, record: RouteRecord) -> None:
        with self._lock:
            self._buffer.append(record)
            closed = self._stop.is_set()
            full = len(self._buffer) >= self.batch
            if self._thread is None and not closed:
                self._thread = threading.Thread(target=self._run, name="waypost-route-telemetry", daemon=True)
                self._thread.start()
        if closed:  # no writer any more: write it now rather than lose it
            self.flush()
        elif full:
            self._wake.set()

    def pending(self) -> int:
        with self._lock:
            return len(self._buffer)

    def flush(self) -> int:
        """Write what waits now; returns how many records were written."""
        with self._write_lock:
            with self._lock:
                taken, self._buffer = self._buffer, []
            if not taken:
                return 0
            try:
                self.log.append(taken, self.keep)
            except Exception:  # telemetry never fails a query; what was lost is counted
                self.dropped += len(taken)
                logger.exception("writing %d route records failed", len(taken))
                return 0
            return len(taken)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.interval_s)
            self._wake.clear()
            self.flush()

    def close(self) -> None:
        """Stop the writer and write what is left (later records are written one by one)."""
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if thread is not None:
            thread.join()
        self.flush()


def _percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if values else 0.0


def _total_ms(record: RouteRecord) -> float:
    """The query's whole time: the router records it as ``total``; older records only have their stages."""
    total = record.timings_ms.get("total")
    return float(total) if total is not None else sum(record.timings_ms.values())


def summarize_routes(records: Sequence[RouteRecord]) -> dict[str, Any]:
    """The distribution of pipelines with their share, confidence and latency (p50/p95 of the whole query time, from the
    timings), the selectors' shares, the cache hit rate and how often queries were retried."""
    total = len(records)
    by_pipeline: dict[str, list[RouteRecord]] = {}
    for r in records:
        by_pipeline.setdefault(r.pipeline, []).append(r)
    selectors: dict[str, int] = {}
    collections: dict[str, int] = {}
    for r in records:
        selectors[r.selector] = selectors.get(r.selector, 0) + 1
        collections[r.collection] = collections.get(r.collection, 0) + 1
    latencies = [_total_ms(r) for r in records]
    retried = [r.retries for r in records]
    pipelines = {
        label: {
            "count": len(rs),
            "share": len(rs) / total,
            "confidence_mean": float(np.mean([r.confidence for r in rs])),
            "latency_ms": {
                "p50": _percentile([_total_ms(r) for r in rs], 50),
                "p95": _percentile([_total_ms(r) for r in rs], 95),
            },
            "cache_hit_rate": sum(r.cache_hit for r in rs) / len(rs),
        }
        for label, rs in sorted(by_pipeline.items(), key=lambda item: (-len(item[1]), item[0]))
    }
    return {
        "routes": total,
        "first_at": min((r.at for r in records), default=None),
        "last_at": max((r.at for r in records), default=None),
        "pipelines": pipelines,
        "selectors": {name: count / total for name, count in sorted(selectors.items())},
        "collections": dict(sorted(collections.items())),
        "confidence": {
            "mean": float(np.mean([r.confidence for r in records])) if records else 0.0,
            "p50": _percentile([r.confidence for r in records], 50),
        },
        "latency_ms": {"p50": _percentile(latencies, 50), "p95": _percentile(latencies, 95)},
        "cache_hit_rate": sum(r.cache_hit for r in records) / total if total else 0.0,
        "retries": {
            "total": int(sum(retried)),
            "retried_share": sum(1 for n in retried if n > 0) / total if total else 0.0,
            "mean": float(np.mean(retried)) if retried else 0.0,
        },
    }


def route_stats(engine: Engine, collection: str | None = None) -> dict[str, Any]:
    """``summarize_routes`` over the records kept in ``engine``'s store (what this engine still buffers is
    written first), for every collection or one."""
    engine.telemetry.flush()
    return summarize_routes(engine.backend.routes.records(collection))


__all__ = ["RouteTelemetry", "route_stats", "summarize_routes"]
