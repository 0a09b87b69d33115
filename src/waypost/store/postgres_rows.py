"""Reading chunk rows of the PostgreSQL store in row order, fast: row ids and vectors arrive by binary ``COPY``
and are parsed with one numpy view (no per-row Python), the texts through a server-side cursor, both inside
the caller's one read transaction."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import sql

from waypost.base import ChunkSnapshot
from waypost.errors import WaypostError
from waypost.types import index_text

_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"
_HEADER = len(_SIGNATURE) + 8  # signature, flags, header extension length (0)
_TEXT_BATCH = 5000  # rows per fetch of the server-side cursor


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
