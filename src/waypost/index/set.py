"""A collection's derived indexes as segments that follow the store's change log.

``IndexSet`` is an immutable view at one generation: segments (one large main segment, then small
ones), a liveness mask per segment (tombstones), and collection-wide BM25 statistics over live rows.
``index/live.py`` keeps a collection's current view (``LiveIndex``); ``index/cache.py`` holds one per
collection (``IndexCache``).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from waypost.base import ChangeSet, ChunkSnapshot
from waypost.index.dense import (
    EXACT_DENSE_BELOW,
    DenseView,
)
from waypost.index.lexical import FieldStats, Vocabulary, bm25_scores
from waypost.index.metadata_view import MetadataView
from waypost.index.references import ReferenceSegment, ReferenceView
from waypost.index.segment import Segment
from waypost.index.topk import Mask, Positions, Scores, top_k
from waypost.text.analyzers import Analyzers, analyzers
from waypost.text.language import detector

if TYPE_CHECKING:
    from waypost.filters.extract import FilterExtractor

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class BM25Params:
    k1: float = 0.9
    b: float = 0.4
    doc_weight: float = 0.5  # a chunk also scores with its whole document's BM25 score times this


@dataclass(frozen=True)
class MergePolicy:
    """When small segments are merged (Lucene-style tiers) and when unsaved work is persisted."""

    max_small_segments: int = 8  # more than this many small segments: merge them into one
    main_merge_rows: int = 5000  # small segments holding more rows than this ...
    main_merge_ratio: float = 0.1  # ... and more than this share of the main segment: merge into main
    dead_ratio: float = 0.2  # tombstones over this share of the main segment: merge (drops them)
    persist_rows: int = 1000  # unsaved rows beyond this: persist in the background
    persist_generations: int = 200  # or this many writes since the last save (deletes add no rows)


class BM25View:
    """BM25 over every segment with statistics over live rows, so segmentation never changes a score."""

    def __init__(self, owner: IndexSet) -> None:
        self._owner = owner

    def query_tokens(self, query: str) -> list[str]:
        """The query's terms that occur in the collection, analyzed in the query's language; if that
        finds none (a misread short query), in the collection's other languages, commonest first."""
        owner = self._owner
        stats = owner.chunk_stats
        ids = owner.vocab.ids
        first = owner.query_language(query)
        others = sorted((lang for lang in owner.languages if lang != first), key=lambda k: -owner.languages[k])
        for language in [first, *others]:
            terms = owner.analyzers(language).terms(query)
            known = [t for t in terms if t in ids and ids[t] < stats.df.shape[0] and stats.df[ids[t]] > 0]
            if known:
                return known
        return []

    def scores(self, query: str) -> npt.NDArray[np.float64]:
        owner = self._owner
        p = owner.params
        ids = owner.vocab.lookup(self.query_tokens(query))
        if not ids:
            return np.zeros(len(owner), dtype=np.float64)
        chunk_parts = [(s.chunks, off) for s, off in zip(owner.segments, owner.offsets, strict=True)]
        scores = bm25_scores(chunk_parts, len(owner), ids, owner.chunk_stats, p.k1, p.b)
        if p.doc_weight > 0:
            doc_parts = [(s.documents, off) for s, off in zip(owner.segments, owner.doc_offsets, strict=True)]
            doc_scores = bm25_scores(doc_parts, owner.document_slots, ids, owner.doc_stats, p.k1, p.b)
            scores += p.doc_weight * doc_scores[owner.chunk_doc]
        return scores

    def search(self, query: str, k: int, mask: Mask | None = None) -> tuple[Positions, Scores]:
        scores = self.scores(query)
        positions, _ = top_k(scores.astype(np.float32), k, mask)
        values = scores[positions].astype(np.float32)
        keep = values > 0
        return positions[keep], values[keep]


class IndexSet:
    """Every derived index of one collection at one generation, across segments."""

    def __init__(
        self,
        collection: str,
        generation: int,
        version: str,
        segments: Sequence[Segment],
        lives: Sequence[BoolArray | None],
        vocab: Vocabulary,
        analyzers: Analyzers,
        params: BM25Params | None = None,
        build_seconds: float = 0.0,
        exact_below: int = EXACT_DENSE_BELOW,
    ) -> None:
        self.collection = collection
        self.exact_below = exact_below  # collections this large search the dense side by graph candidates
        self.generation = generation
        self.version = version
        self.segments = tuple(segments)
        self.lives = tuple(None if live is None or bool(live.all()) else live for live in lives)
        self.vocab = vocab
        self.analyzers = analyzers
        self.params = params or BM25Params()
        self.build_seconds = build_seconds
        sizes = [len(s) for s in self.segments]
        self.offsets = [int(x) for x in np.concatenate([[0], np.cumsum(sizes)])[:-1]] if sizes else []
        doc_sizes = [s.document_count for s in self.segments]
        self.doc_offsets = [int(x) for x in np.concatenate([[0], np.cumsum(doc_sizes)])[:-1]] if doc_sizes else []
        self._size = int(sum(sizes))
        self.document_slots = int(sum(doc_sizes))
        self.row_ids: IntArray = (
            np.concatenate([np.asarray(s.row_ids) for s in self.segments]) if sizes else np.zeros(0, np.int64)
        )
        self.chunk_doc: IntArray = (
            np.concatenate([np.asarray(s.chunk_doc) + o for s, o in zip(self.segments, self.doc_offsets, strict=True)])
            if sizes
            else np.zeros(0, np.int64)
        )
        self.live: BoolArray | None = None
        if any(live is not None for live in self.lives):
            self.live = np.concatenate(
                [
                    np.ones(len(s), np.bool_) if live is None else live
                    for s, live in zip(self.segments, self.lives, strict=True)
                ]
            )
        self.doc_lives = [s.doc_live(live) for s, live in zip(self.segments, self.lives, strict=True)]
        vsize = len(vocab)
        self.chunk_stats = FieldStats.over(
            [(s.chunks, live) for s, live in zip(self.segments, self.lives, strict=True)], vsize
        )
        self.doc_stats = FieldStats.over(
            [(s.documents, dl) for s, dl in zip(self.segments, self.doc_lives, strict=True)], vsize
        )
        self.dense = DenseView(
            list(zip([s.dense for s in self.segments], self.offsets, self.lives, strict=True)), self._size, exact_below
        )
        self.bm25 = BM25View(self)
        self.metadata = MetadataView(
            [(s.metadata, off, live) for s, off, live in zip(self.segments, self.offsets, self.lives, strict=True)],
            self._size,
        )
        self.references = ReferenceView(
            [
                (ReferenceSegment(s.title_table, s.document_ids, s.doc_chunks, dl), off)
                for s, off, dl in zip(self.segments, self.offsets, self.doc_lives, strict=True)
            ],
            self.document_of,
        )
        self._extractor: FilterExtractor | None = None
        self._date_values: dict[str, npt.NDArray[np.float64]] = {}
        self._languages: dict[str, int] | None = None
        self._query_languages: dict[str, str] = {}  # recent queries: strategies ask more than once per query

    def __len__(self) -> int:
        return self._size

    @property
    def live_count(self) -> int:
        return self._size if self.live is None else int(self.live.sum())

    @property
    def languages(self) -> dict[str, int]:
        """Live chunks per language."""
        if self._languages is None:
            counts: dict[str, int] = {}
            for s, live in zip(self.segments, self.lives, strict=True):
                for lang, n in s.languages(live).items():
                    counts[lang] = counts.get(lang, 0) + n
            self._languages = counts
        return self._languages

    def positions_of_language(self, language: str) -> IntArray:
        """Live positions of chunks in ``language``."""
        parts: list[IntArray] = []
        for s, off, live in zip(self.segments, self.offsets, self.lives, strict=True):
            if language not in s.language_codes:
                continue
            hit = np.asarray(s.chunk_language) == s.language_codes.index(language)
            if live is not None:
                hit &= live
            parts.append(np.flatnonzero(hit).astype(np.int64) + off)
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def query_language(self, query: str) -> str:
        """The language a query is analyzed in: the collection's, or the likeliest of its languages."""
        found = self._query_languages.get(query)
        if found is None:
            found = self._identify_query(query)
            if len(self._query_languages) > 256:
                self._query_languages.clear()
            self._query_languages[query] = found
        return found

    def _identify_query(self, query: str) -> str:
        counts = {lang: n for lang, n in self.languages.items() if lang != "und"}
        if len(counts) == 1:
            return next(iter(counts))
        if not counts:
            return detector().detect(query)
        total = sum(counts.values())
        detected = detector().detect(query, among=counts, prior={k: n / total for k, n in counts.items()})
        return detected if detected in counts else max(counts, key=lambda k: counts[k])

    def document_of(self, position: int) -> str:
        i = int(np.searchsorted(self.offsets, position, side="right")) - 1
        segment = self.segments[i]
        return segment.document_ids[int(segment.chunk_doc[position - self.offsets[i]])]

    def positions_of(self, row_ids: Sequence[int]) -> dict[int, int]:
        """Live positions of the given store rows (each segment's rows ascend, so a binary search finds them)."""
        out: dict[int, int] = {}
        wanted = np.asarray(sorted(set(int(r) for r in row_ids)), dtype=np.int64)
        for segment, offset in zip(self.segments, self.offsets, strict=True):
            rows = np.asarray(segment.row_ids)
            at = np.minimum(np.searchsorted(rows, wanted), max(0, len(rows) - 1))
            for row, i in zip(wanted.tolist(), at.tolist(), strict=True):
                if len(rows) and rows[i] == row and (self.live is None or self.live[offset + i]):
                    out[row] = offset + i
        return out

    def document_positions(self, position: int) -> IntArray:
        """Live positions of the document holding ``position``, in chunk order (a document's chunks are
        consecutive rows of one segment)."""
        i = int(np.searchsorted(self.offsets, position, side="right")) - 1
        segment = self.segments[i]
        local = segment.doc_chunks(int(segment.chunk_doc[position - self.offsets[i]]))
        out = np.sort(local) + self.offsets[i]
        return out if self.live is None else out[self.live[out]]

    def documents_titled(self, title: str) -> dict[str, int]:
        """Live documents titled ``title`` (case and spacing aside): document id -> its first live position."""
        out: dict[str, int] = {}
        for segment, offset, doc_live in zip(self.segments, self.offsets, self.doc_lives, strict=True):
            for slot in segment.slots_titled(title):
                if doc_live is not None and not doc_live[slot]:
                    continue
                local = np.sort(segment.doc_chunks(slot)) + offset
                alive = local if self.live is None else local[self.live[local]]
                if alive.size:
                    out[segment.document_ids[slot]] = int(alive[0])
        return out

    @property
    def document_ids(self) -> list[str]:
        """Document id per position (a list as long as the collection; for tools, not the query path)."""
        return [s.document_ids[int(d)] for s in self.segments for d in np.asarray(s.chunk_doc)]

    def date_fields(self) -> list[str]:
        """Metadata fields of kind "date" over live positions, the most covered first."""
        return self.metadata.date_fields()

    def date_values(self, field: str) -> npt.NDArray[np.float64]:
        """Per position, the field's date in days since 1970-01-01 UTC (the latest of a list), NaN where the
        position has none (any field without dates: all NaN). Built once per index set, read-only."""
        found = self._date_values.get(field)
        if found is None:
            parts = [s.metadata.latest_dates(field) for s in self.segments]
            found = np.concatenate(parts) if parts else np.zeros(0, dtype=np.float64)
            found.flags.writeable = False
            self._date_values[field] = found
        return found

    def extractor(self) -> FilterExtractor:
        """Filter extraction over this generation's metadata values, built on first use."""
        if self._extractor is None:
            from waypost.filters.extract import FilterExtractor

            self._extractor = FilterExtractor(self.metadata)
        return self._extractor

    def with_segments(
        self, segments: Sequence[Segment], lives: Sequence[BoolArray | None], generation: int, version: str
    ) -> IndexSet:
        return IndexSet(
            self.collection,
            generation,
            version,
            segments,
            lives,
            self.vocab,
            self.analyzers,
            self.params,
            exact_below=self.exact_below,
        )

    def tombstones(self) -> IntArray:
        """Row ids of dead positions."""
        dead = [
            np.asarray(s.row_ids)[~live] for s, live in zip(self.segments, self.lives, strict=True) if live is not None
        ]
        return np.concatenate(dead) if dead else np.zeros(0, dtype=np.int64)

    @classmethod
    def build(
        cls,
        collection: str,
        snap: ChunkSnapshot,
        approximate: bool = False,
        params: BM25Params | None = None,
        analyzer: Analyzers | None = None,
        exact_below: int = EXACT_DENSE_BELOW,
        defer_graph: bool = False,
    ) -> IndexSet:
        """Everything from one snapshot, as a single segment: the reference incremental updates must equal.
        Its dense vectors get an HNSW graph when ``approximate`` or at least ``exact_below`` rows, unless
        ``defer_graph`` (the caller builds it later; until then dense search reads exact scores)."""
        t0 = time.perf_counter()
        analyzer = analyzer or analyzers()
        vocab = Vocabulary()
        below = 0 if approximate else exact_below
        graph = len(snap.row_ids) >= below and not defer_graph
        segment = Segment.build(segment_name(snap.generation), snap, analyzer, vocab, graph)
        built = cls(
            collection, snap.generation, snap.version, [segment], [None], vocab, analyzer, params, exact_below=below
        )
        built.build_seconds = time.perf_counter() - t0
        return built

    def apply(self, changes: ChangeSet, approximate: bool = False) -> IndexSet:
        """This view moved to ``changes.generation``: removed rows tombstoned, added rows a new segment."""
        t0 = time.perf_counter()
        segments = list(self.segments)
        lives = list(self.lives)
        removed = np.asarray(changes.removed_rows, dtype=np.int64)
        for i, segment in enumerate(segments):
            positions = segment.positions_of_rows(removed)
            if not positions.size:
                continue
            live = np.ones(len(segment), np.bool_) if lives[i] is None else lives[i].copy()  # type: ignore[union-attr]
            newly = positions[live[positions]]
            live[positions] = False
            lives[i] = live
            segment.dense.mark_deleted(newly)
        if len(changes.added.row_ids):
            segments.append(Segment.build(segment_name(changes.generation), changes.added, self.analyzers, self.vocab))
            lives.append(None)
        keep = [i for i, live in enumerate(lives) if live is None or live.any()]
        updated = self.with_segments(
            [segments[i] for i in keep], [lives[i] for i in keep], changes.generation, changes.version
        )
        updated.build_seconds = time.perf_counter() - t0
        return updated


def segment_name(generation: int) -> str:
    return f"g{generation}-{uuid.uuid4().hex[:8]}"


def compact_vocabulary(state: IndexSet) -> IndexSet | None:
    """``state`` with a vocabulary of only the terms some row uses (ids renumbered in order), or ``None``
    when it has tombstones (their postings still name terms) or every term is used."""
    if any(live is not None for live in state.lives):
        return None
    size = len(state.vocab)
    used = np.zeros(size, dtype=np.bool_)
    for segment in state.segments:
        for postings in (segment.chunks, segment.documents):
            used[: postings.terms] |= np.asarray(postings.df) > 0
    if used.all():
        return None
    keep = np.flatnonzero(used)
    vocab = Vocabulary([state.vocab.terms[i] for i in keep.tolist()])
    segments = [
        replace(
            s,
            name=segment_name(state.generation),
            chunks=s.chunks.select_terms(keep, size),
            documents=s.documents.select_terms(keep, size),
            path=None,
            _lock=threading.Lock(),
        )
        for s in state.segments
    ]
    return IndexSet(
        state.collection,
        state.generation,
        state.version,
        segments,
        state.lives,
        vocab,
        state.analyzers,
        state.params,
        exact_below=state.exact_below,
    )


def install_merged(now: IndexSet, parts: list[Segment], merged: Segment) -> IndexSet | None:
    """``now`` with ``parts`` replaced by ``merged``; liveness comes from ``now`` row by row (rows
    deleted while the merge ran, even whole segments dropped since, stay deleted). ``None`` when
    ``now`` no longer holds what was merged (it was reloaded from another process's save)."""
    names = {s.name for s in parts}
    present = [s for s in now.segments if s.name in names]
    for s in now.segments:
        if s.name not in names and np.isin(np.asarray(s.row_ids), merged.row_ids).any():
            return None
    live_rows = [
        np.asarray(s.row_ids) if live is None else np.asarray(s.row_ids)[live]
        for s, live in zip(now.segments, now.lives, strict=True)
        if s.name in names
    ]
    live = np.isin(merged.row_ids, np.concatenate(live_rows)) if live_rows else np.zeros(len(merged), np.bool_)
    if not live.any():
        return (
            None
            if not present
            else now.with_segments(
                [s for s in now.segments if s.name not in names],
                [lv for s, lv in zip(now.segments, now.lives, strict=True) if s.name not in names],
                now.generation,
                now.version,
            )
        )
    merged.dense.mark_deleted(np.flatnonzero(~live))
    segments: list[Segment] = []
    lives: list[BoolArray | None] = []
    placed = False
    for s, old_live in zip(now.segments, now.lives, strict=True):
        if s.name in names:
            if not placed:
                segments.append(merged)
                lives.append(live)
                placed = True
            continue
        segments.append(s)
        lives.append(old_live)
    if not placed:  # every part was dropped meanwhile, yet some rows live on: impossible, but be safe
        return None
    return now.with_segments(segments, lives, now.generation, now.version)


__all__ = [
    "BM25Params",
    "BM25View",
    "IndexSet",
    "MergePolicy",
    "compact_vocabulary",
    "install_merged",
    "segment_name",
]
