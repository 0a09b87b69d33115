"""How well an embedder serves a language: declared by the embedder, or measured on the collection.

The measure is self-retrieval. Up to ``samples`` chunks in the language are drawn evenly from the
collection; a window from the middle third of each becomes a query; the dense side and BM25 each
rank the whole collection, and the source chunk's reciprocal rank is averaged. Coverage is the dense
side's score over BM25's (capped at 1): an embedder that cannot read Thai ranks random chunks first
and scores near 0; one that reads the language as well as BM25 does scores 1. Hybrid fusion scales
the dense side's weight by it. Nothing here is fitted to a test set: the queries come from the
collection's own text, so a multilingual model gets its coverage without configuration.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from waypost.base import DocumentStore, Embedder
    from waypost.index.set import IndexSet

# Declared coverage of models whose training data is known; other languages are measured. "*" is what
# an undeclared language gets while the collection holds too little of it to measure: a model that
# declares its languages was not trained on the others.
DECLARED: dict[str, dict[str, float]] = {
    "all-MiniLM-L6-v2": {"en": 1.0, "*": 0.25},
    "sentence-transformers/all-MiniLM-L6-v2": {"en": 1.0, "*": 0.25},
}
MIN_SAMPLES = 5
_UNIT = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|[^\s\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+"
)


@dataclass(frozen=True)
class Coverage:
    language: str
    value: float
    source: str  # "declared" | "measured" | "default"
    samples: int = 0
    dense_mrr: float | None = None
    lexical_mrr: float | None = None


def pseudo_query(text: str) -> str:
    """The middle third of a text, cut between words (or characters, in scripts without spaces)."""
    units = [m.group(0) for m in _UNIT.finditer(text)]
    if len(units) < 6:
        return ""
    third = len(units) // 3
    window = units[third : third + max(3, min(third, 24))]
    joiner = "" if all(len(u) == 1 for u in window) else " "
    return joiner.join(window)


def measure(
    indexes: IndexSet,
    language: str,
    texts_of: Callable[[list[int]], list[str]],
    embed_query: Callable[[str], np.ndarray],
    samples: int = 40,
) -> Coverage | None:
    """Self-retrieval coverage of ``language`` on this collection, or ``None`` with too few chunks."""
    positions = indexes.positions_of_language(language)
    if positions.size < MIN_SAMPLES:
        return None
    pick = positions[np.linspace(0, positions.size - 1, num=min(samples, positions.size)).astype(np.int64)]
    texts = texts_of([int(p) for p in pick])
    live = indexes.live
    dense_rr: list[float] = []
    lexical_rr: list[float] = []
    for pos, text in zip(pick, texts, strict=True):
        query = pseudo_query(text)
        if not query:
            continue
        dense = indexes.dense.scores(embed_query(query)).astype(np.float64)
        lexical = indexes.bm25.scores(query)
        for scores, out in ((dense, dense_rr), (lexical, lexical_rr)):
            if live is not None:
                scores = np.where(live, scores, -np.inf)
            rank = 1 + int(np.sum(scores > scores[int(pos)]))
            out.append(1.0 / rank)
    if len(dense_rr) < MIN_SAMPLES:
        return None
    d, lex = float(np.mean(dense_rr)), float(np.mean(lexical_rr))
    value = 1.0 if lex <= 0 else min(1.0, d / lex)
    return Coverage(language, round(value, 4), "measured", len(dense_rr), round(d, 4), round(lex, 4))


class CoverageBook:
    """Coverage per (model, language): declared, else remembered in the store, else measured once."""

    def __init__(self, store: DocumentStore, embedder: Embedder) -> None:
        self.store = store
        self.embedder = embedder
        self._known: dict[str, Coverage] = {}
        self._lock = threading.Lock()

    def table(self) -> dict[str, float]:
        found: dict[str, float] | None = getattr(self.embedder, "languages", None)
        return found or DECLARED.get(self.embedder.model_id, {})

    def declared(self, language: str) -> Coverage | None:
        table = self.table()
        if language in table and language != "*":
            return Coverage(language, float(table[language]), "declared")
        return None

    def get(self, language: str, indexes: IndexSet, collection: str) -> Coverage:
        found = self._known.get(language) or self.declared(language)
        if found is not None:
            return found
        with self._lock:
            found = self._known.get(language)
            if found is not None:
                return found
            stored = self.store.coverage(self.embedder.model_id, language)
            if stored is not None:
                found = Coverage(language, stored[0], "measured", stored[1])
            else:

                def texts_of(positions: list[int]) -> list[str]:
                    rows = [int(indexes.row_ids[p]) for p in positions]
                    by_row = {s.row_id: s.chunk.text for s in self.store.chunks_by_row(collection, rows)}
                    return [by_row.get(r, "") for r in rows]

                measured = measure(indexes, language, texts_of, self.embedder.embed_query)
                if measured is None:  # too little text in this language to tell
                    return Coverage(language, float(self.table().get("*", 1.0)), "default")
                self.store.remember_coverage(self.embedder.model_id, language, measured.value, measured.samples)
                found = measured
            self._known[language] = found
            return found


__all__ = ["DECLARED", "Coverage", "CoverageBook", "measure", "pseudo_query"]
