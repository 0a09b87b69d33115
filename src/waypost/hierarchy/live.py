"""Trees that follow their collection: loaded from the store, caught up from the change log before
every use, rebuilt atomically beside the live one."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from waypost.base import ChunkSnapshot, DocumentStore, Embedder, FloatMatrix, TreeRepository, version_incarnation
from waypost.errors import WaypostError
from waypost.hierarchy.search import TreeArrays
from waypost.hierarchy.summarize import ExtractiveSummarizer, Summarizer
from waypost.hierarchy.tree import Leaves, Progress, Tree, TreeConfig
from waypost.index.set import IndexSet
from waypost.lru import DEFAULT_OPEN_COLLECTIONS, CollectionLRU

CONSUMER = "tree"
BUILDER = "tree-build"  # + ":<host>:<pid>" of the process building


def _builder_name() -> str:
    return f"{BUILDER}:{socket.gethostname()}:{os.getpid()}"


def _dead_builder(name: str, prefix: str = BUILDER) -> bool:
    """A builder consumer left by a process of this host that no longer runs (killed mid-rebuild)."""
    parts = name.split(":")
    if len(parts) != 3 or parts[0] != prefix or parts[1] != socket.gethostname() or not parts[2].isdigit():
        return False
    try:
        os.kill(int(parts[2]), 0)
    except ProcessLookupError:  # no such process: the builder died
        return True
    except PermissionError:  # the process exists (another user's): alive
        return False
    return False


_uid = version_incarnation  # the incarnation part of a collection version


def leaves_of(snapshot: ChunkSnapshot, language: str) -> Leaves:
    return Leaves(
        snapshot.row_ids, snapshot.document_ids, snapshot.chunk_texts, snapshot.embeddings, language,
        snapshot.sections,
    )  # fmt: skip


@dataclass
class TreeStatus:
    collection: str
    built: bool
    shape: str = ""  # full | lite
    generation: int = 0
    store_generation: int = 0
    nodes: int = 0
    layers: dict[int, int] = field(default_factory=dict)
    documents: int = 0
    changed_nodes: int = 0
    nodes_at_build: int = 0
    drift: float = 0.0
    rebuild_advised: bool = False
    summarizer: str = ""
    size_mb: float = 0.0
    build_seconds: dict[str, float] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class LiveTree:
    """One collection's tree. ``get`` returns it current with the store (building it on first use)."""

    def __init__(
        self,
        collection: str,
        store: DocumentStore,
        trees: TreeRepository,
        embedder: Embedder,
        summarizer: Summarizer,
        requested: TreeConfig | None,
    ) -> None:
        self.collection = collection
        self.store = store
        self.trees = trees
        self.embedder = embedder
        self.summarizer = summarizer
        self.requested = requested  # None: a stored tree keeps its shape; a new one gets TreeConfig()
        self._lock = threading.RLock()
        self._tree: Tree | None = None
        self._name = ""
        self._incarnation = ""  # the collection's uid the tree was built for (drop/recreate changes it)
        self.changes = 0  # bumps whenever the tree changes: search arrays are cached on it
        self._arrays: tuple[tuple[int, int, str], TreeArrays] | None = None
        self.last_update: dict[str, Any] = {}  # what the last catch-up did: documents, nodes touched, ms

    def _language(self, snapshot_languages: list[str]) -> str:
        declared = self.store.collection_language(self.collection)
        if declared:
            return declared
        counts = Counter(lang for lang in snapshot_languages if lang and lang != "und")
        return counts.most_common(1)[0][0] if counts else "en"

    def _empty(self, config: TreeConfig | None = None) -> Tree:
        return Tree(config or self.requested or TreeConfig(), self.summarizer, self.embedder)

    def _build_config(self) -> TreeConfig:
        """What a (re)build makes: the requested shape, else the stored tree's, else the default."""
        if self.requested is not None:
            return self.requested
        record = self.trees.record(self.collection)
        return record.config if record is not None else TreeConfig()

    def exists(self) -> bool:
        with self._lock:
            return self._tree is not None or self.trees.record(self.collection) is not None

    def get(self, build: bool = True, progress: Progress | None = None) -> Tree | None:
        with self._lock:
            current = _uid(self.store.version(self.collection))
            if self._tree is not None and self._incarnation != current:
                self._tree = None  # the collection was dropped and made again (maybe by another process)
            if self._tree is None:
                tree = self._empty()
                record = self.trees.load(self.collection, tree)
                if record is not None and _uid(record.version) != current:
                    record = None  # a tree of an earlier incarnation of the collection
                if record is not None and self.requested is not None and record.config.shape != self.requested.shape:
                    record = None  # a tree of another shape than the one asked for: build the one asked for
                if record is None:
                    if not build:
                        return None
                    return self.rebuild(progress)
                tree.config = record.config  # the stored tree's shape governs its updates
                self.forget_dead_builders()
                if record.summarizer != self.summarizer.name:
                    tree.summarizer = self.summarizer  # summaries written by another summarizer stay until rebuilt
                self._tree, self._name = tree, record.tree
                self._incarnation = current
                self.changes += 1
            self._catch_up(progress)
            return self._tree

    def arrays(self, indexes: IndexSet, build: bool = True, progress: Progress | None = None) -> TreeArrays | None:
        """The tree current with the store, as search arrays over ``indexes``' positions (cached)."""
        with self._lock:
            tree = self.get(build, progress)
            if tree is None:
                return None
            key = (self.changes, id(indexes), indexes.version)
            if self._arrays is None or self._arrays[0] != key:
                self._arrays = (key, TreeArrays(tree, indexes, self.embedder.dimension))
            return self._arrays[1]

    def _catch_up(self, progress: Progress | None) -> None:
        tree = self._tree
        assert tree is not None
        head = self.store.generation(self.collection)
        if tree.generation >= head:
            return
        changes = self.store.changes(self.collection, tree.generation)
        if changes is None:  # the log no longer reaches back: build anew
            self.rebuild(progress)
            return
        if changes.empty and changes.generation <= tree.generation:
            return
        base = tree.generation
        t0 = time.perf_counter()
        added = leaves_of(changes.added, self._language(changes.added.languages))
        touched = tree.apply(changes.removed_rows.tolist(), added, changes.generation, self._leaf_texts)
        if not self.trees.save_changes(self.collection, self._name, tree, base):
            self._tree = None  # another process moved the stored tree: take that one
            self.get(build=True, progress=progress)
            return
        self.store.acknowledge(self.collection, CONSUMER, tree.generation, changes.version)
        self.changes += 1
        self.last_update = {
            "documents": len(changes.documents),
            "nodes_touched": len(touched),
            "nodes": len(tree.nodes),
            "ms": round((time.perf_counter() - t0) * 1000, 1),
        }

    def _leaf_texts(self, rows: list[int]) -> list[str]:
        return [s.chunk.text for s in self.store.chunks_by_row(self.collection, rows)]

    def rebuild(self, progress: Progress | None = None) -> Tree:
        """Build a new tree from the collection and swap it in atomically; queries keep the old one meanwhile."""
        started = self.store.generation(self.collection)
        self.forget_dead_builders()
        builder = _builder_name()
        self.store.acknowledge(self.collection, builder, started)  # keeps the log from here while we build
        try:
            t0 = time.perf_counter()
            snapshot = self.store.snapshot(self.collection)
            if len(snapshot.row_ids) == 0:
                raise WaypostError(f"collection {self.collection!r} is empty: add documents before building a tree")
            tree = self._empty(self._build_config())
            tree.stats.add("read", time.perf_counter() - t0)
            tree.build(leaves_of(snapshot, self._language(snapshot.languages)), snapshot.generation, progress)
            name = self.trees.save_new(self.collection, tree, snapshot.version)
            self.store.acknowledge(self.collection, CONSUMER, snapshot.generation, snapshot.version)
        finally:
            self.store.forget_consumer(self.collection, builder)
        with self._lock:
            self._tree, self._name = tree, name
            self._incarnation = _uid(snapshot.version)
            self.changes += 1
            self._catch_up(progress)
            return tree

    def forget_dead_builders(self) -> None:
        """Release the change log held by rebuilds whose process was killed (it would never be compacted)."""
        for name in self.store.consumers(self.collection):
            if _dead_builder(name):
                self.store.forget_consumer(self.collection, name)

    def status(self) -> TreeStatus:
        head = self.store.generation(self.collection)
        record = self.trees.record(self.collection)
        if record is None:
            return TreeStatus(self.collection, False, store_generation=head)
        with self._lock:
            tree = self._tree
            if tree is None or tree.generation < record.generation:
                tree = self._empty(record.config)
                self.trees.load(self.collection, tree)
        drift = tree.changed_since_build / max(1, tree.nodes_at_build)
        return TreeStatus(
            self.collection,
            True,
            generation=tree.generation,
            store_generation=head,
            nodes=len(tree.nodes),
            layers=tree.layers(),
            documents=len(tree.document_nodes()),
            changed_nodes=tree.changed_since_build,
            nodes_at_build=tree.nodes_at_build,
            drift=round(drift, 4),
            rebuild_advised=drift > record.config.drift_threshold,
            shape=record.config.shape,
            summarizer=record.summarizer,
            size_mb=round(self.trees.size_bytes(self.collection) / 2**20, 2),
            build_seconds=dict(record.stats.get("seconds", {})),
            problems=tree.check(),
        )


class DeferredEmbedder:
    """An embedder loaded on its first use: reading a tree's status or nodes needs no model."""

    def __init__(self, model_id: str, dimension: int, load: Callable[[], Embedder]) -> None:
        self._model_id, self._dimension, self._load = model_id, dimension, load
        self._embedder: Embedder | None = None

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        return self._dimension

    def _real(self) -> Embedder:
        if self._embedder is None:
            self._embedder = self._load()
        return self._embedder

    def embed_documents(self, texts: Sequence[str]) -> FloatMatrix:
        return self._real().embed_documents(texts)

    def embed_query(self, text: str) -> FloatMatrix:
        return self._real().embed_query(text)


class TreeCache:
    """The live trees of one store, one per collection."""

    def __init__(
        self,
        store: DocumentStore,
        trees: TreeRepository,
        embedder_for: Callable[[str], Embedder],
        summarizer_for: Callable[[str], Summarizer] | None = None,
        requested: TreeConfig | None = None,
        max_open: int = DEFAULT_OPEN_COLLECTIONS,
    ) -> None:
        self.store = store
        self.trees = trees
        self.embedder_for = embedder_for
        self.summarizer_for = summarizer_for or (lambda _c: ExtractiveSummarizer())
        self.requested = requested
        # every change is saved as it is made, so closing a tree is dropping it; the next use loads it again
        self._live: CollectionLRU[LiveTree] = CollectionLRU(max_open, self._open)

    def _open(self, collection: str) -> LiveTree:
        info = self.store.collection(collection)
        return LiveTree(
            collection,
            self.store,
            self.trees,
            DeferredEmbedder(info.embed_model, info.embed_dim, lambda: self.embedder_for(info.embed_model)),
            self.summarizer_for(collection),
            self.requested,
        )

    def live(self, collection: str) -> LiveTree:
        return self._live.get(collection)

    def open_collections(self) -> list[str]:
        return self._live.names()

    def forget(self, collection: str) -> None:
        self._live.pop(collection)
        self.trees.drop(collection)
        self.store.forget_consumer(collection, CONSUMER)
