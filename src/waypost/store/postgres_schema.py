"""The PostgreSQL store's schema (its migrations, component ``documents`` in ``waypost_schema``), whether a
database holds it, and the transactions and collection-row reads every part of ``PostgresStore`` shares."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
from psycopg import sql

from waypost.base import make_version
from waypost.errors import CollectionNotFoundError, WaypostError
from waypost.store.pg_base import CONNECT_TIMEOUT_S, PgDatabase, redact, split_url

logger = logging.getLogger("waypost.store")
T = TypeVar("T")

COMPONENT = "documents"  # its migrations in ``waypost_schema``
MIGRATIONS = [
    """
    CREATE TABLE collections (
        name TEXT PRIMARY KEY,
        uid TEXT NOT NULL,
        embed_model TEXT NOT NULL,
        embed_dim INTEGER NOT NULL,
        generation BIGINT NOT NULL DEFAULT 0,
        log_floor BIGINT NOT NULL DEFAULT 0,
        nonce TEXT NOT NULL,
        language TEXT NOT NULL DEFAULT '',
        description TEXT NOT NULL DEFAULT '',
        created_at DOUBLE PRECISION NOT NULL
    );
    CREATE TABLE documents (
        collection TEXT NOT NULL REFERENCES collections(name) ON DELETE CASCADE,
        id TEXT NOT NULL,
        title TEXT NOT NULL,
        text TEXT NOT NULL,
        metadata TEXT NOT NULL,
        source TEXT NOT NULL,
        hash TEXT NOT NULL,
        added_at DOUBLE PRECISION NOT NULL,
        language TEXT NOT NULL DEFAULT '',
        PRIMARY KEY (collection, id)
    );
    CREATE TABLE chunks (
        row_id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        collection TEXT NOT NULL,
        document_id TEXT NOT NULL,
        idx INTEGER NOT NULL,
        text TEXT NOT NULL,
        start INTEGER NOT NULL,
        "end" INTEGER NOT NULL,
        token_count INTEGER NOT NULL,
        section TEXT NOT NULL,
        embedding vector NOT NULL,
        language TEXT NOT NULL DEFAULT '',
        UNIQUE (collection, document_id, idx),
        FOREIGN KEY (collection, document_id) REFERENCES documents(collection, id) ON DELETE CASCADE
    );
    CREATE INDEX chunks_by_collection ON chunks(collection, row_id);
    CREATE INDEX chunks_by_text ON chunks USING hash (text);
    CREATE TABLE change_log (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        collection TEXT NOT NULL REFERENCES collections(name) ON DELETE CASCADE,
        generation BIGINT NOT NULL,
        document_id TEXT NOT NULL,
        op TEXT NOT NULL,
        removed_rows BIGINT[] NOT NULL,
        added_rows BIGINT[] NOT NULL
    );
    CREATE INDEX change_log_by_generation ON change_log(collection, generation, seq);
    CREATE TABLE language_coverage (
        model TEXT NOT NULL,
        scope TEXT NOT NULL,
        language TEXT NOT NULL,
        value DOUBLE PRECISION NOT NULL,
        samples INTEGER NOT NULL,
        chunks INTEGER NOT NULL,
        measured_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (model, scope, language)
    );
    CREATE TABLE feedback (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        collection TEXT NOT NULL REFERENCES collections(name) ON DELETE CASCADE,
        query TEXT NOT NULL,
        document_id TEXT NOT NULL,
        start INTEGER NOT NULL,
        "end" INTEGER NOT NULL,
        label DOUBLE PRECISION NOT NULL,
        kind TEXT NOT NULL,
        recorded_at DOUBLE PRECISION NOT NULL
    );
    CREATE INDEX feedback_by_collection ON feedback(collection, seq);
    CREATE TABLE versions (
        collection TEXT NOT NULL REFERENCES collections(name) ON DELETE CASCADE,
        generation BIGINT NOT NULL,
        nonce TEXT NOT NULL,
        PRIMARY KEY (collection, generation)
    );
    CREATE TABLE log_consumers (
        collection TEXT NOT NULL REFERENCES collections(name) ON DELETE CASCADE,
        name TEXT NOT NULL,
        generation BIGINT NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (collection, name)
    );
    """,
    # when each change was committed: compaction keeps recent changes for processes that lag (``log_retention_s``)
    "ALTER TABLE change_log ADD COLUMN committed_at DOUBLE PRECISION NOT NULL DEFAULT extract(epoch FROM now())",
]


def documents_exist(url: str) -> bool:
    """Whether the database ``url`` names can be reached and its schema holds this store's tables (made by
    ``PostgresStore``); nothing is created."""
    conninfo, schema = split_url(url)
    try:
        with psycopg.connect(conninfo, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S) as conn:
            found = conn.execute("SELECT to_regclass(%s)", (f'"{schema}".waypost_schema',)).fetchone()
            if found is None or found[0] is None:
                return False
            query = sql.SQL("SELECT 1 FROM {}.waypost_schema WHERE component = %s").format(sql.Identifier(schema))
            return conn.execute(query, (COMPONENT,)).fetchone() is not None
    except psycopg.OperationalError as exc:
        logger.info("PostgreSQL at %s cannot be reached: %s", redact(url), exc)
        return False


class PgStoreBase:
    """Transactions on the store's database and the collection-row reads every part of the store needs."""

    db: PgDatabase
    location: str
    _closed: bool

    def _missing(self, name: str) -> CollectionNotFoundError:
        return CollectionNotFoundError(f"no collection named {name!r} in {self.location}")

    def _check_open(self) -> None:
        if self._closed:
            raise WaypostError(f"the store {self.location} is closed")

    def _read(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        """``work`` in one REPEATABLE READ, read-only transaction (one committed state for every statement);
        retried when the server restarts."""

        def read(conn: psycopg.Connection[Any]) -> T:
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            return work(conn)

        self._check_open()
        return self.db.run(read, retry=True)

    def _write(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        """``work`` in one READ COMMITTED transaction; never retried (it may have committed)."""
        self._check_open()
        return self.db.run(work, retry=False)

    def _lock(self, conn: psycopg.Connection[Any], name: str) -> tuple[str, int, int, int]:
        """Take the collection's row lock, which writers of one collection queue on (``NO KEY``: foreign-key
        checks of feedback and consumers do not wait for it): (uid, dimension, generation, log floor)."""
        row = conn.execute(
            "SELECT uid, embed_dim, generation, log_floor FROM collections WHERE name = %s FOR NO KEY UPDATE", (name,)
        ).fetchone()
        if row is None:
            raise self._missing(name)
        return str(row[0]), int(row[1]), int(row[2]), int(row[3])

    def _head(self, conn: psycopg.Connection[Any], name: str) -> tuple[str, int, int, str]:
        """(uid, generation, log floor, version) as this transaction sees them."""
        row = conn.execute(
            "SELECT uid, generation, log_floor, nonce FROM collections WHERE name = %s", (name,)
        ).fetchone()
        if row is None:
            raise self._missing(name)
        return str(row[0]), int(row[1]), int(row[2]), make_version(str(row[0]), int(row[1]), str(row[3]))

    def _read_dimension(self, conn: psycopg.Connection[Any], name: str) -> int:
        row = conn.execute("SELECT embed_dim FROM collections WHERE name = %s", (name,)).fetchone()
        if row is None:
            raise self._missing(name)
        return int(row[0])
