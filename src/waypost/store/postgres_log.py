"""The PostgreSQL store's change log: what changed since a generation, the consumers that
applied it, and compaction once all of them did (``PostgresStore`` in ``waypost.store.postgres``)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import psycopg

from waypost.base import ChangeSet, make_version, version_incarnation
from waypost.store.postgres_rows import ChunkRows, read_rows

LOG_RETENTION_S = 3600.0  # a change stays in the log at least this long after its commit (and until applied)


class ChangeLog(ChunkRows):
    """The change log's half of ``PostgresStore``.

    Compaction keeps what every registered consumer applied, and also every change younger than
    ``log_retention_s``: other processes on the database keep their indexes in their own working
    directories and catch up from the log, so a process that lagged less than that never rebuilds."""

    log_retention_s: float = LOG_RETENTION_S

    def changes(self, collection: str, since: int) -> ChangeSet | None:
        """What changed after generation ``since``; ``None`` when the log no longer reaches back that far."""

        def read(conn: psycopg.Connection[Any]) -> ChangeSet | None:
            dim = self._read_dimension(conn, collection)
            _uid, generation, floor, version = self._head(conn, collection)
            if since < floor or since > generation:
                return None
            entries = conn.execute(
                "SELECT generation, document_id, op, removed_rows, added_rows FROM change_log"
                " WHERE collection = %s AND generation > %s ORDER BY generation, seq",
                (collection, since),
            ).fetchall()
            added = np.unique(np.array([r for e in entries for r in e[4]], dtype=np.int64))
            removed = np.unique(np.array([r for e in entries for r in e[3]], dtype=np.int64))
            return ChangeSet(
                since=since,
                generation=generation,
                version=version,
                removed_rows=removed,
                added=read_rows(conn, collection, dim, generation, version, added),
                documents=[(int(e[0]), str(e[1]), str(e[2])) for e in entries],
            )

        return self._read(read)

    def log_floor(self, collection: str) -> int:
        return self._read(lambda conn: self._head(conn, collection)[2])

    def version_at(self, name: str, generation: int) -> str | None:
        def read(conn: psycopg.Connection[Any]) -> str | None:
            uid, head, floor, version = self._head(conn, name)
            if generation == head:
                return version
            if not floor <= generation < head:
                return None
            row = conn.execute(
                "SELECT nonce FROM versions WHERE collection = %s AND generation = %s", (name, generation)
            ).fetchone()
            return None if row is None else make_version(uid, generation, str(row[0]))

        return self._read(read)

    def acknowledge(self, collection: str, consumer: str, generation: int, version: str | None = None) -> None:
        """``version`` (what ``version()`` said when the consumer's state was made) guards against a state
        of a dropped and recreated collection compacting the new one's log: such a call is ignored."""

        def work(conn: psycopg.Connection[Any]) -> None:
            uid, _dim, head, _floor = self._lock(conn, collection)
            if version is not None and version_incarnation(version) != uid:
                return
            conn.execute(
                "INSERT INTO log_consumers(collection, name, generation, updated_at) VALUES (%s, %s, %s, %s)"
                " ON CONFLICT (collection, name) DO UPDATE SET generation = EXCLUDED.generation,"
                " updated_at = EXCLUDED.updated_at",
                (collection, consumer, min(generation, head), time.time()),
            )
            row = conn.execute("SELECT min(generation) FROM log_consumers WHERE collection = %s", (collection,))
            applied = int(row.fetchone()[0])  # type: ignore[index]
            recent = conn.execute(  # the oldest change still within the retention window stays, with all after it
                "SELECT min(generation) FROM change_log WHERE collection = %s"
                " AND committed_at >= extract(epoch FROM now()) - %s",  # the database's clock, as committed_at
                (collection, self.log_retention_s),
            ).fetchone()
            if recent is not None and recent[0] is not None:
                applied = min(applied, int(recent[0]) - 1)
            conn.execute("DELETE FROM change_log WHERE collection = %s AND generation <= %s", (collection, applied))
            floor = conn.execute(
                "UPDATE collections SET log_floor = greatest(log_floor, %s) WHERE name = %s RETURNING log_floor",
                (applied, collection),
            ).fetchone()
            # versions below the floor name states the log can no longer catch up
            conn.execute(
                "DELETE FROM versions WHERE collection = %s AND generation < %s",
                (collection, int(floor[0]) if floor else applied),
            )

        self._write(work)

    def consumers(self, collection: str) -> dict[str, int]:
        rows = self._read(
            lambda conn: conn.execute(
                "SELECT name, generation FROM log_consumers WHERE collection = %s", (collection,)
            ).fetchall()
        )
        return {str(r[0]): int(r[1]) for r in rows}

    def forget_consumer(self, collection: str, consumer: str) -> None:
        self._write(
            lambda conn: conn.execute(
                "DELETE FROM log_consumers WHERE collection = %s AND name = %s", (collection, consumer)
            )
        )

    def log_size(self, collection: str) -> int:
        row = self._read(
            lambda conn: conn.execute("SELECT count(*) FROM change_log WHERE collection = %s", (collection,)).fetchone()
        )
        return int(row[0]) if row else 0
