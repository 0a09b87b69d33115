"""Dense vector search: exact inner product (vectors are normalised), or HNSW for large collections."""

from __future__ import annotations

import numpy as np

from waypost.base import FloatMatrix
from waypost.index.topk import Mask, Positions, Scores, top_k


class DenseIndex:
    def __init__(self, vectors: FloatMatrix, approximate: bool = False, ef: int = 128) -> None:
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self._hnsw = None
        self._ef = ef
        if approximate and len(self.vectors) > 0:
            import hnswlib

            index = hnswlib.Index(space="ip", dim=self.vectors.shape[1])
            index.init_index(max_elements=len(self.vectors), ef_construction=200, M=32)
            index.add_items(self.vectors, np.arange(len(self.vectors)))
            index.set_ef(ef)
            self._hnsw = index

    def __len__(self) -> int:
        return int(self.vectors.shape[0])

    def scores(self, query: FloatMatrix) -> Scores:
        """Cosine similarity of every vector to the query."""
        return self.vectors @ np.asarray(query, dtype=np.float32)

    def search(self, query: FloatMatrix, k: int, mask: Mask | None = None) -> tuple[Positions, Scores]:
        if self._hnsw is not None and mask is None and k < len(self):
            self._hnsw.set_ef(max(self._ef, k))
            labels, distances = self._hnsw.knn_query(np.asarray(query, dtype=np.float32)[None, :], k=k)
            return labels[0].astype(np.int64), (1.0 - distances[0]).astype(np.float32)
        return top_k(self.scores(query), k, mask)
