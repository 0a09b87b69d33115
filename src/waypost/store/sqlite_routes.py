"""Route telemetry in the store's own SQLite file: one row per routed query, the newest N kept."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from waypost.route.base import RouteRecord
from waypost.store.protocols import DEFAULT_ROUTES_KEPT
from waypost.store.tables import SideTables

SCHEMA = """
CREATE TABLE IF NOT EXISTS route_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at REAL NOT NULL,
    collection TEXT NOT NULL,
    pipeline TEXT NOT NULL,
    confidence REAL NOT NULL,
    selector TEXT NOT NULL,
    retries INTEGER NOT NULL,
    cache_hit INTEGER NOT NULL,
    timings TEXT NOT NULL,
    query_chars INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS route_log_by_collection ON route_log(collection, seq);
"""

_COLUMNS = "at, collection, pipeline, confidence, selector, retries, cache_hit, timings, query_chars"


class SQLiteRouteLog(SideTables):
    """A ``RouteLog`` beside the documents. Row ``seq`` only grows, so "newest" is the highest ``seq``."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(path)
        conn = self._connect()
        try:
            conn.executescript(SCHEMA)
        finally:
            conn.close()

    def append(self, records: Sequence[RouteRecord], keep: int = DEFAULT_ROUTES_KEPT) -> int:
        keep = max(0, int(keep))
        with self._transaction(write=True) as conn:
            conn.executemany(
                f"INSERT INTO route_log({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)",
                [
                    (
                        float(r.at),
                        r.collection,
                        r.pipeline,
                        float(r.confidence),
                        r.selector,
                        int(r.retries),
                        int(bool(r.cache_hit)),
                        json.dumps({k: float(v) for k, v in r.timings_ms.items()}, sort_keys=True),
                        int(r.query_chars),
                    )
                    for r in records
                ],
            )
            newest = conn.execute("SELECT max(seq) FROM route_log").fetchone()[0]
            if newest is not None:
                conn.execute("DELETE FROM route_log WHERE seq <= ?", (int(newest) - keep,))
            return int(conn.execute("SELECT count(*) FROM route_log").fetchone()[0])

    def records(self, collection: str | None = None, limit: int | None = None) -> list[RouteRecord]:
        where, params = ("WHERE collection=?", [collection]) if collection is not None else ("", [])
        tail = "" if limit is None else " LIMIT ?"
        sql = f"SELECT {_COLUMNS} FROM route_log {where} ORDER BY seq DESC{tail}"
        with self._transaction(write=False) as conn:
            rows = conn.execute(sql, (*params, *([max(0, int(limit))] if limit is not None else []))).fetchall()
        return [
            RouteRecord(
                at=float(r[0]),
                collection=str(r[1]),
                pipeline=str(r[2]),
                confidence=float(r[3]),
                selector=str(r[4]),
                retries=int(r[5]),
                cache_hit=bool(r[6]),
                timings_ms={str(k): float(v) for k, v in json.loads(r[7]).items()},
                query_chars=int(r[8]),
            )
            for r in reversed(rows)
        ]

    def count(self) -> int:
        with self._transaction(write=False) as conn:
            return int(conn.execute("SELECT count(*) FROM route_log").fetchone()[0])

    def clear(self, collection: str | None = None) -> int:
        with self._transaction(write=True) as conn:
            if collection is None:
                return int(conn.execute("DELETE FROM route_log").rowcount)
            return int(conn.execute("DELETE FROM route_log WHERE collection=?", (collection,)).rowcount)
