"""The ``RouteLog`` contract (route telemetry): a backend's test provides a ``routes`` fixture."""

from __future__ import annotations

import pytest

from waypost.route.base import RouteRecord
from waypost.store.protocols import RouteLog


def record(i: int, collection: str = "c", pipeline: str = "hybrid", hit: bool = False) -> RouteRecord:
    return RouteRecord(
        at=1_700_000_000.0 + i,
        collection=collection,
        pipeline=pipeline,
        confidence=0.5 + i / 1000,
        selector="learned",
        retries=i % 3,
        cache_hit=hit,
        timings_ms={"route": 1.5, "retrieve": 10.0 + i},
        query_chars=20 + i,
    )


class RouteLogConformance:
    @pytest.fixture
    def routes(self) -> RouteLog:  # pragma: no cover - overridden
        raise NotImplementedError

    def test_records_read_back_whole_and_in_order(self, routes: RouteLog) -> None:
        written = [record(i, hit=i == 2) for i in range(5)]
        assert routes.append(written) == 5
        assert routes.records() == written
        assert routes.count() == 5

    def test_only_the_newest_are_kept(self, routes: RouteLog) -> None:
        routes.append([record(i) for i in range(8)], keep=5)
        assert [r.query_chars for r in routes.records()] == [23, 24, 25, 26, 27]
        routes.append([record(100)], keep=5)
        assert [r.query_chars for r in routes.records()] == [24, 25, 26, 27, 120]
        assert routes.count() == 5

    def test_per_collection_reads_limits_and_clears(self, routes: RouteLog) -> None:
        routes.append([record(i, collection="a" if i % 2 else "b") for i in range(6)])
        assert [r.query_chars for r in routes.records("a")] == [21, 23, 25]
        assert [r.query_chars for r in routes.records("a", limit=2)] == [23, 25]
        assert routes.clear("a") == 3
        assert {r.collection for r in routes.records()} == {"b"}
        assert routes.clear() == 3
        assert routes.records() == []
