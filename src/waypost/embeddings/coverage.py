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

from waypost.store.protocols import version_incarnation

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
MIN_SAMPLES = 20  # usable self-retrieval queries needed before a measurement counts
REMEASURE_GROWTH = 4  # measure again once the language has this many times the chunks it had
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
    """A window from the middle third of a text, cut between words where the text has enough of them
    (spaces, or Han and kana characters), else between characters (Thai phrases run long unspaced)."""
    units = [m.group(0) for m in _UNIT.finditer(text)]
    if len(units) >= 6:
        third = len(units) // 3
        window = units[third : third + max(3, min(third, 24))]
        joiner = "" if all(len(u) == 1 for u in window) else " "
        return joiner.join(window)
    if len(text) < 30:
        return ""
    third = len(text) // 3
    return text[third : third + min(third, 120)].strip()


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
        lexical = indexes.bm25.scores(query)
        if lexical[int(pos)] <= 0:
            continue  # the analyzer finds nothing of the text in its own window: no comparison to make
        dense = indexes.dense.scores(embed_query(query)).astype(np.float64)
        for scores, out in ((dense, dense_rr), (lexical, lexical_rr)):
            if live is not None:
                scores = np.where(live, scores, -np.inf)
            own = scores[int(pos)]
            rank = int(np.sum(scores >= own))  # ties count against: a constant score ranks last
            out.append(1.0 / rank)
    if len(dense_rr) < MIN_SAMPLES:
        return None
    d, lex = float(np.mean(dense_rr)), float(np.mean(lexical_rr))
    value = 1.0 if lex <= 0 else min(1.0, d / lex)
    return Coverage(language, round(value, 4), "measured", len(dense_rr), round(d, 4), round(lex, 4))


MEMO_ENTRIES = 4096  # (collection, language) pairs remembered in memory; past it the memo starts over


class CoverageBook:
    """Coverage per (model, collection, language): declared, else remembered in the store, else measured
    (again once the language has grown to four times the chunks it was measured on). The in-memory memo is
    bounded: a collection dropped and made again gets a new key, and the store remembers what was measured."""

    def __init__(self, store: DocumentStore, embedder: Embedder) -> None:
        self.store = store
        self.embedder = embedder
        self._known: dict[str, tuple[Coverage, int]] = {}  # "collection uid:language" -> (coverage, chunks)
        self._unmeasurable: dict[str, int] = {}  # same key -> chunks when there was too little to measure
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
        if language == "und":  # text too short to identify: nothing says the embedder cannot read it
            return Coverage(language, 1.0, "undetermined")
        declared = self.declared(language)
        if declared is not None:
            return declared
        memo = f"{version_incarnation(indexes.version)}:{language}"
        known = self._known.get(memo)
        if known is not None and indexes.languages.get(language, 0) < REMEASURE_GROWTH * max(1, known[1]):
            return known[0]
        with self._lock:
            chunks = int(indexes.positions_of_language(language).size)
            scope = version_incarnation(indexes.version)
            memo = f"{scope}:{language}"
            stored = self.store.coverage(self.embedder.model_id, scope, language)
            if stored is not None and chunks < REMEASURE_GROWTH * max(1, stored[2]):
                found = Coverage(language, stored[0], "measured", stored[1])
            elif memo in self._unmeasurable and chunks < REMEASURE_GROWTH * self._unmeasurable[memo]:
                return Coverage(language, float(self.table().get("*", 1.0)), "default")
            else:

                def texts_of(positions: list[int]) -> list[str]:
                    rows = [int(indexes.row_ids[p]) for p in positions]
                    by_row = {s.row_id: s.chunk.text for s in self.store.chunks_by_row(collection, rows)}
                    return [by_row.get(r, "") for r in rows]

                measured = measure(indexes, language, texts_of, self.embedder.embed_query)
                if measured is None:  # too little text in this language to tell: not again until it grows
                    if len(self._unmeasurable) >= MEMO_ENTRIES:
                        self._unmeasurable.clear()
                    self._unmeasurable[memo] = max(1, chunks)
                    return Coverage(language, float(self.table().get("*", 1.0)), "default")
                self.store.remember_coverage(
                    self.embedder.model_id, scope, language, measured.value, measured.samples, chunks
                )
                found = measured
            if len(self._known) >= MEMO_ENTRIES:
                self._known.clear()  # read from the store again when asked
            self._known[memo] = (found, chunks)
            return found


__all__ = ["DECLARED", "Coverage", "CoverageBook", "measure", "pseudo_query"]
