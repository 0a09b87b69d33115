"""Reading the SQLite store's chunk rows: by row id, as a snapshot of a collection (read in batches inside one
read transaction), and the texts and rows that purging checks (``SQLiteStore`` in ``waypost.store.sqlite``)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from waypost.base import ChunkSnapshot, StoredChunk
from waypost.errors import WaypostError
from waypost.store.sqlite_schema import ID_BATCH, SNAPSHOT_BATCH, SQLiteStoreBase, Transaction
from waypost.types import Chunk, index_text

__all__ = ["ChunkRows"]


class ChunkRows(SQLiteStoreBase):
    """The chunk-row reads of ``SQLiteStore``."""

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
        with Transaction(conn, immediate=False):  # one read, however many statements the ids need
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
        with Transaction(conn, immediate=False):
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
