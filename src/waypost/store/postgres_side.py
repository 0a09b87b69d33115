"""What a PostgreSQL backend keeps beside its documents: the repositories of trees and graphs, route
telemetry, and the server's control plane. Every class takes a ``PgDatabase`` (one schema) and applies its
own migrations; reads retry while the server restarts, writes do not. Only ``waypost.store`` imports this."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from waypost.route.base import RouteRecord
from waypost.store.pg_base import PgDatabase
from waypost.store.postgres_control import PostgresControl
from waypost.store.postgres_graphs import PostgresGraphRepository
from waypost.store.postgres_trees import PostgresTreeRepository
from waypost.store.protocols import DEFAULT_ROUTES_KEPT

ROUTE_MIGRATIONS = [
    """
    CREATE TABLE route_log (
        seq BIGSERIAL PRIMARY KEY,
        at DOUBLE PRECISION NOT NULL,
        collection TEXT NOT NULL,
        pipeline TEXT NOT NULL,
        confidence DOUBLE PRECISION NOT NULL,
        selector TEXT NOT NULL,
        retries INTEGER NOT NULL,
        cache_hit BOOLEAN NOT NULL,
        timings JSONB NOT NULL,
        query_chars INTEGER NOT NULL
    );
    CREATE INDEX route_log_by_collection ON route_log(collection, seq);
    """
]

_COLUMNS = "at, collection, pipeline, confidence, selector, retries, cache_hit, timings, query_chars"


def _route_row(r: RouteRecord) -> tuple[Any, ...]:
    timings = Jsonb({k: float(v) for k, v in r.timings_ms.items()})
    return (
        float(r.at), r.collection, r.pipeline, float(r.confidence), r.selector, int(r.retries), bool(r.cache_hit),
        timings, int(r.query_chars),
    )  # fmt: skip


class PostgresRouteLog:
    """A ``RouteLog`` beside the documents. ``seq`` only grows, so "newest" is the highest ``seq``; the trim
    keeps exactly the ``keep`` newest rows (a gap in ``seq`` after a rollback or a clear costs no record)."""

    def __init__(self, db: PgDatabase) -> None:
        self.db = db
        db.migrate("routes", ROUTE_MIGRATIONS)

    def append(self, records: Sequence[RouteRecord], keep: int = DEFAULT_ROUTES_KEPT) -> int:
        keep = max(0, int(keep))

        def write(conn: psycopg.Connection[Any]) -> int:
            with conn.cursor() as cur:
                cur.executemany(
                    f"INSERT INTO route_log({_COLUMNS}) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                    [_route_row(r) for r in records],
                )
            conn.execute(
                "DELETE FROM route_log WHERE seq <= (SELECT seq FROM route_log ORDER BY seq DESC OFFSET %s LIMIT 1)",
                (keep,),
            )
            row = conn.execute("SELECT count(*) FROM route_log").fetchone()
            return int(row[0]) if row else 0

        return self.db.run(write, retry=False)

    def records(self, collection: str | None = None, limit: int | None = None) -> list[RouteRecord]:
        where, params = ("WHERE collection=%s", [collection]) if collection is not None else ("", [])
        tail = "" if limit is None else " LIMIT %s"
        sql = f"SELECT {_COLUMNS} FROM route_log {where} ORDER BY seq DESC{tail}"
        args = (*params, *([max(0, int(limit))] if limit is not None else []))
        rows = self.db.run(lambda conn: conn.execute(sql, args).fetchall())
        return [
            RouteRecord(
                at=float(r[0]),
                collection=str(r[1]),
                pipeline=str(r[2]),
                confidence=float(r[3]),
                selector=str(r[4]),
                retries=int(r[5]),
                cache_hit=bool(r[6]),
                timings_ms={str(k): float(v) for k, v in r[7].items()},
                query_chars=int(r[8]),
            )
            for r in reversed(rows)
        ]

    def count(self) -> int:
        row = self.db.run(lambda conn: conn.execute("SELECT count(*) FROM route_log").fetchone())
        return int(row[0]) if row else 0

    def clear(self, collection: str | None = None) -> int:
        def write(conn: psycopg.Connection[Any]) -> int:
            if collection is None:
                return int(conn.execute("DELETE FROM route_log").rowcount)
            return int(conn.execute("DELETE FROM route_log WHERE collection=%s", (collection,)).rowcount)

        return self.db.run(write, retry=False)


__all__ = ["PostgresControl", "PostgresGraphRepository", "PostgresRouteLog", "PostgresTreeRepository"]
