"""``LiveIndex`` keeps a collection's current ``IndexSet``: it catches up from the change log (deleted
rows become tombstones, added rows a new small segment), merges segments on a background thread past
a size threshold, and persists its state (segment directories plus a JSON manifest) beside the store,
acknowledging the persisted generation so the log can be compacted. Queries never wait for a merge or
a save: they keep using the view they were handed.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from waypost.base import DocumentStore, version_incarnation
from waypost.errors import CollectionNotFoundError
from waypost.index.dense import (
    EXACT_DENSE_BELOW,
    DenseIndex,
    GraphBuildStopped,
    build_graphs,
    extend_graphs,
)
from waypost.index.saved_state import StateSettings, load_state, save_state
from waypost.index.segment import Segment
from waypost.index.set import (
    BM25Params,
    IndexSet,
    MergePolicy,
    compact_vocabulary,
    install_merged,
    segment_name,
)
from waypost.index.state_files import (
    collect_garbage,
    directory_lock,
    remove_tree,
    states_newest_first,
)
from waypost.text.analyzers import analyzers

CONSUMER = "flat-indexes"
GRAPHS_LATER_FROM = 100_000  # rows: a rebuild this large answers first and builds its HNSW graphs afterwards
KEPT_ERRORS = 5  # recent background errors kept for ``status`` (all of them go to the log)

logger = logging.getLogger("waypost.index")


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
                name=segment_name(generation),
                dense=DenseIndex(vectors, graphs=graphs),
                path=None,
                _lock=threading.Lock(),
            )
            with self._lock:
                now = self._current
                installed = None if now is None else install_merged(now, [segment], with_graphs)
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
                segment_name(start.generation),
                [(s, lives[s.name]) for s in parts],
                len(start.vocab),
                approximate=graph and not grow,
            )
            if grow:  # the main graphs take the new rows (the last one copied first): no graph of the whole
                merged.dense.graphs = extend_graphs(main.graphs, merged.dense.vectors, len(main))
            with self._lock:
                now = self._current
                assert now is not None
                installed = install_merged(now, parts, merged)
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
        compacted = compact_vocabulary(state)
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
            with directory_lock(self._base(uid), exclusive=True):
                removed_files += collect_garbage(self._base(uid), keep_states=1)
            for other in self.directory.iterdir():
                if other.is_dir() and other.name != uid:
                    remove_tree(other)
                    removed_files += 1
        return {
            "tombstoned_rows": tombstones,
            "vocabulary_terms": terms - len(state.vocab),
            "index_files": removed_files,
        }

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
                    with directory_lock(segment.path.parent, exclusive=True):
                        remove_tree(segment.path)
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
        with directory_lock(base, exclusive=True):  # no other process collects files while we save
            path = save_state(base, uid, state)
            self._persisted = _Persisted(state.generation, path)
            try:
                self.store.acknowledge(self.collection, CONSUMER, state.generation, state.version)
            except CollectionNotFoundError:  # dropped while we saved: its directory goes with it
                logger.debug("collection %r was dropped while its index was saved", self.collection)
                return
            collect_garbage(base, keep_states=2)

    def _load_persisted(self, uid: str) -> IndexSet | None:
        """The newest saved state this store can catch up from, or ``None``."""
        if self.directory is None or not self._base(uid).exists():
            return None
        base = self._base(uid)
        head = self.store.generation(self.collection)
        with directory_lock(base, exclusive=False):  # saves and collection wait until we have loaded
            return self._load_newest(base, uid, head)

    def _load_newest(self, base: Path, uid: str, head: int) -> IndexSet | None:
        for path in states_newest_first(base):
            try:
                later = max(self.exact_below, GRAPHS_LATER_FROM) if self._graphs_later(sys.maxsize) else None
                state = load_state(
                    path,
                    uid,
                    head,
                    lambda generation: self.store.version_at(self.collection, generation),
                    StateSettings(self.collection, self.analyzers, self.params, self.exact_below, not self.background),
                    build_below=later,
                )
                if state is None:
                    continue
                generation, segments = state.generation, list(state.segments)
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
    def stop_background_graphs(self) -> None:
        """A background HNSW build gives up (its collection is being dropped)."""
        self._stop_graphs.set()

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


__all__ = ["LiveIndex", "LiveStatus"]
