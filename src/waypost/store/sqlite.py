"""SQLite system of record: one file, WAL mode, one transaction per write batch, and a change log.

Every write and delete records, in its own transaction, which rows of which documents it removed and
added at which generation (``change_log``). Derived structures catch up from that log; once every
registered consumer has applied a generation, the entries up to it are compacted away.

Threads: each thread reads through its own connection (WAL readers never wait for the writer); writes
go through one connection behind one lock, so a long ingest batch never stalls a query."""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
import uuid
import weakref
from collections.abc import Iterable, Iterator, Sequence
from datetime import date, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from waypost.base import (
    ChangeSet,
    ChunkSnapshot,
    CollectionInfo,
    Feedback,
    IngestItem,
    StoredChunk,
    make_version,
    version_incarnation,
)
from waypost.errors import CollectionNotFoundError, WaypostError
from waypost.types import Chunk, Document, index_text
from waypost.validation import id_list

logger = logging.getLogger("waypost.store")


def _json_value(value: Any) -> Any:
    """Metadata values JSON lacks: ``date``/``datetime`` are stored as ISO strings (the index reads them as dates)."""
    if isinstance(value, (date, datetime)):
        return value.isoformat()
    raise TypeError(f"metadata value {value!r} of type {type(value).__name__} cannot be stored")


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


def _nonce() -> str:
    """Drawn in every committing write: what makes a version name one write history."""
    return uuid.uuid4().hex[:12]


def _ids_blob(ids: Sequence[int]) -> bytes:
    return np.asarray(ids, dtype=np.int64).tobytes()


def _ids(blob: bytes) -> npt.NDArray[np.int64]:
    return np.frombuffer(blob, dtype=np.int64)


class SQLiteStore:
    """A ``DocumentStore`` in one SQLite file. Readers never block on a writer (WAL)."""

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

    # -- collections -------------------------------------------------------------------------
    def create_collection(self, name: str, embed_model: str, embed_dim: int) -> CollectionInfo:
        if not name or "/" in name or name.startswith("."):
            raise WaypostError(f"invalid collection name {name!r}")
        with self._write_lock, _Transaction(self._writer):
            nonce = _nonce()
            created = self._writer.execute(
                "INSERT OR IGNORE INTO collections(name, embed_model, embed_dim, created_at, uid, log_floor, nonce)"
                " VALUES (?,?,?,?,?,0,?)",
                (name, embed_model, embed_dim, time.time(), uuid.uuid4().hex[:16], nonce),
            ).rowcount
            if created:
                self._writer.execute(
                    "INSERT INTO versions(collection, generation, nonce) VALUES (?,0,?)", (name, nonce)
                )
        return self.collection(name)

    def collection(self, name: str) -> CollectionInfo:
        conn = self._conn
        with _Transaction(conn, immediate=False):
            row = conn.execute(
                "SELECT name, embed_model, embed_dim, generation, description FROM collections WHERE name=?", (name,)
            ).fetchone()
            if row is None:
                raise CollectionNotFoundError(f"no collection named {name!r} in {self.path}")
            docs = conn.execute("SELECT count(*) FROM documents WHERE collection=?", (name,)).fetchone()[0]
            chunks = conn.execute("SELECT count(*) FROM chunks WHERE collection=?", (name,)).fetchone()[0]
        return CollectionInfo(row[0], row[1], int(row[2]), int(row[3]), int(docs), int(chunks), str(row[4]))

    def collections(self) -> list[CollectionInfo]:
        names = [r[0] for r in self._conn.execute("SELECT name FROM collections ORDER BY name")]
        return [self.collection(n) for n in names]

    def drop_collection(self, name: str) -> None:
        self.collection(name)
        with self._write_lock, _Transaction(self._writer):
            for table, column in (("chunks", "collection"), ("documents", "collection"), ("change_log", "collection")):
                self._writer.execute(f"DELETE FROM {table} WHERE {column}=?", (name,))
            self._writer.execute("DELETE FROM log_consumers WHERE collection=?", (name,))
            self._writer.execute("DELETE FROM versions WHERE collection=?", (name,))
            self._writer.execute("DELETE FROM feedback WHERE collection=?", (name,))
            self._writer.execute("DELETE FROM collections WHERE name=?", (name,))

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

    def generation(self, name: str) -> int:
        return self._head(self._conn, name)[1]

    def language_counts(self, name: str) -> dict[str, int]:
        """Chunks per stored language."""
        rows = self._conn.execute("SELECT language, count(*) FROM chunks WHERE collection=? GROUP BY language", (name,))
        return {str(r[0]): int(r[1]) for r in rows}

    def collection_language(self, name: str) -> str:
        row = self._conn.execute("SELECT language FROM collections WHERE name=?", (name,)).fetchone()
        if row is None:
            raise CollectionNotFoundError(f"no collection named {name!r} in {self.path}")
        return str(row[0])

    def set_collection_language(self, name: str, language: str) -> None:
        self._dimension(name)
        with self._write_lock:
            self._writer.execute("UPDATE collections SET language=? WHERE name=?", (language, name))

    def collection_description(self, name: str) -> str:
        row = self._conn.execute("SELECT description FROM collections WHERE name=?", (name,)).fetchone()
        if row is None:
            raise CollectionNotFoundError(f"no collection named {name!r} in {self.path}")
        return str(row[0])

    def set_collection_description(self, name: str, description: str) -> None:
        """What the collection holds, in a sentence or two (collection selectors read it); not a content
        change: the generation stays."""
        self._dimension(name)
        with self._write_lock:
            self._writer.execute("UPDATE collections SET description=? WHERE name=?", (description, name))

    def version(self, name: str) -> str:
        """``<uid>-g<generation>-<nonce>``: unique per incarnation and write history (see ``DocumentStore``)."""
        return self._version(self._conn, name)

    def _version(self, conn: sqlite3.Connection, name: str) -> str:
        row = conn.execute("SELECT uid, generation, nonce FROM collections WHERE name=?", (name,)).fetchone()
        if row is None:
            raise CollectionNotFoundError(f"no collection named {name!r} in {self.path}")
        return make_version(str(row[0]), int(row[1]), str(row[2]))

    def version_at(self, name: str, generation: int) -> str | None:
        conn = self._conn
        with _Transaction(conn, immediate=False):
            uid, head, floor = self._head(conn, name)
            if generation == head:
                return self._version(conn, name)
            if not floor <= generation < head:
                return None
            row = conn.execute(
                "SELECT nonce FROM versions WHERE collection=? AND generation=?", (name, generation)
            ).fetchone()
        return None if row is None else make_version(uid, generation, str(row[0]))

    # -- writes ------------------------------------------------------------------------------
    def document_hashes(self, collection: str, ids: Iterable[str]) -> dict[str, str]:
        wanted = id_list(ids)
        found: dict[str, str] = {}
        conn = self._conn
        for start in range(0, len(wanted), ID_BATCH):
            part = wanted[start : start + ID_BATCH]
            marks = ",".join("?" * len(part))
            rows = conn.execute(
                f"SELECT id, hash FROM documents WHERE collection=? AND id IN ({marks})", (collection, *part)
            )
            found.update({r[0]: r[1] for r in rows})
        return found

    def _document_rows(self, collection: str, doc_id: str) -> list[int]:
        # No ORDER BY: it would make SQLite walk the whole collection by row id instead of this
        # document's entries in the (collection, document_id, idx) index.
        rows = self._writer.execute(
            "SELECT row_id FROM chunks WHERE collection=? AND document_id=?", (collection, doc_id)
        )
        return sorted(int(r[0]) for r in rows)

    def write(self, collection: str, items: Sequence[IngestItem]) -> int:
        dim = self._dimension(collection)
        for item in items:
            if item.embeddings.shape != (len(item.chunks), dim):
                raise WaypostError(
                    f"document {item.document.id!r}: embeddings {item.embeddings.shape} do not match "
                    f"{len(item.chunks)} chunks of dimension {dim}"
                )
        if not items:
            return 0
        now = time.time()
        conn = self._writer
        with self._write_lock, _Transaction(conn):
            generation = self._bump(collection)
            for item in items:
                doc = item.document
                removed = self._document_rows(collection, doc.id)
                existed = conn.execute(
                    "SELECT 1 FROM documents WHERE collection=? AND id=?", (collection, doc.id)
                ).fetchone()
                conn.execute("DELETE FROM chunks WHERE collection=? AND document_id=?", (collection, doc.id))
                conn.execute(
                    "INSERT OR REPLACE INTO documents(collection,id,title,text,metadata,source,hash,added_at,language)"
                    " VALUES (?,?,?,?,?,?,?,?,?)",
                    (
                        collection,
                        doc.id,
                        doc.title,
                        doc.text,
                        json.dumps(doc.metadata, ensure_ascii=False, default=_json_value),
                        doc.source,
                        item.stored_hash,
                        now,
                        doc.language,
                    ),
                )
                conn.executemany(
                    "INSERT INTO chunks(collection,document_id,idx,text,start,end,token_count,section,embedding,"
                    "language) VALUES (?,?,?,?,?,?,?,?,?,?)",
                    [
                        (
                            collection,
                            doc.id,
                            c.index,
                            c.text,
                            c.start,
                            c.end,
                            c.token_count,
                            json.dumps(list(c.section), ensure_ascii=False),
                            np.ascontiguousarray(vec, dtype=np.float32).tobytes(),
                            c.language,
                        )
                        for c, vec in zip(item.chunks, item.embeddings, strict=True)
                    ],
                )
                added = self._document_rows(collection, doc.id)
                self._log(collection, generation, doc.id, "replace" if existed else "add", removed, added)
        return len(items)

    def delete(self, collection: str, ids: Iterable[str]) -> int:
        ids = id_list(ids)  # a bare string is refused, not deleted character by character
        self._dimension(collection)
        removed = 0
        conn = self._writer
        with self._write_lock, _Transaction(conn):
            generation: int | None = None
            for doc_id in dict.fromkeys(ids):
                rows = self._document_rows(collection, doc_id)
                conn.execute("DELETE FROM chunks WHERE collection=? AND document_id=?", (collection, doc_id))
                cur = conn.execute("DELETE FROM documents WHERE collection=? AND id=?", (collection, doc_id))
                conn.execute("DELETE FROM feedback WHERE collection=? AND document_id=?", (collection, doc_id))
                if cur.rowcount:
                    generation = generation if generation is not None else self._bump(collection)
                    self._log(collection, generation, doc_id, "delete", rows, [])
                    removed += cur.rowcount
        return removed

    def _bump(self, collection: str) -> int:
        """Move the generation and draw a new nonce: the version now names this write history only."""
        nonce = _nonce()
        self._writer.execute(
            "UPDATE collections SET generation = generation + 1, nonce = ? WHERE name=?", (nonce, collection)
        )
        generation = self._head(self._writer, collection)[1]
        self._writer.execute(
            "INSERT OR REPLACE INTO versions(collection, generation, nonce) VALUES (?,?,?)",
            (collection, generation, nonce),
        )
        return generation

    def _log(
        self, collection: str, generation: int, doc_id: str, op: str, removed: Sequence[int], added: Sequence[int]
    ) -> None:
        self._writer.execute(
            "INSERT INTO change_log(collection, generation, document_id, op, removed_rows, added_rows)"
            " VALUES (?,?,?,?,?,?)",
            (collection, generation, doc_id, op, _ids_blob(removed), _ids_blob(added)),
        )

    # -- the change log ----------------------------------------------------------------------
    def changes(self, collection: str, since: int) -> ChangeSet | None:
        """What changed after generation ``since``; ``None`` when the log no longer reaches back that far."""
        dim = self._dimension(collection)
        conn = self._conn
        with _Transaction(conn, immediate=False):
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
        with self._write_lock, _Transaction(self._writer):
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

    def coverage(self, model: str, scope: str, language: str) -> tuple[float, int, int] | None:
        """A remembered measurement of how well ``model`` serves ``language`` in ``scope`` (a collection's
        uid): (value, samples, chunks of that language when measured)."""
        row = self._conn.execute(
            "SELECT value, samples, chunks FROM language_coverage WHERE model=? AND scope=? AND language=?",
            (model, scope, language),
        ).fetchone()
        return None if row is None else (float(row[0]), int(row[1]), int(row[2]))

    def remember_coverage(self, model: str, scope: str, language: str, value: float, samples: int, chunks: int) -> None:
        with self._write_lock:
            self._writer.execute(
                "INSERT OR REPLACE INTO language_coverage(model, scope, language, value, samples, chunks, measured_at)"
                " VALUES (?,?,?,?,?,?,?)",
                (model, scope, language, value, samples, chunks, time.time()),
            )

    def record_feedback(self, collection: str, entries: Sequence[Feedback]) -> int:
        self.collection(collection)
        with self._write_lock, _Transaction(self._writer):
            self._writer.executemany(
                "INSERT INTO feedback(collection, query, document_id, start, end, label, kind, recorded_at)"
                " VALUES (?,?,?,?,?,?,?,?)",
                [
                    (collection, e.query, e.document_id, e.start, e.end, e.label, e.kind, e.recorded_at or time.time())
                    for e in entries
                ],
            )
        return len(entries)

    def feedback(self, collection: str) -> list[Feedback]:
        rows = self._conn.execute(
            "SELECT query, document_id, start, end, label, kind, recorded_at FROM feedback WHERE collection=?"
            " ORDER BY seq",
            (collection,),
        )
        return [Feedback(str(r[0]), str(r[1]), int(r[2]), int(r[3]), float(r[4]), str(r[5]), float(r[6])) for r in rows]

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

    # -- reads -------------------------------------------------------------------------------
    @staticmethod
    def _document(row: tuple[str, str, str, str, str, str]) -> Document:
        return Document(
            id=row[0], title=row[1], text=row[2], metadata=json.loads(row[3]), source=row[4], language=row[5]
        )

    def get_document(self, collection: str, doc_id: str) -> Document | None:
        row = self._conn.execute(
            "SELECT id,title,text,metadata,source,language FROM documents WHERE collection=? AND id=?",
            (collection, doc_id),
        ).fetchone()
        return None if row is None else self._document(row)

    def iter_documents(self, collection: str) -> Iterator[Document]:
        rows = self._conn.execute(
            "SELECT id,title,text,metadata,source,language FROM documents WHERE collection=? ORDER BY id", (collection,)
        ).fetchall()
        for row in rows:
            yield self._document(row)

    def row_ids_of(self, collection: str, chunks: Sequence[tuple[str, int]]) -> dict[tuple[str, int], int]:
        out: dict[tuple[str, int], int] = {}
        wanted = list(dict.fromkeys((str(doc), int(idx)) for doc, idx in chunks))
        for start in range(0, len(wanted), 400):  # 2 variables each, under SQLite's limit
            part = wanted[start : start + 400]
            pairs = ",".join("(?,?)" for _ in part)
            rows = self._conn.execute(
                f"WITH wanted(d, i) AS (VALUES {pairs}) SELECT c.document_id, c.idx, c.row_id FROM wanted"
                " JOIN chunks c ON c.collection=? AND c.document_id=wanted.d AND c.idx=wanted.i",
                (*[v for pair in part for v in pair], collection),
            ).fetchall()
            out.update({(str(r[0]), int(r[1])): int(r[2]) for r in rows})
        return out

    def chunks_by_row(self, collection: str, row_ids: Sequence[int]) -> list[StoredChunk]:
        if not row_ids:
            return []
        wanted = list(dict.fromkeys(int(r) for r in row_ids))
        rows: list[Any] = []
        conn = self._conn
        with _Transaction(conn, immediate=False):  # one read, however many statements the ids need
            for start in range(0, len(wanted), ID_BATCH):
                part = wanted[start : start + ID_BATCH]
                rows += conn.execute(
                    "SELECT c.row_id, c.document_id, c.idx, c.text, c.start, c.end, c.token_count, c.section,"
                    " d.title, d.source, d.metadata, c.language FROM chunks c JOIN documents d"
                    " ON d.collection = c.collection AND d.id = c.document_id"
                    f" WHERE c.collection=? AND c.row_id IN ({','.join('?' * len(part))})",
                    (collection, *part),
                ).fetchall()
        by_row = {
            int(r[0]): StoredChunk(
                row_id=int(r[0]),
                chunk=Chunk(
                    r[1], int(r[2]), r[3], int(r[4]), int(r[5]), int(r[6]), tuple(json.loads(r[7])), str(r[11])
                ),
                title=r[8],
                source=r[9],
                metadata=json.loads(r[10]),
            )
            for r in rows
        }
        return [by_row[int(r)] for r in row_ids if int(r) in by_row]

    _ROWS = (
        "SELECT c.row_id, c.document_id, c.text, c.section, c.embedding, d.title, d.metadata, c.language, d.language"
        " FROM chunks c JOIN documents d ON d.collection = c.collection AND d.id = c.document_id"
    )

    def _fetch_rows(
        self, conn: sqlite3.Connection, collection: str, row_ids: npt.NDArray[np.int64]
    ) -> list[tuple[object, ...]]:
        """Rows among ``row_ids`` that still exist. Row ids only grow, so one range scan finds them."""
        rows = conn.execute(
            self._ROWS + " WHERE c.collection=? AND c.row_id BETWEEN ? AND ? ORDER BY c.row_id",
            (collection, int(row_ids[0]), int(row_ids[-1])),
        ).fetchall()
        wanted = set(row_ids.tolist())
        return [r for r in rows if r[0] in wanted]

    def snapshot(self, collection: str) -> ChunkSnapshot:
        dim = self._dimension(collection)
        conn = self._conn
        with _Transaction(conn, immediate=False):
            generation = self._head(conn, collection)[1]
            version = self._version(conn, collection)
            count = int(conn.execute("SELECT count(*) FROM chunks WHERE collection=?", (collection,)).fetchone()[0])
            cursor = conn.execute(self._ROWS + " WHERE c.collection=? ORDER BY c.row_id", (collection,))
            # read in batches inside the one read transaction: the rows are never all held twice
            return self._snapshot_of(
                iter(lambda: cursor.fetchmany(SNAPSHOT_BATCH), []), count, generation, version, dim
            )

    @staticmethod
    def _snapshot_of(
        batches: Iterable[Sequence[Sequence[Any]]], count: int, generation: int, version: str, dim: int
    ) -> ChunkSnapshot:
        """A snapshot of ``count`` rows (``_ROWS`` columns, in row order) that arrive in ``batches``."""
        row_ids = np.empty(count, dtype=np.int64)
        emb = np.empty((count, dim), dtype=np.float32)
        meta_cache: dict[str, dict[str, object]] = {}
        bodies: dict[str, list[str]] = {}
        doc_languages: dict[str, str] = {}
        titles: dict[str, str] = {}
        document_ids: list[str] = []
        index_texts: list[str] = []
        chunk_texts: list[str] = []
        languages: list[str] = []
        sections: list[tuple[str, ...]] = []
        metadata: list[dict[str, object]] = []
        n = 0
        for rows in batches:
            if n + len(rows) > count:
                raise WaypostError(f"the snapshot read more than the {count} rows it counted")
            row_ids[n : n + len(rows)] = [r[0] for r in rows]
            if rows:
                emb[n : n + len(rows)] = np.frombuffer(b"".join(r[4] for r in rows), dtype=np.float32).reshape(-1, dim)
            n += len(rows)
            for r in rows:
                doc_id, text, title = r[1], r[2], r[5]
                if doc_id not in meta_cache:
                    meta_cache[doc_id] = json.loads(r[6])
                    bodies[doc_id] = [title] if title else []
                    doc_languages[doc_id] = str(r[8])
                    titles[doc_id] = title
                bodies[doc_id].append(text)
                section = tuple(json.loads(r[3]))
                metadata.append(meta_cache[doc_id])
                document_ids.append(doc_id)
                index_texts.append(index_text(title, section, text))
                chunk_texts.append(text)
                languages.append(str(r[7]))
                sections.append(section)
        if n != count:
            raise WaypostError(f"the snapshot read {n} rows but counted {count}")
        return ChunkSnapshot(
            generation=generation,
            version=version,
            row_ids=row_ids,
            document_ids=document_ids,
            index_texts=index_texts,
            embeddings=emb,
            metadata=metadata,
            document_texts=["\n".join(parts) for parts in bodies.values()],
            chunk_texts=chunk_texts,
            titles=titles,
            languages=languages,
            document_languages=list(doc_languages.values()),
            sections=sections,
        )

    # -- purging ---------------------------------------------------------------------------
    def chunk_texts(
        self, collection: str | None = None, documents: Iterable[str] | None = None
    ) -> Iterator[tuple[int, str, str]]:
        """(row id, chunk text, index text) of every chunk of the store, of one collection, or of some of
        its documents; read in batches."""
        query = (
            "SELECT c.row_id, c.text, c.section, d.title FROM chunks c JOIN documents d"
            " ON d.collection = c.collection AND d.id = c.document_id"
        )
        batches: list[tuple[str, tuple[object, ...]]]
        if collection is None:
            batches = [(query + " WHERE c.row_id > ? ORDER BY c.row_id LIMIT 2000", ())]
        elif documents is None:
            batches = [(query + " WHERE c.collection=? AND c.row_id > ? ORDER BY c.row_id LIMIT 2000", (collection,))]
        else:
            ids = list(dict.fromkeys(documents))
            batches = [
                (
                    query + f" WHERE c.collection=? AND c.document_id IN ({','.join('?' * len(ids[i : i + 500]))})"
                    " AND c.row_id > ? ORDER BY c.row_id LIMIT 2000",
                    (collection, *ids[i : i + 500]),
                )
                for i in range(0, len(ids), 500)
            ]
        for sql, params in batches:
            last = -1
            while True:
                rows = self._conn.execute(sql, (*params, last)).fetchall()
                for r in rows:
                    yield int(r[0]), str(r[1]), index_text(str(r[3]), json.loads(r[2]), str(r[1]))
                if len(rows) < 2000:
                    break
                last = int(rows[-1][0])

    def live_texts(self, texts: Iterable[str]) -> set[str]:
        """Those of ``texts`` that some chunk of any collection still holds."""
        return {str(v) for v in self._present_in_chunks("text", list(dict.fromkeys(texts)))}

    def live_rows(self, row_ids: Iterable[int]) -> set[int]:
        """Those of ``row_ids`` that are chunks of any collection (row ids are never reused)."""
        return {int(v) for v in self._present_in_chunks("row_id", sorted({int(r) for r in row_ids}))}

    def _present_in_chunks(self, column: str, values: Sequence[object]) -> set[Any]:
        """Those of ``values`` that the chunks table holds in ``column`` (a fixed name), asked in batches."""
        found: set[Any] = set()
        for start in range(0, len(values), ID_BATCH):
            part = values[start : start + ID_BATCH]
            marks = ",".join("?" * len(part))
            rows = self._conn.execute(f"SELECT DISTINCT {column} FROM chunks WHERE {column} IN ({marks})", part)
            found.update(r[0] for r in rows)
        return found

    def compact(self, vacuum: bool = False) -> bool:
        """Leave no deleted content on disk: ``vacuum`` rewrites the file (pages freed before secure_delete
        was on), then the WAL is checkpointed and truncated; False when a reader kept it from truncating."""
        with self._write_lock:
            if vacuum:
                self._writer.execute("VACUUM")
            busy = self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        return not (busy and int(busy[0]))

    def close(self) -> None:
        with self._write_lock, self._connections_lock:
            self._closed = True
            for conn in self._connections:
                _close_quietly(conn)
            self._connections.clear()


class _ThreadConnection:
    """Held in a thread-local: when the thread ends it is collected, and its connection closed."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn


def _release(conn: sqlite3.Connection, connections: list[sqlite3.Connection], lock: threading.Lock) -> None:
    with lock:
        if conn in connections:
            connections.remove(conn)
    _close_quietly(conn)


def _close_quietly(conn: sqlite3.Connection) -> None:
    """Close a connection we are done with; a failure there loses nothing (every transaction ended), so
    it is logged at debug level and not raised."""
    try:
        conn.close()
    except sqlite3.Error as exc:
        logger.debug("closing a store connection failed: %s", exc)


class _Transaction:
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
