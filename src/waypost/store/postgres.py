"""PostgreSQL system of record (pgvector): the ``DocumentStore`` of a server-backed store, behaving as
``SQLiteStore`` does, for several processes at once.

Writes to a collection serialize on its ``collections`` row (``FOR NO KEY UPDATE``, taken first in every write
transaction): each writer bumps the generation and logs its rows under it while holding that lock, so the change
log's generations commit in order and ``changes()`` never skips a write that commits later. Reads run in one
REPEATABLE READ transaction each (a snapshot, a change set, a version all come from one committed state) and
are retried when the server restarts; writes are not retried and raise ``DatabaseUnavailableError``.

Embeddings are pgvector ``vector`` values (float32) in one column for every collection; a collection's
dimension is checked on write (pgvector's ``vector(n)`` fixes one n per column, and collections differ)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from datetime import date, datetime
from typing import Any

import numpy as np
import psycopg

from waypost.base import CollectionInfo, Feedback, IngestItem
from waypost.errors import InvalidInputError, WaypostError
from waypost.store.pg_base import DatabaseUnavailableError, PgDatabase, open_database, release_database
from waypost.store.postgres_log import LOG_RETENTION_S, ChangeLog
from waypost.store.postgres_schema import COMPONENT, MIGRATIONS
from waypost.types import Document
from waypost.validation import id_list

__all__ = ["PostgresStore"]

VACUUM_LOCK_TIMEOUT = "5s"  # compact(vacuum=True) gives up (False) when readers hold a table longer


def _json_value(value: Any) -> Any:
    """Metadata values JSON lacks: ``date``/``datetime`` are stored as ISO strings (the index reads them as dates)."""
    if isinstance(value, (date, datetime)):
        return value.isoformat()
    raise TypeError(f"metadata value {value!r} of type {type(value).__name__} cannot be stored")


def _nonce() -> str:
    """Drawn in every committing write: what makes a version name one write history."""
    return uuid.uuid4().hex[:12]


def _runs(items: Sequence[IngestItem]) -> Iterator[list[IngestItem]]:
    """``items`` cut where a document id repeats: a later item replaces an earlier one of the same batch."""
    run: list[IngestItem] = []
    ids: set[str] = set()
    for it in items:
        if it.document.id in ids:
            yield run
            run, ids = [], set()
        run.append(it)
        ids.add(it.document.id)
    if run:
        yield run


class PostgresStore(ChangeLog):
    """A ``DocumentStore`` in one schema of a PostgreSQL database. ``location`` is a ``postgresql://`` URL (its
    pool is shared in the process and released on ``close``) or a ``PgDatabase`` the caller owns."""

    def __init__(self, location: str | PgDatabase, log_retention_s: float = LOG_RETENTION_S) -> None:
        self.log_retention_s = log_retention_s
        self._owned = isinstance(location, str)
        self.db = open_database(location) if isinstance(location, str) else location
        self.location = self.db.location
        self._closed = False
        try:
            self.db.migrate(COMPONENT, MIGRATIONS)
        except BaseException:
            self.close()
            raise

    def _column(self, name: str, column: str) -> Any:
        """One column of the collection's row (a fixed name), raising when it does not exist."""
        row = self._read(
            lambda conn: conn.execute(f"SELECT {column} FROM collections WHERE name = %s", (name,)).fetchone()
        )
        if row is None:
            raise self._missing(name)
        return row[0]

    def _set(self, name: str, column: str, value: object) -> None:
        def work(conn: psycopg.Connection[Any]) -> int:
            return conn.execute(f"UPDATE collections SET {column} = %s WHERE name = %s", (value, name)).rowcount

        if not self._write(work):
            raise self._missing(name)

    # -- collections -------------------------------------------------------------------------
    def create_collection(self, name: str, embed_model: str, embed_dim: int) -> CollectionInfo:
        if not name or "/" in name or name.startswith("."):
            raise WaypostError(f"invalid collection name {name!r}")

        def work(conn: psycopg.Connection[Any]) -> None:
            nonce = _nonce()
            created = conn.execute(
                "INSERT INTO collections(name, uid, embed_model, embed_dim, created_at, nonce)"
                " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (name) DO NOTHING",
                (name, uuid.uuid4().hex[:16], embed_model, embed_dim, time.time(), nonce),
            ).rowcount
            if created:
                conn.execute("INSERT INTO versions(collection, generation, nonce) VALUES (%s, 0, %s)", (name, nonce))

        self._write(work)
        return self.collection(name)

    _INFO = (
        "SELECT c.name, c.embed_model, c.embed_dim, c.generation, c.description,"
        " (SELECT count(*) FROM documents d WHERE d.collection = c.name),"
        " (SELECT count(*) FROM chunks k WHERE k.collection = c.name) FROM collections c"
    )

    @staticmethod
    def _info(row: Sequence[Any]) -> CollectionInfo:
        return CollectionInfo(row[0], row[1], int(row[2]), int(row[3]), int(row[5]), int(row[6]), str(row[4]))

    def collection(self, name: str) -> CollectionInfo:
        row = self._read(lambda conn: conn.execute(self._INFO + " WHERE c.name = %s", (name,)).fetchone())
        if row is None:
            raise self._missing(name)
        return self._info(row)

    def collections(self) -> list[CollectionInfo]:
        rows = self._read(lambda conn: conn.execute(self._INFO + ' ORDER BY c.name COLLATE "C"').fetchall())
        return [self._info(r) for r in rows]

    def drop_collection(self, name: str) -> None:
        def work(conn: psycopg.Connection[Any]) -> None:
            self._lock(conn, name)
            conn.execute("DELETE FROM chunks WHERE collection = %s", (name,))  # the rest goes by ON DELETE CASCADE
            conn.execute("DELETE FROM collections WHERE name = %s", (name,))

        self._write(work)

    def _dimension(self, name: str) -> int:
        return int(self._column(name, "embed_dim"))

    def generation(self, name: str) -> int:
        return int(self._column(name, "generation"))

    def language_counts(self, name: str) -> dict[str, int]:
        rows = self._read(
            lambda conn: conn.execute(
                "SELECT language, count(*) FROM chunks WHERE collection = %s GROUP BY language", (name,)
            ).fetchall()
        )
        return {str(r[0]): int(r[1]) for r in rows}

    def collection_language(self, name: str) -> str:
        return str(self._column(name, "language"))

    def set_collection_language(self, name: str, language: str) -> None:
        self._set(name, "language", language)

    def collection_description(self, name: str) -> str:
        return str(self._column(name, "description"))

    def set_collection_description(self, name: str, description: str) -> None:
        """Not a content change: the generation stays."""
        self._set(name, "description", description)

    def version(self, name: str) -> str:
        """``<uid>-g<generation>-<nonce>``: unique per incarnation and write history (see ``DocumentStore``)."""
        return self._read(lambda conn: self._head(conn, name)[3])

    # -- writes ------------------------------------------------------------------------------
    def document_hashes(self, collection: str, ids: Iterable[str]) -> dict[str, str]:
        wanted = id_list(ids)
        rows = self._read(
            lambda conn: conn.execute(
                "SELECT id, hash FROM documents WHERE collection = %s AND id = ANY(%s::text[])", (collection, wanted)
            ).fetchall()
        )
        return {str(r[0]): str(r[1]) for r in rows}

    def write(self, collection: str, items: Sequence[IngestItem]) -> int:
        dim = self._dimension(collection)
        for it in items:
            if it.embeddings.shape != (len(it.chunks), dim):
                raise WaypostError(
                    f"document {it.document.id!r}: embeddings {it.embeddings.shape} do not match "
                    f"{len(it.chunks)} chunks of dimension {dim}"
                )
        if not items:
            return 0

        def work(conn: psycopg.Connection[Any]) -> int:
            _uid, locked_dim, _generation, _floor = self._lock(conn, collection)
            if locked_dim != dim:  # dropped and recreated meanwhile with another dimension
                raise WaypostError(f"collection {collection!r} now has dimension {locked_dim}, not {dim}")
            generation = self._bump(conn, collection)
            for run in _runs(items):
                self._write_run(conn, collection, generation, run)
            return len(items)

        try:
            return self._write(work)
        except psycopg.errors.CharacterNotInRepertoire as exc:  # nothing was written
            raise InvalidInputError(f"PostgreSQL cannot store this text (a NUL character?): {exc}") from None

    def _write_run(
        self, conn: psycopg.Connection[Any], collection: str, generation: int, items: Sequence[IngestItem]
    ) -> None:
        """Replace the documents of ``items`` (distinct ids) and log each one under ``generation``."""
        ids = [it.document.id for it in items]
        removed = self._rows_of(conn, collection, ids)
        existed = {
            str(r[0])
            for r in conn.execute(
                "DELETE FROM documents WHERE collection = %s AND id = ANY(%s::text[]) RETURNING id", (collection, ids)
            )
        }  # their chunks go by ON DELETE CASCADE
        now = time.time()
        with conn.cursor() as cur:
            with cur.copy(
                "COPY documents(collection, id, title, text, metadata, source, hash, added_at, language)"
                " FROM STDIN (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["text", "text", "text", "text", "text", "text", "text", "float8", "text"])
                for it in items:
                    doc = it.document
                    metadata = json.dumps(doc.metadata, ensure_ascii=False, default=_json_value)
                    copy.write_row(
                        (
                            collection,
                            doc.id,
                            doc.title,
                            doc.text,
                            metadata,
                            doc.source,
                            it.stored_hash,
                            now,
                            doc.language,
                        )
                    )
            with cur.copy(
                'COPY chunks(collection, document_id, idx, text, start, "end", token_count, section, embedding,'
                " language) FROM STDIN (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["text", "text", "int4", "text", "int4", "int4", "int4", "text", "vector", "text"])
                for it in items:
                    vectors = np.ascontiguousarray(it.embeddings, dtype=np.float32)
                    for c, vec in zip(it.chunks, vectors, strict=True):
                        section = json.dumps(list(c.section), ensure_ascii=False)
                        copy.write_row(
                            (collection, it.document.id, c.index, c.text, c.start, c.end, c.token_count, section,
                             vec, c.language)
                        )  # fmt: skip
        added = self._rows_of(conn, collection, ids)
        self._log(
            conn,
            collection,
            [(generation, i, "replace" if i in existed else "add", removed.get(i, []), added.get(i, [])) for i in ids],
        )

    def delete(self, collection: str, ids: Iterable[str]) -> int:
        wanted = list(dict.fromkeys(id_list(ids)))  # a bare string is refused, not deleted character by character
        self._dimension(collection)

        def work(conn: psycopg.Connection[Any]) -> int:
            self._lock(conn, collection)
            rows = self._rows_of(conn, collection, wanted)
            deleted = {
                str(r[0])
                for r in conn.execute(
                    "DELETE FROM documents WHERE collection = %s AND id = ANY(%s::text[]) RETURNING id",
                    (collection, wanted),
                )
            }
            conn.execute(
                "DELETE FROM feedback WHERE collection = %s AND document_id = ANY(%s::text[])", (collection, wanted)
            )
            if deleted:
                generation = self._bump(conn, collection)
                self._log(
                    conn, collection, [(generation, i, "delete", rows.get(i, []), []) for i in wanted if i in deleted]
                )
            return len(deleted)

        return self._write(work)

    @staticmethod
    def _rows_of(conn: psycopg.Connection[Any], collection: str, ids: Sequence[str]) -> dict[str, list[int]]:
        """Chunk rows of each of the documents ``ids``, in row order."""
        out: dict[str, list[int]] = {}
        for doc_id, row_id in conn.execute(
            "SELECT document_id, row_id FROM chunks WHERE collection = %s AND document_id = ANY(%s::text[])"
            " ORDER BY row_id",
            (collection, list(ids)),
        ):
            out.setdefault(str(doc_id), []).append(int(row_id))
        return out

    @staticmethod
    def _bump(conn: psycopg.Connection[Any], collection: str) -> int:
        """Move the generation and draw a new nonce (the collection's row lock is held)."""
        nonce = _nonce()
        row = conn.execute(
            "UPDATE collections SET generation = generation + 1, nonce = %s WHERE name = %s RETURNING generation",
            (nonce, collection),
        ).fetchone()
        assert row is not None  # the caller holds the row's lock
        conn.execute(
            "INSERT INTO versions(collection, generation, nonce) VALUES (%s, %s, %s)"
            " ON CONFLICT (collection, generation) DO UPDATE SET nonce = EXCLUDED.nonce",
            (collection, int(row[0]), nonce),
        )
        return int(row[0])

    @staticmethod
    def _log(
        conn: psycopg.Connection[Any], collection: str, entries: Sequence[tuple[int, str, str, list[int], list[int]]]
    ) -> None:
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO change_log(collection, generation, document_id, op, removed_rows, added_rows)"
                " VALUES (%s, %s, %s, %s, %s::bigint[], %s::bigint[])",
                [(collection, g, doc, op, removed, added) for g, doc, op, removed, added in entries],
            )

    # -- coverage and feedback -----------------------------------------------------------------
    def coverage(self, model: str, scope: str, language: str) -> tuple[float, int, int] | None:
        row = self._read(
            lambda conn: conn.execute(
                "SELECT value, samples, chunks FROM language_coverage"
                " WHERE model = %s AND scope = %s AND language = %s",
                (model, scope, language),
            ).fetchone()
        )
        return None if row is None else (float(row[0]), int(row[1]), int(row[2]))

    def remember_coverage(self, model: str, scope: str, language: str, value: float, samples: int, chunks: int) -> None:
        self._write(
            lambda conn: conn.execute(
                "INSERT INTO language_coverage(model, scope, language, value, samples, chunks, measured_at)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (model, scope, language) DO UPDATE SET"
                " value = EXCLUDED.value, samples = EXCLUDED.samples, chunks = EXCLUDED.chunks,"
                " measured_at = EXCLUDED.measured_at",
                (model, scope, language, value, samples, chunks, time.time()),
            )
        )

    def record_feedback(self, collection: str, entries: Sequence[Feedback]) -> int:
        self._dimension(collection)
        if not entries:
            return 0

        def work(conn: psycopg.Connection[Any]) -> None:
            with conn.cursor() as cur:
                cur.executemany(
                    'INSERT INTO feedback(collection, query, document_id, start, "end", label, kind, recorded_at)'
                    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                    [
                        (collection, e.query, e.document_id, e.start, e.end, e.label, e.kind,
                         e.recorded_at or time.time())
                        for e in entries
                    ],
                )  # fmt: skip

        self._write(work)
        return len(entries)

    def feedback(self, collection: str) -> list[Feedback]:
        rows = self._read(
            lambda conn: conn.execute(
                'SELECT query, document_id, start, "end", label, kind, recorded_at FROM feedback'
                " WHERE collection = %s ORDER BY seq",
                (collection,),
            ).fetchall()
        )
        return [Feedback(str(r[0]), str(r[1]), int(r[2]), int(r[3]), float(r[4]), str(r[5]), float(r[6])) for r in rows]

    # -- reads -------------------------------------------------------------------------------
    _DOCUMENT = "SELECT id, title, text, metadata, source, language FROM documents WHERE collection = %s"

    @staticmethod
    def _document(row: Sequence[Any]) -> Document:
        return Document(
            id=row[0], title=row[1], text=row[2], metadata=json.loads(row[3]), source=row[4], language=row[5]
        )

    def get_document(self, collection: str, doc_id: str) -> Document | None:
        row = self._read(lambda conn: conn.execute(self._DOCUMENT + " AND id = %s", (collection, doc_id)).fetchone())
        return None if row is None else self._document(row)

    def iter_documents(self, collection: str) -> Iterator[Document]:
        rows = self._read(
            lambda conn: conn.execute(self._DOCUMENT + ' ORDER BY id COLLATE "C"', (collection,)).fetchall()
        )
        for row in rows:
            yield self._document(row)

    # -- purging ---------------------------------------------------------------------------
    def compact(self, vacuum: bool = False) -> bool:
        """Dead rows of deleted content are vacuumed away; with ``vacuum`` the tables that hold text are
        rewritten (``VACUUM FULL``). False when a concurrent reader kept a rewrite from getting its lock in time.
        (The server's WAL and replicas are the database administrator's to manage.)"""
        self._check_open()
        tables = ("chunks", "documents", "change_log", "feedback")
        try:
            with self.db.pool.connection() as conn:  # autocommit: VACUUM runs outside a transaction
                conn.execute(f"SET lock_timeout = '{VACUUM_LOCK_TIMEOUT}'")
                try:
                    for table in tables:
                        conn.execute(f"VACUUM {'(FULL) ' if vacuum else ''}{table}")
                finally:
                    conn.execute("RESET lock_timeout")
        except psycopg.errors.LockNotAvailable:
            return False
        except psycopg.OperationalError as exc:
            raise DatabaseUnavailableError(f"PostgreSQL at {self.location} is unavailable: {exc}") from None
        return True

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._owned:
            release_database(self.db)
