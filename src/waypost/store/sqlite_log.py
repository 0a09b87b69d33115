"""The SQLite store's change log: what changed since a generation, the consumers that applied it, and
compaction once all of them did (``SQLiteStore`` in ``waypost.store.sqlite``; writes log their rows there)."""

from __future__ import annotations

import time

import numpy as np
import numpy.typing as npt

from waypost.base import ChangeSet, make_version, version_incarnation
from waypost.store.sqlite_rows import ChunkRows
from waypost.store.sqlite_schema import Transaction

__all__ = ["ChangeLog"]


def _ids(blob: bytes) -> npt.NDArray[np.int64]:
    return np.frombuffer(blob, dtype=np.int64)


class ChangeLog(ChunkRows):
    """The change log's half of ``SQLiteStore``; a change set's added rows are read as ``ChunkRows`` reads them."""

    def version_at(self, name: str, generation: int) -> str | None:
        conn = self._conn
        with Transaction(conn, immediate=False):
            uid, head, floor = self._head(conn, name)
            if generation == head:
                return self._version(conn, name)
            if not floor <= generation < head:
                return None
            row = conn.execute(
                "SELECT nonce FROM versions WHERE collection=? AND generation=?", (name, generation)
            ).fetchone()
        return None if row is None else make_version(uid, generation, str(row[0]))

    def changes(self, collection: str, since: int) -> ChangeSet | None:
        """What changed after generation ``since``; ``None`` when the log no longer reaches back that far."""
        dim = self._dimension(collection)
        conn = self._conn
        with Transaction(conn, immediate=False):
            _uid, generation, floor = self._head(conn, collection)
            if since < floor or since > generation:
                return None
            version = self._version(conn, collection)
            entries = conn.execute(
                "SELECT generation, document_id, op, removed_rows, added_rows FROM change_log"
                " WHERE collection=? AND generation > ? ORDER BY seq",
                (collection, since),
            ).fetchall()
            removed = [_ids(e[3]) for e in entries]
            added = np.unique(np.concatenate([_ids(e[4]) for e in entries])) if entries else np.zeros(0, np.int64)
            rows = self._fetch_rows(conn, collection, added) if added.size else []
            snapshot = self._snapshot_of([rows], len(rows), generation, version, dim)
        return ChangeSet(
            since=since,
            generation=generation,
            version=version,
            removed_rows=np.unique(np.concatenate(removed)) if removed else np.zeros(0, np.int64),
            added=snapshot,
            documents=[(int(e[0]), str(e[1]), str(e[2])) for e in entries],
        )

    def log_floor(self, collection: str) -> int:
        return self._head(self._conn, collection)[2]

    def acknowledge(self, collection: str, consumer: str, generation: int, version: str | None = None) -> None:
        """``version`` (what ``version()`` said when the consumer's state was made) guards against a state
        of a dropped and recreated collection compacting the new one's log: such a call is ignored."""
        with self._write_lock, Transaction(self._writer):
            uid, head, _floor = self._head(self._writer, collection)
            if version is not None and version_incarnation(version) != uid:
                return
            generation = min(generation, head)
            self._writer.execute(
                "INSERT INTO log_consumers(collection, name, generation, updated_at) VALUES (?,?,?,?)"
                " ON CONFLICT(collection, name) DO UPDATE SET generation=excluded.generation,"
                " updated_at=excluded.updated_at",
                (collection, consumer, generation, time.time()),
            )
            applied = self._writer.execute(
                "SELECT min(generation) FROM log_consumers WHERE collection=?", (collection,)
            ).fetchone()[0]
            self._writer.execute("DELETE FROM change_log WHERE collection=? AND generation <= ?", (collection, applied))
            self._writer.execute(
                "UPDATE collections SET log_floor = max(log_floor, ?) WHERE name=?", (applied, collection)
            )
            self._writer.execute(  # versions below the floor name states the log can no longer catch up
                "DELETE FROM versions WHERE collection=? AND generation < (SELECT log_floor FROM collections"
                " WHERE name=?)",
                (collection, collection),
            )

    def consumers(self, collection: str) -> dict[str, int]:
        rows = self._conn.execute("SELECT name, generation FROM log_consumers WHERE collection=?", (collection,))
        return {str(r[0]): int(r[1]) for r in rows}

    def forget_consumer(self, collection: str, consumer: str) -> None:
        with self._write_lock:
            self._writer.execute("DELETE FROM log_consumers WHERE collection=? AND name=?", (collection, consumer))

    def log_size(self, collection: str) -> int:
        return int(
            self._conn.execute("SELECT count(*) FROM change_log WHERE collection=?", (collection,)).fetchone()[0]
        )
