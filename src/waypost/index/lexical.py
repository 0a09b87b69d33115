"""BM25 over segments: term-frequency postings per segment, statistics global over live rows.

bm25s bakes idf and the average length into its score matrix, so a segment built alone would score
with its own statistics. Here a segment keeps raw term frequencies (by term for scoring, by row for
subtracting deleted rows) and the scorer computes idf and average length over every live row of every
segment at query time. The formula is the Lucene variant bm25s uses; terms come from each text's
language analyzer (``waypost.text.analyzers``). Scores equal a from-scratch build exactly.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
Int32Array = npt.NDArray[np.int32]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


class Vocabulary:
    """Term -> id, append-only and shared by every segment of a collection."""

    def __init__(self, terms: Sequence[str] = ()) -> None:
        self.terms: list[str] = list(terms)
        self.ids: dict[str, int] = {t: i for i, t in enumerate(self.terms)}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.terms)

    def add(self, term: str) -> int:
        found = self.ids.get(term)
        if found is not None:
            return found
        with self._lock:
            found = self.ids.get(term)
            if found is None:
                found = len(self.terms)
                self.terms.append(term)
                self.ids[term] = found
            return found

    def lookup(self, terms: Sequence[str]) -> list[int]:
        return [self.ids[t] for t in terms if t in self.ids]

    def encode(self, terms: Sequence[str]) -> list[int]:
        """Ids of ``terms``, adding the new ones."""
        ids = self.ids
        for term in set(terms):
            if term not in ids:
                self.add(term)
        return list(map(ids.__getitem__, terms))


@dataclass(frozen=True)
class Postings:
    """Term frequencies of ``rows`` items: by term (CSC, for scoring) and by row (CSR, for deletes)."""

    rows: int
    terms: int  # vocabulary size when built; later term ids have no postings here
    by_term_ptr: IntArray
    by_term_row: Int32Array
    by_term_tf: npt.NDArray[np.float32]
    by_row_ptr: IntArray
    by_row_term: Int32Array
    lengths: npt.NDArray[np.float32]
    df: Int32Array  # rows containing each term, over all rows of the segment

    @property
    def total_length(self) -> float:
        return float(self.lengths.sum(dtype=np.float64))

    @classmethod
    def build(cls, token_ids: Sequence[Sequence[int]], vocab_size: int) -> Postings:
        from scipy import sparse

        rows = len(token_ids)
        lengths = np.fromiter((len(ids) for ids in token_ids), dtype=np.int64, count=rows)
        cols = np.fromiter(itertools.chain.from_iterable(token_ids), dtype=np.int32, count=int(lengths.sum()))
        owner = np.repeat(np.arange(rows, dtype=np.int32), lengths)
        ones = np.ones(cols.shape[0], dtype=np.float32)
        csr = sparse.coo_matrix((ones, (owner, cols)), shape=(rows, vocab_size)).tocsr()  # sums repeats: tf
        return cls.from_csr(csr, lengths.astype(np.float32))

    @classmethod
    def from_csr(cls, csr: Any, lengths: npt.NDArray[np.float32]) -> Postings:
        csr.sort_indices()
        csc = csr.tocsc()
        csc.sort_indices()
        df = np.diff(csc.indptr).astype(np.int32)
        return cls(
            rows=int(csr.shape[0]),
            terms=int(csr.shape[1]),
            by_term_ptr=csc.indptr.astype(np.int64),
            by_term_row=csc.indices.astype(np.int32),
            by_term_tf=csc.data.astype(np.float32),
            by_row_ptr=csr.indptr.astype(np.int64),
            by_row_term=csr.indices.astype(np.int32),
            lengths=np.asarray(lengths, dtype=np.float32),
            df=df,
        )

    def csr(self, vocab_size: int) -> Any:
        """Row-major matrix with term frequencies, widened to ``vocab_size`` terms."""
        from scipy import sparse

        csc = sparse.csc_matrix(
            (np.asarray(self.by_term_tf), np.asarray(self.by_term_row), np.asarray(self.by_term_ptr)),
            shape=(self.rows, self.terms),
        )
        csr = csc.tocsr()
        csr.sort_indices()
        return sparse.csr_matrix((csr.data, csr.indices, csr.indptr), shape=(self.rows, vocab_size))

    def select_terms(self, keep: IntArray, vocab_size: int) -> Postings:
        """These postings over only the terms ``keep`` (ascending ids), renumbered 0, 1, ..."""
        return Postings.from_csr(self.csr(vocab_size)[:, keep], np.asarray(self.lengths, dtype=np.float32))

    def dead_df(self, dead_rows: IntArray, vocab_size: int) -> Int32Array:
        """How much each term's document frequency drops when ``dead_rows`` are removed."""
        out = np.zeros(vocab_size, dtype=np.int32)
        if dead_rows.size:
            starts, ends = self.by_row_ptr[dead_rows], self.by_row_ptr[dead_rows + 1]
            terms = np.concatenate([self.by_row_term[s:e] for s, e in zip(starts, ends, strict=True)])
            np.add.at(out, terms, 1)
        return out

    def save(self, path: Path, prefix: str) -> list[str]:
        names = []
        for name in ("by_term_ptr", "by_term_row", "by_term_tf", "by_row_ptr", "by_row_term", "lengths", "df"):
            file = f"{prefix}.{name}.npy"
            np.save(path / file, np.asarray(getattr(self, name)), allow_pickle=False)
            names.append(file)
        return names

    @classmethod
    def load(cls, path: Path, prefix: str, rows: int, terms: int) -> Postings:
        def arr(name: str) -> Any:
            return np.load(path / f"{prefix}.{name}.npy", mmap_mode="r", allow_pickle=False)

        postings = cls(
            rows=rows,
            terms=terms,
            by_term_ptr=arr("by_term_ptr"),
            by_term_row=arr("by_term_row"),
            by_term_tf=arr("by_term_tf"),
            by_row_ptr=arr("by_row_ptr"),
            by_row_term=arr("by_row_term"),
            lengths=arr("lengths"),
            df=np.asarray(arr("df")),
        )
        if (
            postings.by_term_ptr.shape != (terms + 1,)
            or postings.by_row_ptr.shape != (rows + 1,)
            or postings.lengths.shape != (rows,)
            or int(postings.by_term_ptr[-1]) != postings.by_term_row.shape[0]
            or int(postings.by_row_ptr[-1]) != postings.by_row_term.shape[0]
        ):
            raise ValueError(f"inconsistent postings {prefix} in {path}")
        return postings


def merge_postings(parts: Sequence[tuple[Postings, BoolArray]], vocab_size: int) -> Postings:
    """One segment's postings from the live rows of several."""
    from scipy import sparse

    kept = [p.csr(vocab_size)[np.flatnonzero(live)] for p, live in parts]
    lengths = np.concatenate([np.asarray(p.lengths)[live] for p, live in parts]).astype(np.float32)
    csr = sparse.vstack(kept, format="csr") if kept else sparse.csr_matrix((0, vocab_size), dtype=np.float32)
    return Postings.from_csr(csr, lengths)


@dataclass(frozen=True)
class FieldStats:
    """Collection-wide statistics over live rows: what makes scores independent of segmentation."""

    rows: int
    total_length: float
    df: Int32Array

    @property
    def average_length(self) -> float:
        return self.total_length / self.rows if self.rows else 0.0

    @classmethod
    def over(cls, parts: Sequence[tuple[Postings, BoolArray | None]], vocab_size: int) -> FieldStats:
        df = np.zeros(vocab_size, dtype=np.int32)
        rows = 0
        total = 0.0
        for postings, live in parts:
            df[: postings.terms] += postings.df
            if live is None:
                rows += postings.rows
                total += postings.total_length
            else:
                dead = np.flatnonzero(~live)
                df -= postings.dead_df(dead, vocab_size)
                rows += postings.rows - int(dead.size)
                total += postings.total_length - float(np.asarray(postings.lengths)[dead].sum(dtype=np.float64))
        return cls(rows, total, df)


def bm25_scores(
    parts: Sequence[tuple[Postings, int]],
    size: int,
    term_ids: Sequence[int],
    stats: FieldStats,
    k1: float,
    b: float,
) -> FloatArray:
    """Scores of every position (segments laid end to end at their offsets) for the query's terms."""
    out = np.zeros(size, dtype=np.float64)
    n = stats.rows
    avg = stats.average_length
    if n == 0 or avg == 0:
        return out
    for term in term_ids:
        df = int(stats.df[term]) if term < stats.df.shape[0] else 0
        if df <= 0:
            continue
        idf = np.log(1.0 + (n - df + 0.5) / (df + 0.5))
        for postings, offset in parts:
            if term >= postings.terms:
                continue
            start, end = int(postings.by_term_ptr[term]), int(postings.by_term_ptr[term + 1])
            if start == end:
                continue
            rows = np.asarray(postings.by_term_row[start:end])
            tf = np.asarray(postings.by_term_tf[start:end], dtype=np.float64)
            dl = postings.lengths[rows].astype(np.float64)
            out[offset + rows] += idf * tf / (k1 * ((1.0 - b) + b * dl / avg) + tf)
    return out
