"""Knowledge graphs that follow their collection: loaded from the store, caught up from the change log
before every use (extracting only the chunks added), rebuilt whole only when asked or when the log no
longer reaches back."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from waypost.base import ChunkSnapshot, DocumentStore, Embedder, GraphRepository
from waypost.errors import WaypostError
from waypost.graph.communities import CommunityReporter, ExtractiveReporter, detect, update, write_reports
from waypost.graph.graph import Community, FloatArray, GraphConfig, KnowledgeGraph, Touched
from waypost.graph.model import ChunkExtraction, ChunkInput, Extractor
from waypost.hierarchy.live import DeferredEmbedder, _dead_builder, _uid
from waypost.lru import DEFAULT_OPEN_COLLECTIONS, CollectionLRU
from waypost.progress import progress as progress_bar

CONSUMER = "graph"
BUILDER = "graph-build"  # + ":<host>:<pid>" of the process building
EMBED_BATCH = 512


@dataclass
class GraphStatus:
    collection: str
    built: bool
    generation: int = 0
    store_generation: int = 0
    extractor: str = ""
    reporter: str = ""
    entities: int = 0
    named_entities: int = 0
    relations: int = 0
    mentions: int = 0
    synonyms: int = 0
    communities: dict[int, int] = field(default_factory=dict)  # level -> count
    chunks: int = 0
    drift: float = 0.0
    size_mb: float = 0.0
    build_seconds: dict[str, float] = field(default_factory=dict)
    last_update: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def inputs_of(snapshot: ChunkSnapshot) -> list[ChunkInput]:
    return [ChunkInput(text, snapshot.titles.get(doc, "")) for text, doc in
            zip(snapshot.chunk_texts, snapshot.document_ids, strict=True)]  # fmt: skip


class LiveGraph:
    """One collection's knowledge graph. ``get`` returns it current with the store (building it on first use)."""

    def __init__(
        self,
        collection: str,
        store: DocumentStore,
        graphs: GraphRepository,
        embedder: Embedder,
        extractor: Extractor,
        reporter: CommunityReporter,
        config: GraphConfig | None = None,
    ) -> None:
        self.collection = collection
        self.store = store
        self.graphs = graphs
        self.embedder = embedder
        self.extractor = extractor
        self.reporter = reporter
        self.config = config
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)  # readers left, or a catch-up ended
        self._readers = 0  # queries reading the graph now (a catch-up waits for none)
        self._writing = False  # a catch-up is changing the graph in place
        # per thread id: how deep inside ``reading`` it is (not a thread-local: an abandoned section may be
        # closed by the garbage collector on another thread, and must still clear its own thread's depth)
        self._depths: dict[int, int] = {}
        self._graph: KnowledgeGraph | None = None
        self._incarnation = ""
        self.last_update: dict[str, Any] = {}
        self._derived: dict[str, tuple[Any, Any]] = {}  # name -> (key, value): search structures

    # -- embedding --------------------------------------------------------------------------------------
    def _embed(self, texts: list[str]) -> FloatArray:
        if not texts:
            return np.zeros((0, self.embedder.dimension), dtype=np.float32)
        parts = [self.embedder.embed_documents(texts[i : i + EMBED_BATCH]) for i in range(0, len(texts), EMBED_BATCH)]
        return np.asarray(np.concatenate(parts), dtype=np.float32)

    def _embed_reports(self, graph: KnowledgeGraph, ids: Sequence[int]) -> None:
        """A community's vector: the mean of its named members' name vectors, weighted by mentions (free:
        embedding every report would cost more than the extraction); its title's vector if it has none."""
        titles: list[Community] = []
        for cid in ids:
            c = graph.communities.get(cid)
            if c is None:
                continue
            named = [graph.entities[m] for m in c.members if graph.entities[m].vector is not None]
            if not named:
                titles.append(c)
                continue
            weights = np.asarray([sum(e.rows.values()) for e in named], dtype=np.float32)
            mean = (np.stack([e.vector for e in named]) * weights[:, None]).sum(axis=0)  # type: ignore[misc]
            c.vector = (mean / max(float(np.linalg.norm(mean)), 1e-9)).astype(np.float32)
        for c, v in zip(titles, self._embed([c.title for c in titles]), strict=True):
            c.vector = v

    # -- life cycle -------------------------------------------------------------------------------------
    def exists(self) -> bool:
        with self._lock:
            return self._graph is not None or self.graphs.record(self.collection) is not None

    def loaded(self) -> KnowledgeGraph | None:
        """The graph if it is in memory now, as it is (never loads, builds nor catches up: for cheap reads
        such as the router's features)."""
        return self._graph

    @contextmanager
    def reading(self) -> Iterator[KnowledgeGraph | None]:
        """Hold the graph still for one query: it is caught up first, then no catch-up changes it until the
        block ends; inside, ``get`` serves it as it is (a query filters chunks by the live indexes, so a
        deleted document is never returned even if the graph is a step behind)."""
        graph = self.get()
        thread = threading.get_ident()
        with self._lock:
            while self._writing:
                self._changed.wait()
            self._readers += 1
            depth = self._depths.get(thread, 0)
            self._depths[thread] = depth + 1
        try:
            yield self._graph if self._graph is not None else graph
        finally:  # also when the caller abandons the section: the generator is closed, this runs
            with self._lock:
                if depth:
                    self._depths[thread] = depth
                else:
                    self._depths.pop(thread, None)
                self._readers -= 1
                self._changed.notify_all()

    def _depth(self) -> int:
        """How deep this thread is inside ``reading`` (the caller holds ``_lock``)."""
        return self._depths.get(threading.get_ident(), 0)

    @contextmanager
    def _exclusive(self) -> Iterator[None]:
        """Change the graph in place once no query reads it (the caller holds ``_lock``)."""
        self._writing = True
        try:
            while self._readers > self._depth():
                self._changed.wait()
            yield
        finally:
            self._writing = False
            self._changed.notify_all()

    def get(self, build: bool = True, show_progress: bool = False) -> KnowledgeGraph | None:
        with self._lock:
            if self._depth() > 0 and self._graph is not None:
                return self._graph  # inside ``reading``: as it is
            while self._writing:
                self._changed.wait()
            current = _uid(self.store.version(self.collection))
            if self._graph is not None and self._incarnation != current:
                self._graph = None  # the collection was dropped and made again
            if self._graph is None:
                loaded = self.graphs.load(self.collection)
                if loaded is not None and (
                    _uid(loaded[1].version) != current
                    or loaded[1].extractor != self.extractor.name
                    or loaded[1].reporter != self.reporter.name
                ):
                    loaded = None  # an earlier incarnation's graph, or another extractor's or reporter's: build anew
                if loaded is None:
                    if not build:
                        return None
                    return self.rebuild(show_progress)
                self._graph = loaded[0]
                self._incarnation = current
                self.forget_dead_builders()
            self._catch_up(show_progress)
            return self._graph

    def _extract(self, chunks: list[ChunkInput], show_progress: bool, what: str) -> list[ChunkExtraction]:
        if not chunks:
            return []  # a catch-up that only deletes needs no model
        with progress_bar(show_progress and len(chunks) > 0) as bar:
            task = bar.add_task(what, total=len(chunks)) if bar is not None else None

            def advance(n: int) -> None:
                if bar is not None and task is not None:
                    bar.advance(task, n)

            return self.extractor.extract(chunks, advance)

    def rebuild(self, show_progress: bool = False) -> KnowledgeGraph:
        """Extract every chunk, detect communities, write their reports, and replace the stored graph in one
        transaction; queries keep using the old graph meanwhile."""
        started = self.store.generation(self.collection)
        self.forget_dead_builders()
        builder = f"{BUILDER}:{_builder_suffix()}"
        self.store.acknowledge(self.collection, builder, started)  # keeps the log from here while we build
        try:
            seconds: dict[str, float] = {}
            t0 = time.perf_counter()
            snapshot = self.store.snapshot(self.collection)
            if len(snapshot.row_ids) == 0:
                raise WaypostError(f"collection {self.collection!r} is empty: add documents before building a graph")
            extractions = self._extract(inputs_of(snapshot), show_progress, "graph: extracting entities")
            seconds["extract"] = time.perf_counter() - t0
            t1 = time.perf_counter()
            graph = KnowledgeGraph(self.config or GraphConfig())
            graph.apply([], list(zip(snapshot.row_ids.tolist(), extractions, strict=True)), self._embed,
                        snapshot.generation)  # fmt: skip
            seconds["entities"] = time.perf_counter() - t1
            t2 = time.perf_counter()
            ids = detect(graph)
            seconds["communities"] = time.perf_counter() - t2
            t3 = time.perf_counter()
            write_reports(graph, ids, self.reporter)
            self._embed_reports(graph, sorted(ids))
            seconds["reports"] = time.perf_counter() - t3
            t4 = time.perf_counter()
            self.graphs.save_new(self.collection, graph, snapshot.version, self.extractor.name, self.reporter.name,
                                 {"seconds": {}})  # fmt: skip
            seconds["save"] = time.perf_counter() - t4
            seconds["total"] = time.perf_counter() - t0
            self.graphs.set_stats(self.collection, {"seconds": {k: round(v, 2) for k, v in seconds.items()}})
            self.store.acknowledge(self.collection, CONSUMER, snapshot.generation, snapshot.version)
        finally:
            self.store.forget_consumer(self.collection, builder)
        with self._lock:
            while self._writing:
                self._changed.wait()
            self._graph = graph  # queries reading the old graph keep it: it is not changed again
            self._incarnation = _uid(snapshot.version)
            self._catch_up(show_progress)
            return graph

    def _catch_up(self, show_progress: bool) -> None:
        graph = self._graph
        assert graph is not None
        head = self.store.generation(self.collection)
        if graph.generation >= head:
            return
        changes = self.store.changes(self.collection, graph.generation)
        if changes is None:  # the log no longer reaches back: build anew
            self.rebuild(show_progress)
            return
        if changes.empty and changes.generation <= graph.generation:
            return
        base = graph.generation
        t0 = time.perf_counter()
        added = changes.added
        extractions = self._extract(inputs_of(added), show_progress, "graph: extracting new chunks")
        pairs = list(zip(added.row_ids.tolist(), extractions, strict=True))
        with self._exclusive():
            touched = graph.apply(changes.removed_rows.tolist(), pairs, self._embed, changes.generation)
            rewrote = graph.changed_since_leiden > graph.config.drift_threshold * max(1, graph.entities_at_leiden)
            if rewrote:
                dirty, dropped = detect(graph), set[int]()
            else:
                dirty, dropped = update(graph, touched)
            write_reports(graph, dirty, self.reporter)
            self._embed_reports(graph, sorted(dirty))
            saved = self.graphs.save_changes(self.collection, graph, base, touched, dirty, dropped, rewrote)
            if not saved:
                self._graph = None  # another process moved the stored graph: take that one
        if not saved:
            self.get(build=True, show_progress=show_progress)
            return
        self.store.acknowledge(self.collection, CONSUMER, graph.generation, changes.version)
        self.last_update = {
            "documents": len(changes.documents),
            "chunks_added": len(added.row_ids),
            "chunks_removed": int(changes.removed_rows.size),
            "entities_touched": len(touched.entities),
            "entities_dropped": len(touched.dropped_entities),
            "communities_rewritten": len(dirty),
            "leiden_rerun": rewrote,
            "ms": round((time.perf_counter() - t0) * 1000, 1),
        }

    def forget_dead_builders(self) -> None:
        for name in self.store.consumers(self.collection):
            if _dead_builder(name, BUILDER):
                self.store.forget_consumer(self.collection, name)

    def derived(self, name: str, make: Callable[[KnowledgeGraph], Any], key: object = None) -> Any:
        """A search structure over the current graph (``make(graph)``), cached until the graph changes."""
        with self._lock:
            graph = self.get()
            assert graph is not None
            full_key = (id(graph), graph.version, key)
            cached = self._derived.get(name)
            if cached is None or cached[0] != full_key:
                cached = (full_key, make(graph))
                self._derived[name] = cached
            return cached[1]

    def status(self) -> GraphStatus:
        head = self.store.generation(self.collection)
        record = self.graphs.record(self.collection)
        if record is None:
            return GraphStatus(self.collection, False, store_generation=head)
        with self._lock:
            graph = self._graph
        if graph is None or graph.generation < record.generation:
            loaded = self.graphs.load(self.collection)
            assert loaded is not None
            graph = loaded[0]
        levels: dict[int, int] = {}
        for c in graph.communities.values():
            levels[c.level] = levels.get(c.level, 0) + 1
        return GraphStatus(
            self.collection,
            True,
            generation=graph.generation,
            store_generation=head,
            extractor=record.extractor,
            reporter=record.reporter,
            entities=len(graph.entities),
            named_entities=sum(1 for e in graph.entities.values() if e.kind != "phrase"),
            relations=len(graph.relations),
            mentions=sum(len(v) for v in graph.row_entities.values()),
            synonyms=sum(len(v) for v in graph.synonyms.values()) // 2,
            communities=dict(sorted(levels.items())),
            chunks=len(graph.row_entities),
            drift=round(graph.changed_since_leiden / max(1, graph.entities_at_leiden), 4),
            size_mb=round(self.graphs.size_bytes(self.collection) / 2**20, 2),
            build_seconds=dict(record.stats.get("seconds", {})),
            last_update=dict(self.last_update),
        )


def _builder_suffix() -> str:
    import os
    import socket

    return f"{socket.gethostname()}:{os.getpid()}"


class GraphCache:
    """The live graphs of one store, one per collection."""

    def __init__(
        self,
        store: DocumentStore,
        graphs: GraphRepository,
        embedder_for: Callable[[str], Embedder],
        extractor: Callable[[], Extractor],
        reporter: Callable[[], CommunityReporter] | None = None,
        config: GraphConfig | None = None,
        max_open: int = DEFAULT_OPEN_COLLECTIONS,
    ) -> None:
        self.store = store
        self.graphs = graphs
        self.embedder_for = embedder_for
        self.extractor = extractor
        self.reporter = reporter or ExtractiveReporter
        self.config = config
        # every change is saved as it is made, so closing a graph is dropping it (what its extractor holds
        # open is released with it, not closed here: a query still reading the graph may use it); the next
        # use loads it again
        self._live: CollectionLRU[LiveGraph] = CollectionLRU(max_open, self._open)

    def _open(self, collection: str) -> LiveGraph:
        info = self.store.collection(collection)
        return LiveGraph(
            collection,
            self.store,
            self.graphs,
            DeferredEmbedder(info.embed_model, info.embed_dim, lambda: self.embedder_for(info.embed_model)),
            self.extractor(),
            self.reporter(),
            self.config,
        )

    def live(self, collection: str) -> LiveGraph:
        return self._live.get(collection)

    def open_collections(self) -> list[str]:
        return self._live.names()

    def forget(self, collection: str) -> None:
        self._live.pop(collection)
        self.graphs.drop(collection)
        self.store.forget_consumer(collection, CONSUMER)


__all__ = ["CONSUMER", "GraphCache", "GraphStatus", "LiveGraph", "Touched"]
