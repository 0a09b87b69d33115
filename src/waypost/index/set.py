"""A collection's derived indexes as segments that follow the store's change log.

``IndexSet`` is an immutable view at one generation: segments (one large main segment, then small
ones), a liveness mask per segment (tombstones), and collection-wide BM25 statistics over live rows.
``LiveIndex`` keeps a collection's current ``IndexSet``: it catches up from the change log (deleted
rows become tombstones, added rows a new small segment), merges segments on a background thread past
a size threshold, and persists its state (segment directories plus a JSON manifest) beside the store,
acknowledging the persisted generation so the log can be compacted. Queries never wait for a merge or
a save: they keep using the view they were handed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from waypost.base import ChangeSet, ChunkSnapshot, DocumentStore, version_incarnation
from waypost.errors import CollectionNotFoundError
from waypost.index.dense import (
    EXACT_DENSE_BELOW,
    DenseIndex,
    DenseView,
    GraphBuildStopped,
    build_graphs,
    extend_graphs,
)
from waypost.index.lexical import FieldStats, Vocabulary, bm25_scores
from waypost.index.metadata import MetadataView
from waypost.index.references import ReferenceSegment, ReferenceView
from waypost.index.segment import Segment, fsync_path
from waypost.index.topk import Mask, Positions, Scores, top_k
from waypost.lru import DEFAULT_OPEN_COLLECTIONS, CollectionLRU
from waypost.text.analyzers import Analyzers, analyzers
from waypost.text.language import detector

if TYPE_CHECKING:
    from waypost.filters.extract import FilterExtractor

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]

STATE_FORMAT = 1
CONSUMER = "flat-indexes"
GRAPHS_LATER_FROM = 100_000  # rows: a rebuild this large answers first and builds its HNSW graphs afterwards
KEPT_ERRORS = 5  # recent background errors kept for ``status`` (all of them go to the log)

logger = logging.getLogger("waypost.index")


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
        segment = Segment.build(_segment_name(snap.generation), snap, analyzer, vocab, graph)
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
            segments.append(Segment.build(_segment_name(changes.generation), changes.added, self.analyzers, self.vocab))
            lives.append(None)
        keep = [i for i, live in enumerate(lives) if live is None or live.any()]
        updated = self.with_segments(
            [segments[i] for i in keep], [lives[i] for i in keep], changes.generation, changes.version
        )
        updated.build_seconds = time.perf_counter() - t0
        return updated


def _compact_vocabulary(state: IndexSet) -> IndexSet | None:
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
            name=_segment_name(state.generation),
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


def _with_new_graph(segment: Segment, generation: int) -> Segment:
    """A loaded segment whose HNSW graph was built at load (saved without one, then below the threshold) as an
    unsaved segment of a new name, so the next save writes it with its graph and later loads read that."""
    if not segment.dense.graphs or segment.path is None or (segment.path / "hnsw.bin").exists():
        return segment
    return replace(segment, name=_segment_name(generation), path=None, _lock=threading.Lock())


def _segment_name(generation: int) -> str:
    return f"g{generation}-{uuid.uuid4().hex[:8]}"


@dataclass
class LiveStatus:
    """What ``waypost stats`` shows about a collection's derived indexes."""

    generation: int
    segments: list[dict[str, Any]]
    tombstones: int
    persisted_generation: int | None
    last_merge: dict[str, Any] | None
    last_catch_up_ms: float
    loaded_from: str
    errors: list[str]  # the most recent background errors (at most ``KEPT_ERRORS``)
    error_count: int = 0  # every background error since this process opened the index

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class _Persisted:
    generation: int
    manifest: Path


class LiveIndex:
    """The current ``IndexSet`` of one collection in this process, kept current from the change log."""

    def __init__(
        self,
        store: DocumentStore,
        collection: str,
        directory: Path | None,
        approximate: bool = False,
        policy: MergePolicy | None = None,
        params: BM25Params | None = None,
        background: bool = True,
        exact_below: int = EXACT_DENSE_BELOW,
    ) -> None:
        self.store = store
        self.collection = collection
        self.directory = directory
        self.approximate = approximate
        # a main segment this large carries an HNSW graph, and dense search takes its candidates (0: always)
        self.exact_below = 0 if approximate else exact_below
        self.policy = policy or MergePolicy()
        self.params = params or BM25Params()
        self.background = background
        self.analyzers = analyzers()
        self._current: IndexSet | None = None
        self._lock = threading.Lock()  # one catch-up at a time; queries never take it on the fast path
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"waypost-index-{collection}")
        self._pending: Future[None] | None = None
        self._persisted: _Persisted | None = None
        self.last_merge: dict[str, Any] | None = None
        self.loaded_from = "none"
        self.errors: deque[str] = deque(maxlen=KEPT_ERRORS)  # the recent ones; every one is logged
        self.error_count = 0
        self._closed = False  # closed (evicted or shut down): background work runs inline
        self._stop_graphs = threading.Event()  # set on close: a background graph build gives up

    # -- reading ------------------------------------------------------------------------------
    def get(self) -> IndexSet:
        head = self.store.version(self.collection)
        current = self._current
        if current is not None and current.version == head:
            return current
        with self._lock:
            current = self._current
            if current is not None and current.version == self.store.version(self.collection):
                return current
            updated = self._catch_up(current)
            self._current = updated
        self._maybe_maintain(updated)
        return updated

    def _uid(self) -> str:
        return version_incarnation(self.store.version(self.collection))

    def _catch_up(self, current: IndexSet | None) -> IndexSet:
        uid = self._uid()
        if current is not None and version_incarnation(current.version) != uid:
            current = None  # the collection was dropped and made again
        if current is None:
            current = self._load_persisted(uid)
        if current is not None:
            changes = self.store.changes(self.collection, current.generation)
            if changes is None:  # the log was compacted past us: another process saved a newer state
                newer = self._load_persisted(uid)
                if newer is not None and newer.generation > current.generation:
                    changes = self.store.changes(self.collection, newer.generation)
                    current = newer
            if changes is not None:
                return current.apply(changes)
        snapshot = self.store.snapshot(self.collection)
        # a large collection answers (by exact dense scores) as soon as BM25 and the rest are built; its
        # graphs, minutes of work at a million chunks, follow on the worker thread
        defer = self._graphs_later(len(snapshot.row_ids))
        built = IndexSet.build(
            self.collection,
            snapshot,
            params=self.params,
            analyzer=self.analyzers,
            exact_below=self.exact_below,
            defer_graph=defer,
        )
        self.loaded_from = "rebuilt from the store"
        if defer:
            self._submit(self._graph_task(built.segments[0], built.generation))
        else:
            self._schedule(lambda: self._persist(built))
        return built

    def _graphs_later(self, rows: int) -> bool:
        """Whether a segment of ``rows`` rows that needs HNSW graphs gets them on the worker thread."""
        return self.background and not self._closed and rows >= max(self.exact_below, GRAPHS_LATER_FROM)

    def _graph_task(self, segment: Segment, generation: int) -> Callable[[], None]:
        """Build the HNSW graphs of a segment built or loaded without them, then put the segment with its
        graphs in its place (rows deleted meanwhile stay deleted) and save the state. Gives up when the index
        closes or the segment leaves the current state (merged, or a newer state loaded)."""

        def held() -> bool:
            current = self._current
            return current is not None and any(s.name == segment.name for s in current.segments)

        def gone() -> bool:
            return self._stop_graphs.is_set() or not held()

        def build() -> None:
            t0 = time.perf_counter()
            if self._stop_graphs.is_set():  # closed (set before ``_closed``: an inline run never takes the lock)
                return
            with self._lock:  # submitted while ``get`` holds the lock: its state is current once we have it
                if gone():
                    return  # closed, or the state that needed these graphs was replaced meanwhile
            vectors = segment.dense.vectors
            try:
                graphs = build_graphs(vectors, stop=gone)
            except GraphBuildStopped:
                logger.info("collection %r: background graph build stopped", self.collection)
                return
            with_graphs = replace(
                segment,
                name=_segment_name(generation),
                dense=DenseIndex(vectors, graphs=graphs),
                path=None,
                _lock=threading.Lock(),
            )
            with self._lock:
                now = self._current
                installed = None if now is None else self._install(now, [segment], with_graphs)
                if installed is None:
                    return  # merged or reloaded meanwhile: that state has its own graphs
                self._current = installed
            self.last_merge = {
                "at": time.time(),
                "segments": 1,
                "rows": len(with_graphs),
                "seconds": round(time.perf_counter() - t0, 3),
                "into_main": True,
                "graphs_built": len(with_graphs.dense.graphs),
            }
            if self.directory is not None:
                self._persist(installed)

        return build

    # -- maintenance: merges and saves, on the worker thread -----------------------------------
    def _schedule(self, task: Callable[[], None]) -> None:
        if not self.background or self._closed:
            self._run(task)
            return
        if self._pending is not None and not self._pending.done():
            return  # one task at a time; the next catch-up looks again
        self._submit(task)

    def _submit(self, task: Callable[[], None]) -> None:
        if self._closed:  # a caller kept this index past its close: no worker any more, run it here
            self._run(task)
            return
        self._pending = self._worker.submit(self._run, task)

    def _record_error(self, message: str, exc: BaseException, level: int = logging.WARNING) -> None:
        """A background failure: logged (``waypost.index``), counted, and the recent ones kept for ``status``."""
        self.error_count += 1
        self.errors.append(message)
        logger.log(level, "collection %r: %s", self.collection, message, exc_info=exc)

    def _run(self, task: Callable[[], None]) -> None:
        try:
            task()
        except Exception as exc:  # a failed merge or save leaves the live view as it was; the log says why
            self._record_error(f"background index work failed: {type(exc).__name__}: {exc}", exc, logging.ERROR)

    def _maybe_maintain(self, state: IndexSet) -> None:
        policy = self.policy
        if not state.segments:
            return
        main, small = state.segments[0], state.segments[1:]
        small_rows = sum(len(s) for s in small)
        main_dead = 0 if state.lives[0] is None else int((~state.lives[0]).sum())  # type: ignore[operator]
        saved = self._persisted.generation if self._persisted is not None else None
        if main_dead > policy.dead_ratio * max(1, len(main)) or (
            small and small_rows > policy.main_merge_rows and small_rows > policy.main_merge_ratio * len(main)
        ):
            self._schedule(self._merge_task(list(state.segments)))
        elif len(small) > policy.max_small_segments:
            self._schedule(self._merge_task(list(small)))
        elif self.directory is not None and (
            self._unsaved_rows(state) > policy.persist_rows
            or (saved is not None and state.generation - saved >= policy.persist_generations)
        ):
            self._schedule(lambda: self._persist(self._current))

    def _unsaved_rows(self, state: IndexSet) -> int:
        return sum(len(s) for s in state.segments if s.path is None)

    def _merge_task(self, parts: list[Segment]) -> Callable[[], None]:
        def merge() -> None:
            start = self._current
            if start is None:
                return
            t0 = time.perf_counter()
            lives = {s.name: live for s, live in zip(start.segments, start.lives, strict=True)}
            if any(s.name not in lives for s in parts):
                return  # already merged away
            whole = parts[0] is start.segments[0]
            rows = sum(len(s) if (lv := lives[s.name]) is None else int(lv.sum()) for s in parts)  # live rows merged
            graph = whole and rows >= self.exact_below
            main = parts[0].dense
            grow = graph and bool(main.graphs) and lives[parts[0].name] is None  # main's positions stay
            merged = Segment.merge(
                _segment_name(start.generation),
                [(s, lives[s.name]) for s in parts],
                len(start.vocab),
                approximate=graph and not grow,
            )
            if grow:  # the main graphs take the new rows (the last one copied first): no graph of the whole
                merged.dense.graphs = extend_graphs(main.graphs, merged.dense.vectors, len(main))
            with self._lock:
                now = self._current
                assert now is not None
                installed = self._install(now, parts, merged)
                if installed is None:
                    return
                self._current = installed
            installed = self._drop_unused_terms(installed)
            self.last_merge = {
                "at": time.time(),
                "segments": len(parts),
                "rows": len(merged),
                "seconds": round(time.perf_counter() - t0, 3),
                "into_main": whole,
            }
            if self.directory is not None:
                self._persist(installed)

        return merge

    def _drop_unused_terms(self, state: IndexSet) -> IndexSet:
        """After a merge into one segment without tombstones, the vocabulary keeps only the terms its rows
        use, so a deleted document's words leave the saved vocabulary; ``state`` itself otherwise."""
        compacted = _compact_vocabulary(state)
        if compacted is None:
            return state
        with self._lock:
            if self._current is not state:
                return state  # caught up meanwhile: the next merge compacts
            self._current = compacted
        return compacted

    def purge(self) -> dict[str, int]:
        """Merge every segment into one, dropping tombstoned rows and unused terms; save it, and delete
        every older saved state (and other incarnations' directories) from disk. Counts of what went."""
        caught_up = self.get()
        tombstones, terms = len(caught_up.tombstones()), len(caught_up.vocab)
        self.wait()  # a merge the catch-up started finishes first
        state = self._current or caught_up
        if len(state.segments) > 1 or state.live is not None:
            self._merge_task(list(state.segments))()
        state = self._drop_unused_terms(self._current or state)
        removed_files = 0
        if self.directory is not None:
            self._persist(state)
            uid = version_incarnation(state.version)
            with _directory_lock(self._base(uid), exclusive=True):
                removed_files += _collect_garbage(self._base(uid), keep_states=1)
            for other in self.directory.iterdir():
                if other.is_dir() and other.name != uid:
                    _remove_tree(other)
                    removed_files += 1
        return {
            "tombstoned_rows": tombstones,
            "vocabulary_terms": terms - len(state.vocab),
            "index_files": removed_files,
        }

    @staticmethod
    def _install(now: IndexSet, parts: list[Segment], merged: Segment) -> IndexSet | None:
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

    def _verify_task(self, segments: list[Segment]) -> Callable[[], None]:
        """Check every block of segments loaded with a sampled check. A corrupt one is removed from disk and
        the view dropped, so the next query rebuilds instead of using it."""

        def verify() -> None:
            for segment in segments:
                if segment.path is None:
                    continue
                try:
                    Segment.verify(segment.path, full=True)
                except (OSError, ValueError) as exc:
                    with _directory_lock(segment.path.parent, exclusive=True):
                        _remove_tree(segment.path)
                    with self._lock:
                        self._current = None
                        self._persisted = None
                    self._record_error(f"saved segment failed its full check, rebuilding: {exc}", exc)
                    return

        return verify

    # -- persistence ----------------------------------------------------------------------------
    def _base(self, uid: str) -> Path:
        assert self.directory is not None
        return self.directory / uid

    def _persist(self, state: IndexSet | None) -> None:
        """Save every unsaved segment, then a manifest naming the state; acknowledge its generation."""
        if self.directory is None or state is None:
            return
        uid = version_incarnation(state.version)
        base = self._base(uid)
        base.mkdir(parents=True, exist_ok=True)
        with _directory_lock(base, exclusive=True):  # no other process collects files while we save
            for segment in state.segments:
                if segment.path is not None and not (segment.path / "segment.json").exists():
                    segment.path = None  # another process collected it: save it again
                if segment.path is None:
                    target = base / f"seg-{segment.name}"
                    if not target.exists():
                        tmp = base / f".tmp-{segment.name}-{uuid.uuid4().hex[:6]}"
                        tmp.mkdir()
                        try:
                            segment.save(tmp)
                            fsync_path(tmp)
                            os.rename(tmp, target)
                            fsync_path(base)
                        finally:
                            _remove_tree(tmp)
                    segment.path = target
            terms = state.vocab.terms[: len(state.vocab)]
            payload = json.dumps(terms, ensure_ascii=False)
            digest = hashlib.sha1(payload.encode("utf-8")).hexdigest()[:16]
            vocab_file = base / f"vocab-{len(terms)}-{digest}.json"  # named by content: never another order
            if not vocab_file.exists():
                _atomic_write(vocab_file, payload)
            manifest = {
                "format": STATE_FORMAT,
                "uid": uid,
                "generation": state.generation,
                "version": state.version,  # the write history it reflects: a state of another is never loaded
                "segments": [f"seg-{s.name}" for s in state.segments],
                "tombstones": state.tombstones().tolist(),
                "vocab": vocab_file.name,
                "vocab_sha1": digest,
                "saved_at": time.time(),
            }
            path = base / f"state-{state.generation:012d}-{uuid.uuid4().hex[:8]}.json"
            _atomic_write(path, json.dumps(manifest))
            self._persisted = _Persisted(state.generation, path)
            try:
                self.store.acknowledge(self.collection, CONSUMER, state.generation, state.version)
            except CollectionNotFoundError:  # dropped while we saved: its directory goes with it
                logger.debug("collection %r was dropped while its index was saved", self.collection)
                return
            _collect_garbage(base, keep_states=2)

    def _load_persisted(self, uid: str) -> IndexSet | None:
        """The newest saved state this store can catch up from, or ``None``."""
        if self.directory is None or not self._base(uid).exists():
            return None
        base = self._base(uid)
        head = self.store.generation(self.collection)
        with _directory_lock(base, exclusive=False):  # saves and collection wait until we have loaded
            return self._load_newest(base, uid, head)

    def _load_newest(self, base: Path, uid: str, head: int) -> IndexSet | None:
        for path in _states_newest_first(base):
            try:
                t0 = time.perf_counter()
                manifest = json.loads(path.read_text())
                generation = int(manifest["generation"])
                if manifest.get("format") != STATE_FORMAT or manifest.get("uid") != uid or generation > head:
                    continue
                if manifest.get("version") != self.store.version_at(self.collection, generation):
                    continue  # saved for another write history (commits lost since), or the log moved past it
                payload = (base / manifest["vocab"]).read_text()
                if hashlib.sha1(payload.encode("utf-8")).hexdigest()[:16] != manifest.get("vocab_sha1"):
                    raise ValueError(f"vocabulary {manifest['vocab']} does not match its state")
                vocab = Vocabulary(json.loads(payload))
                later = max(self.exact_below, GRAPHS_LATER_FROM) if self._graphs_later(sys.maxsize) else None
                segments = [  # in the background the full check follows on the worker thread
                    Segment.load(
                        base / name, graph_from=self.exact_below, full_check=not self.background, build_below=later
                    )
                    for name in manifest["segments"]
                ]
                if any(s.chunks.terms > len(vocab) or s.documents.terms > len(vocab) for s in segments):
                    raise ValueError("a segment uses terms the saved vocabulary lacks")
                segments = [_with_new_graph(s, generation) for s in segments]
                tombstones = np.asarray(manifest["tombstones"], dtype=np.int64)
                lives: list[BoolArray | None] = []
                for s in segments:
                    dead = s.positions_of_rows(tombstones)
                    if dead.size:
                        live = np.ones(len(s), np.bool_)
                        live[dead] = False
                        lives.append(live)
                        s.dense.mark_deleted(dead)
                    else:
                        lives.append(None)
                state = IndexSet(
                    self.collection,
                    generation,
                    str(manifest["version"]),
                    segments,
                    lives,
                    vocab,
                    self.analyzers,
                    self.params,
                    exact_below=self.exact_below,
                )
                state.build_seconds = time.perf_counter() - t0
                self.loaded_from = f"{path.name} (saved generation {generation})"
                self._persisted = _Persisted(generation, path)
                if self.background:
                    self._submit(self._verify_task(segments))
                    if any(s.path is None for s in segments):  # graphs built at load: saved once, in the background
                        self._submit(lambda: self._persist(self._current))
                    for s in segments:  # saved without graphs it needs (a build stopped at close): they follow
                        if later is not None and len(s) >= later and not s.dense.graphs:
                            self._submit(self._graph_task(s, generation))
                return state
            except (OSError, ValueError, KeyError, TypeError, json.JSONDecodeError) as exc:
                self._record_error(f"ignored saved index state {path.name}: {exc}", exc)  # the next one may do
                continue
        return None

    # -- lifecycle ------------------------------------------------------------------------------
    def wait(self) -> None:
        """Block until background merges and saves are done (tests, benchmarks, shutdown)."""
        while self._pending is not None and not self._pending.done():
            self._pending.result()

    def flush(self) -> None:
        """Wait for background work, then persist anything unsaved."""
        self.wait()
        state = self._current
        if state is not None and self.directory is not None:
            if self._unsaved_rows(state) or self._persisted is None or self._persisted.generation != state.generation:
                self._run(lambda: self._persist(state))

    def close(self) -> None:
        """Finish background work, save what is unsaved, stop the worker thread (again: a no-op)."""
        if self._closed:
            return
        self._stop_graphs.set()  # a background graph build stops; the state is saved without it
        self.flush()
        self.shut_down()

    def shut_down(self) -> None:
        """Stop the worker thread without saving (the collection is being dropped); later work runs inline."""
        self._stop_graphs.set()
        self._closed = True
        self._worker.shutdown(wait=True)

    def status(self) -> LiveStatus:
        state = self.get()
        segments: list[dict[str, Any]] = []
        for s, live in zip(state.segments, state.lives, strict=True):
            segments.append(
                {
                    "name": s.name,
                    "rows": len(s),
                    "documents": s.document_count,
                    "tombstones": 0 if live is None else int((~live).sum()),
                    "saved": s.path is not None,
                }
            )
        return LiveStatus(
            generation=state.generation,
            segments=segments,
            tombstones=sum(int(x["tombstones"]) for x in segments),
            persisted_generation=None if self._persisted is None else self._persisted.generation,
            last_merge=self.last_merge,
            last_catch_up_ms=round(state.build_seconds * 1000, 3),
            loaded_from=self.loaded_from,
            errors=list(self.errors),
            error_count=self.error_count,
        )


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{uuid.uuid4().hex[:6]}")
    with tmp.open("w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    fsync_path(path.parent)


def _states_newest_first(base: Path) -> list[Path]:
    """Saved states by generation, then by when they were written (two processes may save one generation)."""

    def key(path: Path) -> tuple[int, float]:
        try:
            return int(path.name.split("-")[1]), path.stat().st_mtime
        except (ValueError, IndexError, OSError):  # an odd name, or removed meanwhile: tried last (and skipped)
            return -1, 0.0

    return sorted(base.glob("state-*.json"), key=key, reverse=True)


@contextmanager
def _directory_lock(base: Path, exclusive: bool) -> Iterator[None]:
    """An advisory lock between processes on one index directory (saves and collection vs loads)."""
    import fcntl

    base.mkdir(parents=True, exist_ok=True)
    with open(base / ".lock", "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _collect_garbage(base: Path, keep_states: int, tmp_grace_s: float = 3600.0) -> int:
    """Drop all but the newest saved states and the segments and vocabularies no kept state names (how many).
    Called with the directory lock held; processes holding older states keep their data (segments are
    loaded whole, except memory-mapped arrays, which outlive the files' removal)."""
    states = _states_newest_first(base)
    keep: set[str] = set()
    for path in states[:keep_states]:
        try:
            manifest = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:  # a state another process removes or writes now
            logger.debug("garbage collection skips unreadable state %s: %s", path, exc)
            continue
        keep.update(manifest.get("segments", []))
        keep.add(manifest.get("vocab", ""))
    removed = 0
    for path in states[keep_states:]:
        path.unlink(missing_ok=True)
        removed += 1
    now = time.time()
    for path in base.iterdir():
        try:
            if path.name.startswith(".") and ".tmp-" in path.name:
                if now - path.stat().st_mtime > tmp_grace_s:
                    _remove_tree(path) if path.is_dir() else path.unlink(missing_ok=True)
                    removed += 1
            elif (path.name.startswith("seg-") or path.name.startswith("vocab-")) and path.name not in keep:
                _remove_tree(path) if path.is_dir() else path.unlink(missing_ok=True)
                removed += 1
        except OSError as exc:  # removed by another process meanwhile, or not ours to remove: tried next time
            logger.debug("garbage collection could not remove %s: %s", path, exc)
            continue
    return removed


class IndexCache:
    """Hands out the current ``IndexSet`` of each collection, kept current from the change log. At most
    ``max_open`` collections keep a live index; the least recently used is flushed (unsaved work saved,
    background work finished) and closed, and reloaded from its saved state when used again."""

    def __init__(
        self,
        store: DocumentStore,
        cache_dir: Path | None,
        approximate: bool = False,
        policy: MergePolicy | None = None,
        background: bool = True,
        max_open: int = DEFAULT_OPEN_COLLECTIONS,
        exact_below: int = EXACT_DENSE_BELOW,
    ) -> None:
        self.store = store
        self.cache_dir = cache_dir
        self.approximate = approximate
        self.exact_below = exact_below
        self.policy = policy
        self.background = background
        self._live: CollectionLRU[LiveIndex] = CollectionLRU(max_open, self._open, self._close)

    def _open(self, collection: str) -> LiveIndex:
        directory = None if self.cache_dir is None else self.cache_dir / collection
        if directory is not None:
            _drop_legacy(directory)
        return LiveIndex(
            self.store,
            collection,
            directory,
            self.approximate,
            self.policy,
            background=self.background,
            exact_below=self.exact_below,
        )

    @staticmethod
    def _close(collection: str, index: LiveIndex) -> None:
        try:
            index.close()
        except CollectionNotFoundError:  # dropped meanwhile: nothing of it is worth saving
            logger.debug("collection %r was dropped before its index was closed", collection)

    def live(self, collection: str) -> LiveIndex:
        return self._live.get(collection)

    def get(self, collection: str) -> IndexSet:
        return self.live(collection).get()

    def open_collections(self) -> list[str]:
        """Collections with a live index in this process, least recently used first."""
        return self._live.names()

    def forget(self, collection: str) -> None:
        found = self._live.pop(collection)
        if found is not None:
            found._stop_graphs.set()  # a background graph build of a dropped collection is not waited for
            found.wait()
            found.shut_down()
        if self.cache_dir is not None:
            _remove_tree(self.cache_dir / collection)

    def close(self) -> None:
        self._live.close_all()


def _drop_legacy(directory: Path) -> None:
    """Caches of the single-snapshot design (``bm25-*``) are never read again."""
    if directory.exists():
        for old in directory.glob("bm25-*"):
            _remove_tree(old)


def _remove_tree(path: Path) -> None:
    """Remove a directory tree, as much of it as can be; what cannot be removed is logged (a leftover
    directory is collected by a later save)."""

    def report(_func: Callable[..., Any], failed: str, exc_info: Any) -> None:
        exc = exc_info[1] if isinstance(exc_info, tuple) else exc_info
        if not isinstance(exc, FileNotFoundError):  # already gone is what we wanted
            logger.warning("could not remove %s: %s", failed, exc)

    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=report)
    else:
        shutil.rmtree(path, onerror=report)


__all__ = ["BM25Params", "IndexCache", "IndexSet", "LiveIndex", "MergePolicy"]
