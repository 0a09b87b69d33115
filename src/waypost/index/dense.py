"""Dense vector search: exact inner product (vectors are normalised), or HNSW for large segments."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from waypost.base import FloatMatrix
from waypost.index.topk import Mask, Positions, Scores, top_k

BoolArray = npt.NDArray[np.bool_]


def build_hnsw(vectors: FloatMatrix, ef: int = 128) -> Any:
    import hnswlib

    index = hnswlib.Index(space="ip", dim=vectors.shape[1])
    index.init_index(max_elements=max(1, len(vectors)), ef_construction=200, M=32, allow_replace_deleted=False)
    index.add_items(np.asarray(vectors, dtype=np.float32), np.arange(len(vectors)))
    index.set_ef(ef)
    return index


def load_hnsw(path: Path, dim: int, size: int) -> Any:
    import hnswlib

    index = hnswlib.Index(space="ip", dim=dim)
    index.load_index(str(path), max_elements=max(1, size))
    if index.get_current_count() != size:
        raise ValueError(f"HNSW graph in {path} holds {index.get_current_count()} items, expected {size}")
    return index


class DenseIndex:
    """One matrix of vectors (a segment's, or a whole small collection's), with an optional HNSW graph."""

    def __init__(self, vectors: FloatMatrix, approximate: bool = False, ef: int = 128, hnsw: Any = None) -> None:
        self.vectors = vectors if isinstance(vectors, np.memmap) else np.ascontiguousarray(vectors, dtype=np.float32)
        self._ef = ef
        self.hnsw = hnsw
        if hnsw is None and approximate and len(self.vectors) > 0:
            self.hnsw = build_hnsw(self.vectors, ef)

    def __len__(self) -> int:
        return int(self.vectors.shape[0])

    def scores(self, query: FloatMatrix) -> Scores:
        """Cosine similarity of every vector to the query."""
        return np.asarray(self.vectors @ np.asarray(query, dtype=np.float32), dtype=np.float32)

    def mark_deleted(self, positions: npt.NDArray[np.int64]) -> None:
        """Tell the HNSW graph (if any) never to return these positions again."""
        if self.hnsw is None:
            return
        for p in positions.tolist():
            try:
                self.hnsw.mark_deleted(int(p))
            except RuntimeError as exc:
                # hnswlib says "... already deleted" for a graph saved after deletes and loaded again: what
                # we wanted. Anything else ("Label not found": a position the graph never held) is a bug.
                if "already deleted" not in str(exc):
                    raise

    def approximate_search(self, query: FloatMatrix, k: int, dead: int = 0) -> tuple[Positions, Scores]:
        """HNSW neighbours (dead items are marked deleted in the graph and never returned)."""
        want = min(k, len(self) - dead)
        if want <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        self.hnsw.set_ef(max(self._ef, want))
        labels, distances = self.hnsw.knn_query(np.asarray(query, dtype=np.float32)[None, :], k=want)
        return labels[0].astype(np.int64), (1.0 - distances[0]).astype(np.float32)

    def search(self, query: FloatMatrix, k: int, mask: Mask | None = None) -> tuple[Positions, Scores]:
        if self.hnsw is not None and mask is None and k < len(self):
            return self.approximate_search(query, k)
        return top_k(self.scores(query), k, mask)


class DenseView:
    """The dense indexes of several segments as one, positions laid end to end."""

    def __init__(self, parts: Sequence[tuple[DenseIndex, int, BoolArray | None]], size: int) -> None:
        self._parts = list(parts)
        self.size = size

    def __len__(self) -> int:
        return self.size

    def scores(self, query: FloatMatrix) -> Scores:
        if not self._parts:
            return np.zeros(0, dtype=np.float32)
        q = np.asarray(query, dtype=np.float32)
        return np.concatenate([index.scores(q) for index, _offset, _live in self._parts])

    def search(
        self, query: FloatMatrix, k: int, mask: Mask | None = None, filtered: bool = True
    ) -> tuple[Positions, Scores]:
        """Top ``k``. With no user filter (``filtered=False``), segments with an HNSW graph answer from it
        and the rest by exact scan; ``mask`` then only carries liveness, which the graph knows itself."""
        if filtered or not any(index.hnsw is not None for index, _o, _l in self._parts):
            return top_k(self.scores(query), k, mask)
        positions: list[Positions] = []
        scores: list[Scores] = []
        for index, offset, live in self._parts:
            if index.hnsw is not None and k < len(index):
                dead = 0 if live is None else int((~live).sum())
                pos, val = index.approximate_search(query, k, dead)
            else:
                pos, val = top_k(index.scores(query), k, live)
            positions.append(pos + offset)
            scores.append(val)
        all_pos, all_val = np.concatenate(positions), np.concatenate(scores)
        order = np.argsort(-all_val, kind="stable")[:k]
        return all_pos[order], all_val[order]
