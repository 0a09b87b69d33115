"""BM25 over chunk texts, built on bm25s (sparse matrices) with Snowball stemming and English stopwords."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from waypost.index.topk import Mask, Positions, Scores, top_k


def _stemmer() -> Any:
    import Stemmer

    return Stemmer.Stemmer("english")


class BM25Index:
    def __init__(self, retriever: Any, size: int) -> None:
        self._retriever = retriever
        self._size = size
        self._stem = _stemmer()

    @classmethod
    def build(cls, texts: list[str], k1: float = 0.9, b: float = 0.4) -> BM25Index:
        import bm25s

        retriever = bm25s.BM25(k1=k1, b=b)
        if texts:
            tokens = bm25s.tokenize(texts, stopwords="en", stemmer=_stemmer(), show_progress=False)
            retriever.index(tokens, show_progress=False)
        return cls(retriever, len(texts))

    def save(self, path: Path) -> None:
        self._retriever.save(str(path), show_progress=False)

    @classmethod
    def load(cls, path: Path, size: int) -> BM25Index:
        import bm25s

        return cls(bm25s.BM25.load(str(path), show_progress=False, mmap=False), size)

    def __len__(self) -> int:
        return self._size

    def query_tokens(self, query: str) -> list[str]:
        import bm25s

        tokens = bm25s.tokenize([query], stopwords="en", stemmer=self._stem, return_ids=False, show_progress=False)[0]
        vocab = getattr(self._retriever, "vocab_dict", None) or {}
        return [t for t in tokens if t in vocab]

    def scores(self, query: str) -> Scores:
        tokens = self.query_tokens(query)
        if not tokens or self._size == 0:
            return np.zeros(self._size, dtype=np.float32)
        return np.asarray(self._retriever.get_scores(tokens), dtype=np.float32)

    def search(self, query: str, k: int, mask: Mask | None = None) -> tuple[Positions, Scores]:
        scores = self.scores(query)
        positions, values = top_k(scores, k, mask)
        keep = values > 0
        return positions[keep], values[keep]
