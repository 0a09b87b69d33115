"""SQLite system of record: one file, WAL mode, one transaction per write batch, and a change log.

Every write and delete records, in its own transaction, which rows of which documents it removed and
added at which generation (``change_log``). Derived structures catch up from that log; once every
registered consumer has applied a generation, the entries up to it are compacted away.

Threads: each thread reads through its own connection (WAL readers never wait for the writer); writes
go through one connection behind one lock, so a long ingest batch never stalls a query.

Its parts: the schema, connections and transactions (``sqlite_schema``), chunk-row reads and snapshots
(``sqlite_rows``), the change log's reads and compaction (``sqlite_log``); collections, writes, documents,
coverage and feedback here."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from datetime import date, datetime
from typing import Any

import numpy as np

from waypost.base import CollectionInfo, Feedback, IngestItem
from waypost.errors import CollectionNotFoundError, WaypostError
from waypost.store.sqlite_log import ChangeLog
from waypost.store.sqlite_schema import ID_BATCH, Transaction, close_quietly
from waypost.types import Document
from waypost.validation import id_list

__all__ = ["SQLiteStore"]


def _json_value(value: Any) -> Any:
    """Metadata values JSON lacks: ``date``/``datetime`` are stored as ISO strings (the index reads them as dates)."""
    if isinstance(value, (date, datetime)):
        return value.isoformat()
    raise TypeError(f"metadata value {value!r} of type {type(value).__name__} cannot be stored")


def _nonce() -> str:
    """Drawn in every committing write: what makes a version name one write history."""
    return uuid.uuid4().hex[:12]


def _ids_blob(ids: Sequence[int]) -> bytes:
    return np.asarray(ids, dtype=np.int64).tobytes()


class SQLiteStore(ChangeLog):
    """A ``DocumentStore`` in one SQLite file. Readers never block on a writer (WAL)."""

    # -- collections -------------------------------------------------------------------------
    def create_collection(self, name: str, embed_model: str, embed_dim: int) -> CollectionInfo:
        if not name or "/" in name or name.startswith("."):
            raise WaypostError(f"invalid collection name {name!r}")
        with self._write_lock, Transaction(self._writer):
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
        with Transaction(conn, immediate=False):
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
        with self._write_lock, Transaction(self._writer):
            for table, column in (("chunks", "collection"), ("documents", "collection"), ("change_log", "collection")):
                self._writer.execute(f"DELETE FROM {table} WHERE {column}=?", (name,))
            self._writer.execute("DELETE FROM log_consumers WHERE collection=?", (name,))
            self._writer.execute("DELETE FROM versions WHERE collection=?", (name,))
            self._writer.execute("DELETE FROM feedback WHERE collection=?", (name,))
            self._writer.execute("DELETE FROM collections WHERE name=?", (name,))

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
        with self._write_lock, Transaction(conn):
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
        with self._write_lock, Transaction(conn):
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
        with self._write_lock, Transaction(self._writer):
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
                close_quietly(conn)
            self._connections.clear()
