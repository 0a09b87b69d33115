"""Route telemetry: buffered, batched writes to the store's RouteLog, bounded, summarized by route_stats."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from tests.conformance.route_suite import record
from waypost.engine import Engine, EngineConfig
from waypost.route.base import RouteRecord
from waypost.route.telemetry import RouteTelemetry, route_stats
from waypost.store.backend import Backend, open_backend


@pytest.fixture
def backend(tmp_path: Path) -> Iterator[Backend]:
    with open_backend(tmp_path / "store") as b:
        yield b


def wait_for(condition: object, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.01)
    return False


def test_records_wait_in_memory_until_a_batch_fills(backend: Backend) -> None:
    telemetry = RouteTelemetry(backend.routes, batch=10, interval_s=60.0)
    for i in range(9):
        telemetry.record(record(i))
    time.sleep(0.1)
    assert backend.routes.count() == 0 and telemetry.pending() == 9
    telemetry.record(record(9))  # the tenth wakes the writer
    assert wait_for(lambda: backend.routes.count() == 10)
    telemetry.close()
    assert [r.query_chars for r in backend.routes.records()] == [20 + i for i in range(10)]


def test_a_partial_batch_is_written_after_the_interval_and_on_close(backend: Backend) -> None:
    telemetry = RouteTelemetry(backend.routes, batch=50, interval_s=0.05)
    telemetry.record(record(1))
    assert wait_for(lambda: backend.routes.count() == 1)
    telemetry.interval_s = 60.0
    telemetry.record(record(2))
    time.sleep(0.2)  # the writer may still be inside its short wait: it flushes at most once more
    telemetry.record(record(3))
    telemetry.close()
    assert backend.routes.count() == 3
    telemetry.record(record(4))  # after close: written at once
    assert backend.routes.count() == 4


def test_the_log_keeps_the_newest_records_only(backend: Backend) -> None:
    telemetry = RouteTelemetry(backend.routes, keep=10, batch=7, interval_s=60.0)
    for i in range(25):
        telemetry.record(record(i))
    telemetry.close()
    assert [r.query_chars for r in backend.routes.records()] == [20 + i for i in range(15, 25)]


class BrokenLog:
    def append(self, records: Sequence[RouteRecord], keep: int = 0) -> int:
        raise OSError("disk full")


def test_a_failed_write_never_reaches_the_query_and_is_counted() -> None:
    telemetry = RouteTelemetry(BrokenLog(), batch=2, interval_s=60.0)  # type: ignore[arg-type]
    telemetry.record(record(1))
    telemetry.record(record(2))
    assert wait_for(lambda: telemetry.dropped == 2)
    telemetry.close()


def test_route_stats_summarizes_pipelines_latency_hits_and_retries(tmp_path: Path) -> None:
    engine = Engine(tmp_path / "store", EngineConfig())
    for i in range(10):
        engine.telemetry.record(record(i, collection="a", pipeline="hybrid", hit=i < 4))
    for i in range(10, 15):
        engine.telemetry.record(record(i, collection="b", pipeline="hipporag"))
    stats = route_stats(engine)  # flushes what the engine still buffers
    assert stats["routes"] == 15
    assert list(stats["pipelines"]) == ["hybrid", "hipporag"]
    hybrid = stats["pipelines"]["hybrid"]
    assert hybrid["share"] == pytest.approx(10 / 15)
    assert hybrid["cache_hit_rate"] == pytest.approx(0.4)
    # each record's latency is 1.5 + 10 + i ms: hybrid's are 11.5 .. 20.5
    assert hybrid["latency_ms"]["p50"] == pytest.approx(16.0)
    assert hybrid["latency_ms"]["p95"] == pytest.approx(20.05)
    assert stats["cache_hit_rate"] == pytest.approx(4 / 15)
    assert stats["retries"]["total"] == sum(i % 3 for i in range(15))
    assert stats["selectors"] == {"learned": 1.0}
    only_b = route_stats(engine, "b")
    assert only_b["routes"] == 5 and list(only_b["pipelines"]) == ["hipporag"]
    engine.telemetry.record(record(99, collection="a"))
    engine.close()  # closing writes what was buffered
    with open_backend(tmp_path / "store") as again:
        assert again.routes.count() == 16


def test_dropping_a_collection_drops_its_routes(tmp_path: Path) -> None:
    with Engine(tmp_path / "store", EngineConfig(embed_model="m")) as engine:
        engine.store.create_collection("a", "m", 4)
        engine.telemetry.record(record(1, collection="a"))
        engine.telemetry.record(record(2, collection="b"))
        engine.drop("a")  # the record of "a" was still buffered
        assert [r.collection for r in engine.backend.routes.records()] == ["b"]
