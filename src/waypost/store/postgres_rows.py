"""Reading chunk rows of the PostgreSQL store: by row id, the texts and rows that purging checks, and in row
order, fast (``ChunkRows``, a base of ``PostgresStore`` in ``waypost.store.postgres``). A snapshot's row ids and
vectors arrive by binary ``COPY`` and are parsed with one numpy view (no per-row Python), the texts through a
server-side cursor, both inside the caller's one read transaction."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import sql

from waypost.base import ChunkSnapshot, StoredChunk
from waypost.errors import WaypostError
from waypost.store.postgres_schema import PgStoreBase
from waypost.types import Chunk, index_text

__all__ = ["ChunkRows", "read_rows", "read_vectors"]

_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"
_HEADER = len(_SIGNATURE) + 8  # signature, flags, header extension length (0)
_TEXT_BATCH = 5000  # rows per fetch of the server-side cursor
TEXT_BATCH = 2000  # rows per read of ``chunk_texts``


def _row_dtype(dim: int) -> np.dtype[Any]:
    """One tuple of ``COPY (SELECT row_id, embedding ...) TO STDOUT (FORMAT BINARY)``: field count, the
    bigint with its length, then the vector with its length (dimension, unused, ``dim`` big-endian floats)."""
    return np.dtype(
        [
            ("fields", ">i2"),
            ("id_len", ">i4"),
            ("id", ">i8"),
            ("vec_len", ">i4"),
            ("dim", ">u2"),
            ("unused", ">u2"),
            ("vec", ">f4", (dim,)),
        ]
    )


def read_vectors(
    conn: psycopg.Connection[Any], where: sql.Composable, params: tuple[Any, ...], count: int, dim: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """Row ids and embeddings of the ``count`` chunks that ``where`` selects, in row order."""
    dtype = _row_dtype(dim)
    expected = _HEADER + count * dtype.itemsize + 2
    buffer = bytearray(expected)
    view = memoryview(buffer)
    filled = 0
    query = sql.SQL("COPY (SELECT row_id, embedding FROM chunks WHERE {} ORDER BY row_id) TO STDOUT (FORMAT BINARY)")
    with conn.cursor() as cur, cur.copy(query.format(where), params) as copy:
        for block in copy:
            if filled + len(block) > expected:
                raise WaypostError(f"the snapshot read more than the {count} rows it counted")
            view[filled : filled + len(block)] = block
            filled += len(block)
    if filled != expected or bytes(view[: len(_SIGNATURE)]) != _SIGNATURE:
        raise WaypostError(f"the snapshot read {filled} bytes of vectors, not the {expected} of {count} rows")
    rows = np.frombuffer(buffer, dtype=dtype, count=count, offset=_HEADER)
    if count and not (
        (rows["fields"] == 2).all() and (rows["vec_len"] == 4 + 4 * dim).all() and (rows["dim"] == dim).all()
    ):
        raise WaypostError(f"stored vectors are not of dimension {dim}")
    return rows["id"].astype(np.int64), rows["vec"].astype(np.float32)


def read_rows(
    conn: psycopg.Connection[Any],
    collection: str,
    dim: int,
    generation: int,
    version: str,
    row_ids: npt.NDArray[np.int64] | None = None,
) -> ChunkSnapshot:
    """Every chunk of ``collection`` (or those of ``row_ids`` that still exist) as a ``ChunkSnapshot``; the
    caller's transaction must be REPEATABLE READ so that the three statements see one committed state."""
    # rows in row order straight off the (collection, row_id) index: without statistics (a fresh or just
    # filled table) the planner would otherwise sort the whole collection, on disk
    conn.execute("SET LOCAL enable_sort = off")
    where: sql.Composable = sql.SQL("collection = %s")
    params: tuple[Any, ...] = (collection,)
    if row_ids is not None:
        where = sql.SQL("collection = %s AND row_id = ANY(%s::bigint[])")
        params = (collection, [int(r) for r in row_ids])
    counted = conn.execute(sql.SQL("SELECT count(*) FROM chunks WHERE {}").format(where), params).fetchone()
    count = int(counted[0]) if counted else 0
    ids, embeddings = read_vectors(conn, where, params, count, dim)
    documents = {
        str(r[0]): (str(r[1]), str(r[2]), str(r[3]))
        for r in conn.execute(
            sql.SQL(
                "SELECT id, title, metadata, language FROM documents WHERE collection = %s"
                " AND id IN (SELECT document_id FROM chunks WHERE {})"
            ).format(where),
            (collection, *params),
        )
    }
    builder = _Builder(documents)
    n = 0
    with conn.cursor(name="waypost_snapshot") as cur:
        cur.execute(
            sql.SQL("SELECT row_id, document_id, text, section, language FROM chunks WHERE {} ORDER BY row_id").format(
                where
            ),
            params,
        )
        while rows := cur.fetchmany(_TEXT_BATCH):
            if n + len(rows) > count or not np.array_equal([r[0] for r in rows], ids[n : n + len(rows)]):
                raise WaypostError("the snapshot's texts and vectors disagree on the rows")
            builder.add(rows)
            n += len(rows)
    if n != count:
        raise WaypostError(f"the snapshot read {n} rows but counted {count}")
    return builder.snapshot(generation, version, ids, embeddings)


class _Builder:
    """Collects the per-chunk columns of a snapshot, in row order."""

    def __init__(self, documents: dict[str, tuple[str, str, str]]) -> None:
        self._documents = documents  # id: (title, metadata JSON, language)
        self._metadata: dict[str, dict[str, object]] = {}
        self._bodies: dict[str, list[str]] = {}
        self._languages: dict[str, str] = {}
        self._titles: dict[str, str] = {}
        self.document_ids: list[str] = []
        self.index_texts: list[str] = []
        self.chunk_texts: list[str] = []
        self.chunk_languages: list[str] = []
        self.sections: list[tuple[str, ...]] = []
        self.metadata: list[dict[str, object]] = []
        self._sections: dict[str, tuple[str, ...]] = {}  # parsed once per distinct section path

    def add(self, rows: Sequence[Sequence[Any]]) -> None:
        """Rows of (row id, document id, text, section JSON, language), in row order."""
        sections = self._sections
        for _row_id, doc_id, text, section_json, language in rows:
            if doc_id not in self._metadata:
                title, metadata, doc_language = self._documents[doc_id]
                self._metadata[doc_id] = json.loads(metadata)
                self._bodies[doc_id] = [title] if title else []
                self._languages[doc_id] = doc_language
                self._titles[doc_id] = title
            section = sections.get(section_json)
            if section is None:
                section = sections[section_json] = tuple(json.loads(section_json))
            self._bodies[doc_id].append(text)
            self.metadata.append(self._metadata[doc_id])
            self.document_ids.append(doc_id)
            self.index_texts.append(index_text(self._titles[doc_id], section, text))
            self.chunk_texts.append(text)
            self.chunk_languages.append(language)
            self.sections.append(section)

    def snapshot(
        self, generation: int, version: str, ids: npt.NDArray[np.int64], embeddings: npt.NDArray[np.float32]
    ) -> ChunkSnapshot:
        return ChunkSnapshot(
            generation=generation,
            version=version,
            row_ids=ids,
            document_ids=self.document_ids,
            index_texts=self.index_texts,
            embeddings=embeddings,
            metadata=self.metadata,
            document_texts=["\n".join(parts) for parts in self._bodies.values()],
            chunk_texts=self.chunk_texts,
            titles=self._titles,
            languages=self.chunk_languages,
            document_languages=list(self._languages.values()),
            sections=self.sections,
        )


def _fetch_all(query: str, params: tuple[object, ...], conn: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
    return conn.execute(query, params).fetchall()


class ChunkRows(PgStoreBase):
    """The chunk-row reads of ``PostgresStore``."""

    def row_ids_of(self, collection: str, chunks: Sequence[tuple[str, int]]) -> dict[tuple[str, int], int]:
        wanted = list(dict.fromkeys((str(doc), int(idx)) for doc, idx in chunks))
        if not wanted:
            return {}
        rows = self._read(
            lambda conn: conn.execute(
                "SELECT c.document_id, c.idx, c.row_id FROM unnest(%s::text[], %s::int[]) AS w(d, i)"
                " JOIN chunks c ON c.collection = %s AND c.document_id = w.d AND c.idx = w.i",
                ([d for d, _ in wanted], [i for _, i in wanted], collection),
            ).fetchall()
        )
        return {(str(r[0]), int(r[1])): int(r[2]) for r in rows}

    def chunks_by_row(self, collection: str, row_ids: Sequence[int]) -> list[StoredChunk]:
        if not row_ids:
            return []
        wanted = list(dict.fromkeys(int(r) for r in row_ids))
        rows = self._read(
            lambda conn: conn.execute(
                'SELECT c.row_id, c.document_id, c.idx, c.text, c.start, c."end", c.token_count, c.section,'
                " d.title, d.source, d.metadata, c.language FROM chunks c JOIN documents d"
                " ON d.collection = c.collection AND d.id = c.document_id"
                " WHERE c.collection = %s AND c.row_id = ANY(%s::bigint[])",
                (collection, wanted),
            ).fetchall()
        )
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

    def snapshot(self, collection: str) -> ChunkSnapshot:
        def read(conn: psycopg.Connection[Any]) -> ChunkSnapshot:
            dim = self._read_dimension(conn, collection)
            _uid, generation, _floor, version = self._head(conn, collection)
            return read_rows(conn, collection, dim, generation, version)

        return self._read(read)

    # -- purging ---------------------------------------------------------------------------
    def chunk_texts(
        self, collection: str | None = None, documents: Iterable[str] | None = None
    ) -> Iterator[tuple[int, str, str]]:
        """(row id, chunk text, index text) of every chunk of the store, of one collection, or of some of its
        documents; read in batches of ``TEXT_BATCH`` rows, one short transaction each."""
        where = "TRUE"
        params: tuple[object, ...] = ()
        if collection is not None and documents is not None:
            where = "c.collection = %s AND c.document_id = ANY(%s::text[])"
            params = (collection, list(dict.fromkeys(documents)))
        elif collection is not None:
            where, params = "c.collection = %s", (collection,)
        query = (
            "SELECT c.row_id, c.text, c.section, d.title FROM chunks c JOIN documents d"
            f" ON d.collection = c.collection AND d.id = c.document_id WHERE {where} AND c.row_id > %s"
            f" ORDER BY c.row_id LIMIT {TEXT_BATCH}"
        )
        last = -1
        while True:
            rows = self._read(partial(_fetch_all, query, (*params, last)))
            for r in rows:
                yield int(r[0]), str(r[1]), index_text(str(r[3]), json.loads(r[2]), str(r[1]))
            if len(rows) < TEXT_BATCH:
                return
            last = int(rows[-1][0])

    def live_texts(self, texts: Iterable[str]) -> set[str]:
        """Those of ``texts`` that some chunk of any collection still holds."""
        wanted = list(dict.fromkeys(texts))
        rows = self._read(
            lambda conn: conn.execute(
                "SELECT DISTINCT text FROM chunks WHERE text = ANY(%s::text[])", (wanted,)
            ).fetchall()
        )
        return {str(r[0]) for r in rows}

    def live_rows(self, row_ids: Iterable[int]) -> set[int]:
        """Those of ``row_ids`` that are chunks of any collection (row ids are never reused)."""
        wanted = sorted({int(r) for r in row_ids})
        rows = self._read(
            lambda conn: conn.execute(
                "SELECT row_id FROM chunks WHERE row_id = ANY(%s::bigint[])", (wanted,)
            ).fetchall()
        )
        return {int(r[0]) for r in rows}
