"""The SQLite store's schema and its migrations, its connections (one per reading thread, one writer behind a
lock) and transactions: what every part of ``SQLiteStore`` (in ``waypost.store.sqlite``) shares."""

from __future__ import annotations

import logging
import sqlite3
import threading
import weakref
from pathlib import Path

from waypost.base import make_version
from waypost.errors import CollectionNotFoundError, WaypostError

__all__ = [
    "ID_BATCH",
    "MAX_VARIABLES",
    "SCHEMA",
    "SNAPSHOT_BATCH",
    "SQLiteStoreBase",
    "Transaction",
    "close_quietly",
]

logger = logging.getLogger("waypost.store")


SCHEMA = """
CREATE TABLE IF NOT EXISTS collections (
    name TEXT PRIMARY KEY,
    embed_model TEXT NOT NULL,
    embed_dim INTEGER NOT NULL,
    generation INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS documents (
    collection TEXT NOT NULL REFERENCES collections(name) ON DELETE CASCADE,
    id TEXT NOT NULL,
    title TEXT NOT NULL,
    text TEXT NOT NULL,
    metadata TEXT NOT NULL,
    source TEXT NOT NULL,
    hash TEXT NOT NULL,
    added_at REAL NOT NULL,
    language TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (collection, id)
);
CREATE TABLE IF NOT EXISTS chunks (
    row_id INTEGER PRIMARY KEY AUTOINCREMENT,
    collection TEXT NOT NULL,
    document_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    text TEXT NOT NULL,
    start INTEGER NOT NULL,
    end INTEGER NOT NULL,
    token_count INTEGER NOT NULL,
    section TEXT NOT NULL,
    embedding BLOB NOT NULL,
    language TEXT NOT NULL DEFAULT '',
    UNIQUE (collection, document_id, idx),
    FOREIGN KEY (collection, document_id) REFERENCES documents(collection, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS chunks_by_collection ON chunks(collection, row_id);
CREATE TABLE IF NOT EXISTS change_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    collection TEXT NOT NULL,
    generation INTEGER NOT NULL,
    document_id TEXT NOT NULL,
    op TEXT NOT NULL,
    removed_rows BLOB NOT NULL,
    added_rows BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS change_log_by_generation ON change_log(collection, generation);
CREATE TABLE IF NOT EXISTS language_coverage (
    model TEXT NOT NULL,
    scope TEXT NOT NULL,
    language TEXT NOT NULL,
    value REAL NOT NULL,
    samples INTEGER NOT NULL,
    chunks INTEGER NOT NULL,
    measured_at REAL NOT NULL,
    PRIMARY KEY (model, scope, language)
);
CREATE TABLE IF NOT EXISTS feedback (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    collection TEXT NOT NULL,
    query TEXT NOT NULL,
    document_id TEXT NOT NULL,
    start INTEGER NOT NULL,
    end INTEGER NOT NULL,
    label REAL NOT NULL,
    kind TEXT NOT NULL,
    recorded_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS feedback_by_collection ON feedback(collection, seq);
CREATE TABLE IF NOT EXISTS versions (
    collection TEXT NOT NULL,
    generation INTEGER NOT NULL,
    nonce TEXT NOT NULL,
    PRIMARY KEY (collection, generation)
);
CREATE TABLE IF NOT EXISTS log_consumers (
    collection TEXT NOT NULL,
    name TEXT NOT NULL,
    generation INTEGER NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (collection, name)
);
"""


MAX_VARIABLES = 32_766  # SQLite's default SQLITE_MAX_VARIABLE_NUMBER
ID_BATCH = 500  # ids bound per statement: far under that limit
SNAPSHOT_BATCH = 2048  # rows fetched at a time while a snapshot is read


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA busy_timeout=30000")
    # SQLite's default bound on variables per statement, even where a build allows more: every statement
    # here is batched under it, and the store behaves the same on every platform
    conn.setlimit(
        sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, min(MAX_VARIABLES, conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER))
    )
    conn.execute("PRAGMA secure_delete=ON")  # deleted text is zeroed, not left in free pages
    return conn


class SQLiteStoreBase:
    """The store's file, schema and connections, and the collection-row reads every part of it needs."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._write_lock = threading.RLock()
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._connections_lock = threading.Lock()
        self._closed = False
        self._writer = self._new_connection()
        with self._write_lock:
            self._writer.executescript(SCHEMA)
            columns = {r[1] for r in self._writer.execute("PRAGMA table_info(collections)")}
            if "uid" not in columns:  # stores made before collections had a uid
                self._writer.execute("ALTER TABLE collections ADD COLUMN uid TEXT")
            if "language" not in columns:
                self._writer.execute("ALTER TABLE collections ADD COLUMN language TEXT NOT NULL DEFAULT ''")
            for table in ("documents", "chunks"):  # stores made before languages: "" until re-ingested
                if "language" not in {r[1] for r in self._writer.execute(f"PRAGMA table_info({table})")}:
                    self._writer.execute(f"ALTER TABLE {table} ADD COLUMN language TEXT NOT NULL DEFAULT ''")
            if "log_floor" not in columns:  # stores made before the change log: it starts now
                self._writer.execute("ALTER TABLE collections ADD COLUMN log_floor INTEGER NOT NULL DEFAULT 0")
                self._writer.execute("UPDATE collections SET log_floor = generation")
            if "nonce" not in columns:  # stores made before versions carried a per-commit nonce
                self._writer.execute("ALTER TABLE collections ADD COLUMN nonce TEXT NOT NULL DEFAULT ''")
            if "description" not in columns:  # stores made before collections had a description
                self._writer.execute("ALTER TABLE collections ADD COLUMN description TEXT NOT NULL DEFAULT ''")
            self._writer.execute("UPDATE collections SET uid = lower(hex(randomblob(8))) WHERE uid IS NULL")
            self._writer.execute("UPDATE collections SET nonce = lower(hex(randomblob(8))) WHERE nonce = ''")

    def _new_connection(self) -> sqlite3.Connection:
        if self._closed:
            raise WaypostError(f"the store {self.path} is closed")
        conn = _connect(self.path)
        with self._connections_lock:
            self._connections.append(conn)
        return conn

    @property
    def _conn(self) -> sqlite3.Connection:
        """This thread's reading connection; it is closed when the thread ends."""
        if self._closed:
            raise WaypostError(f"the store {self.path} is closed")
        holder: _ThreadConnection | None = getattr(self._local, "holder", None)
        if holder is None:
            conn = self._new_connection()
            holder = _ThreadConnection(conn)
            weakref.finalize(holder, _release, conn, self._connections, self._connections_lock)
            self._local.holder = holder
        return holder.conn

    def _head(self, conn: sqlite3.Connection, name: str) -> tuple[str, int, int]:
        row = conn.execute("SELECT uid, generation, log_floor FROM collections WHERE name=?", (name,)).fetchone()
        if row is None:
            raise CollectionNotFoundError(f"no collection named {name!r} in {self.path}")
        return str(row[0]), int(row[1]), int(row[2])

    def _dimension(self, name: str) -> int:
        """The collection's vector dimension (raises if it does not exist); cheaper than ``collection()``."""
        row = self._conn.execute("SELECT embed_dim FROM collections WHERE name=?", (name,)).fetchone()
        if row is None:
            raise CollectionNotFoundError(f"no collection named {name!r} in {self.path}")
        return int(row[0])

    def _version(self, conn: sqlite3.Connection, name: str) -> str:
        row = conn.execute("SELECT uid, generation, nonce FROM collections WHERE name=?", (name,)).fetchone()
        if row is None:
            raise CollectionNotFoundError(f"no collection named {name!r} in {self.path}")
        return make_version(str(row[0]), int(row[1]), str(row[2]))


class _ThreadConnection:
    """Held in a thread-local: when the thread ends it is collected, and its connection closed."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn


def _release(conn: sqlite3.Connection, connections: list[sqlite3.Connection], lock: threading.Lock) -> None:
    with lock:
        if conn in connections:
            connections.remove(conn)
    close_quietly(conn)


def close_quietly(conn: sqlite3.Connection) -> None:
    """Close a connection we are done with; a failure there loses nothing (every transaction ended), so
    it is logged at debug level and not raised."""
    try:
        conn.close()
    except sqlite3.Error as exc:
        logger.debug("closing a store connection failed: %s", exc)


class Transaction:
    """BEGIN [IMMEDIATE] ... COMMIT, rolled back on any exception. Nested use on one connection is a no-op."""

    def __init__(self, conn: sqlite3.Connection, immediate: bool = True) -> None:
        self._conn = conn
        self._begin = "BEGIN IMMEDIATE" if immediate else "BEGIN"
        self._owner = False

    def __enter__(self) -> None:
        if not self._conn.in_transaction:
            self._conn.execute(self._begin)
            self._owner = True

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if not self._owner:
            return
        if exc_type is None:
            try:
                self._conn.execute("COMMIT")
                return
            except sqlite3.Error:
                self._rollback()  # never leave the connection inside a failed transaction
                raise
        self._rollback()

    def _rollback(self) -> None:
        if self._conn.in_transaction:
            try:
                self._conn.execute("ROLLBACK")
            except sqlite3.Error as exc:  # SQLite already rolled back; the original error is the one that matters
                logger.debug("rollback after a failed transaction: %s", exc)
