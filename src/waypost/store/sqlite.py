"""SQLite system of record: one file, WAL mode, one transaction per write batch."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

from waypost.base import ChunkSnapshot, CollectionInfo, IngestItem, StoredChunk
from waypost.errors import CollectionNotFoundError, WaypostError
from waypost.types import Chunk, Document

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
    UNIQUE (collection, document_id, idx),
    FOREIGN KEY (collection, document_id) REFERENCES documents(collection, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS chunks_by_collection ON chunks(collection, row_id);
"""


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA busy_timeout=30000")
    return conn


def index_text(title: str, section: Sequence[str], text: str) -> str:
    """What indexes see for a chunk: its document title and headings give it context."""
    parts = [p for p in (title, *section) if p]
    return "\n".join([*dict.fromkeys(parts), text])


class SQLiteStore:
    """A ``DocumentStore`` in one SQLite file. Readers never block on a writer (WAL)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = _connect(self.path)
        self._lock = threading.RLock()
        with self._lock:
            self._conn.executescript(SCHEMA)
            columns = {r[1] for r in self._conn.execute("PRAGMA table_info(collections)")}
            if "uid" not in columns:  # stores made before collections had a uid
                self._conn.execute("ALTER TABLE collections ADD COLUMN uid TEXT")
            self._conn.execute("UPDATE collections SET uid = lower(hex(randomblob(8))) WHERE uid IS NULL")

    # -- collections -------------------------------------------------------------------------
    def create_collection(self, name: str, embed_model: str, embed_dim: int) -> CollectionInfo:
        if not name or "/" in name or name.startswith("."):
            raise WaypostError(f"invalid collection name {name!r}")
        with self._lock:
            self._conn.execute(
                "INSERT OR IGNORE INTO collections(name, embed_model, embed_dim, created_at, uid) VALUES (?,?,?,?,?)",
                (name, embed_model, embed_dim, time.time(), uuid.uuid4().hex[:16]),
            )
        return self.collection(name)

    def collection(self, name: str) -> CollectionInfo:
        with self._lock:
            row = self._conn.execute(
                "SELECT name, embed_model, embed_dim, generation FROM collections WHERE name=?", (name,)
            ).fetchone()
            if row is None:
                raise CollectionNotFoundError(f"no collection named {name!r} in {self.path}")
            docs = self._conn.execute("SELECT count(*) FROM documents WHERE collection=?", (name,)).fetchone()[0]
            chunks = self._conn.execute("SELECT count(*) FROM chunks WHERE collection=?", (name,)).fetchone()[0]
        return CollectionInfo(row[0], row[1], int(row[2]), int(row[3]), int(docs), int(chunks))

    def collections(self) -> list[CollectionInfo]:
        with self._lock:
            names = [r[0] for r in self._conn.execute("SELECT name FROM collections ORDER BY name")]
        return [self.collection(n) for n in names]

    def drop_collection(self, name: str) -> None:
        self.collection(name)
        with self._lock, self._transaction():
            self._conn.execute("DELETE FROM chunks WHERE collection=?", (name,))
            self._conn.execute("DELETE FROM documents WHERE collection=?", (name,))
            self._conn.execute("DELETE FROM collections WHERE name=?", (name,))

    def generation(self, name: str) -> int:
        with self._lock:
            row = self._conn.execute("SELECT generation FROM collections WHERE name=?", (name,)).fetchone()
        if row is None:
            raise CollectionNotFoundError(f"no collection named {name!r} in {self.path}")
        return int(row[0])

    def version(self, name: str) -> str:
        """Unique per collection incarnation and generation: a dropped and recreated collection never repeats one."""
        with self._lock:
            row = self._conn.execute("SELECT uid, generation FROM collections WHERE name=?", (name,)).fetchone()
        if row is None:
            raise CollectionNotFoundError(f"no collection named {name!r} in {self.path}")
        return f"{row[0]}-g{row[1]}"

    # -- writes ------------------------------------------------------------------------------
    def _transaction(self, immediate: bool = True) -> _Transaction:
        return _Transaction(self._conn, immediate)

    def document_hashes(self, collection: str, ids: Iterable[str]) -> dict[str, str]:
        wanted = list(ids)
        found: dict[str, str] = {}
        with self._lock:
            for start in range(0, len(wanted), 500):
                part = wanted[start : start + 500]
                marks = ",".join("?" * len(part))
                rows = self._conn.execute(
                    f"SELECT id, hash FROM documents WHERE collection=? AND id IN ({marks})", (collection, *part)
                )
                found.update({r[0]: r[1] for r in rows})
        return found

    def write(self, collection: str, items: Sequence[IngestItem]) -> int:
        info = self.collection(collection)
        for item in items:
            if item.embeddings.shape != (len(item.chunks), info.embed_dim):
                raise WaypostError(
                    f"document {item.document.id!r}: embeddings {item.embeddings.shape} do not match "
                    f"{len(item.chunks)} chunks of dimension {info.embed_dim}"
                )
        now = time.time()
        with self._lock, self._transaction():
            for item in items:
                doc = item.document
                self._conn.execute("DELETE FROM chunks WHERE collection=? AND document_id=?", (collection, doc.id))
                self._conn.execute(
                    "INSERT OR REPLACE INTO documents(collection,id,title,text,metadata,source,hash,added_at)"
                    " VALUES (?,?,?,?,?,?,?,?)",
                    (
                        collection,
                        doc.id,
                        doc.title,
                        doc.text,
                        json.dumps(doc.metadata, ensure_ascii=False),
                        doc.source,
                        item.stored_hash,
                        now,
                    ),
                )
                self._conn.executemany(
                    "INSERT INTO chunks(collection,document_id,idx,text,start,end,token_count,section,embedding)"
                    " VALUES (?,?,?,?,?,?,?,?,?)",
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
                        )
                        for c, vec in zip(item.chunks, item.embeddings, strict=True)
                    ],
                )
            if items:
                self._bump(collection)
        return len(items)

    def delete(self, collection: str, ids: Iterable[str]) -> int:
        self.collection(collection)
        removed = 0
        with self._lock, self._transaction():
            for doc_id in ids:
                self._conn.execute("DELETE FROM chunks WHERE collection=? AND document_id=?", (collection, doc_id))
                cur = self._conn.execute("DELETE FROM documents WHERE collection=? AND id=?", (collection, doc_id))
                removed += cur.rowcount
            if removed:
                self._bump(collection)
        return removed

    def _bump(self, collection: str) -> None:
        self._conn.execute("UPDATE collections SET generation = generation + 1 WHERE name=?", (collection,))

    # -- reads -------------------------------------------------------------------------------
    @staticmethod
    def _document(row: tuple[str, str, str, str, str]) -> Document:
        return Document(id=row[0], title=row[1], text=row[2], metadata=json.loads(row[3]), source=row[4])

    def get_document(self, collection: str, doc_id: str) -> Document | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT id,title,text,metadata,source FROM documents WHERE collection=? AND id=?",
                (collection, doc_id),
            ).fetchone()
        return None if row is None else self._document(row)

    def iter_documents(self, collection: str) -> Iterator[Document]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT id,title,text,metadata,source FROM documents WHERE collection=? ORDER BY id", (collection,)
            ).fetchall()
        for row in rows:
            yield self._document(row)

    def chunks_by_row(self, collection: str, row_ids: Sequence[int]) -> list[StoredChunk]:
        if not row_ids:
            return []
        marks = ",".join("?" * len(row_ids))
        with self._lock:
            rows = self._conn.execute(
                "SELECT c.row_id, c.document_id, c.idx, c.text, c.start, c.end, c.token_count, c.section,"
                " d.title, d.source, d.metadata FROM chunks c JOIN documents d"
                " ON d.collection = c.collection AND d.id = c.document_id"
                f" WHERE c.collection=? AND c.row_id IN ({marks})",
                (collection, *[int(r) for r in row_ids]),
            ).fetchall()
        by_row = {
            int(r[0]): StoredChunk(
                row_id=int(r[0]),
                chunk=Chunk(r[1], int(r[2]), r[3], int(r[4]), int(r[5]), int(r[6]), tuple(json.loads(r[7]))),
                title=r[8],
                source=r[9],
                metadata=json.loads(r[10]),
            )
            for r in rows
        }
        return [by_row[int(r)] for r in row_ids if int(r) in by_row]

    def snapshot(self, collection: str) -> ChunkSnapshot:
        info = self.collection(collection)
        with self._lock, self._transaction(immediate=False):
            generation = self.generation(collection)
            version = self.version(collection)
            rows = self._conn.execute(
                "SELECT c.row_id, c.document_id, c.text, c.section, c.embedding, d.title, d.metadata"
                " FROM chunks c JOIN documents d ON d.collection = c.collection AND d.id = c.document_id"
                " WHERE c.collection=? ORDER BY c.row_id",
                (collection,),
            ).fetchall()
        row_ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        if rows:
            emb = np.frombuffer(b"".join(r[4] for r in rows), dtype=np.float32).reshape(len(rows), info.embed_dim)
        else:
            emb = np.zeros((0, info.embed_dim), dtype=np.float32)
        meta_cache: dict[str, dict[str, object]] = {}
        bodies: dict[str, list[str]] = {}
        metadata = []
        for r in rows:
            if r[1] not in meta_cache:
                meta_cache[r[1]] = json.loads(r[6])
                bodies[r[1]] = [r[5]] if r[5] else []
            bodies[r[1]].append(r[2])
            metadata.append(meta_cache[r[1]])
        return ChunkSnapshot(
            generation=generation,
            version=version,
            row_ids=row_ids,
            document_ids=[r[1] for r in rows],
            index_texts=[index_text(r[5], json.loads(r[3]), r[2]) for r in rows],
            embeddings=emb,
            metadata=metadata,
            document_texts=["\n".join(parts) for parts in bodies.values()],
            chunk_texts=[r[2] for r in rows],
            titles={r[1]: r[5] for r in rows},
        )

    def close(self) -> None:
        with self._lock:
            self._conn.close()


class _Transaction:
    """BEGIN [IMMEDIATE] ... COMMIT, rolled back on any exception."""

    def __init__(self, conn: sqlite3.Connection, immediate: bool) -> None:
        self._conn = conn
        self._begin = "BEGIN IMMEDIATE" if immediate else "BEGIN"

    def __enter__(self) -> None:
        self._conn.execute(self._begin)

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
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
            except sqlite3.Error:
                pass  # SQLite already rolled back; the original error is the one that matters
