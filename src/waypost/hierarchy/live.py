"""Trees that follow their collection: loaded from the store, caught up from the change log before
every use, rebuilt atomically beside the live one."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from waypost.base import ChunkSnapshot, Embedder
from waypost.errors import WaypostError
from waypost.hierarchy.search import TreeArrays
from waypost.hierarchy.store import TreeStore
from waypost.hierarchy.summarize import ExtractiveSummarizer, Summarizer
from waypost.hierarchy.tree import Leaves, Progress, Tree, TreeConfig
from waypost.index.set import IndexSet
from waypost.store.sqlite import SQLiteStore

CONSUMER = "tree"
BUILDER = "tree-build"


def _uid(version: str) -> str:
    """The incarnation part of a collection version (``<uid>-g<generation>``)."""
    return version.rsplit("-g", 1)[0]


def leaves_of(snapshot: ChunkSnapshot, language: str) -> Leaves:
    return Leaves(snapshot.row_ids, snapshot.document_ids, snapshot.chunk_texts, snapshot.embeddings, language)


@dataclass
class TreeStatus:
    collection: str
    built: bool
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
        store: SQLiteStore,
        trees: TreeStore,
        embedder: Embedder,
        summarizer: Summarizer,
        config: TreeConfig,
    ) -> None:
        self.collection = collection
        self.store = store
        self.trees = trees
        self.embedder = embedder
        self.summarizer = summarizer
        self.config = config
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

    def _empty(self) -> Tree:
        return Tree(self.config, self.summarizer, self.embedder)

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
                if record is None:
                    if not build:
                        return None
                    return self.rebuild(progress)
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
        self.store.acknowledge(self.collection, BUILDER, started)  # keeps the log from here while we build
        try:
            t0 = time.perf_counter()
            snapshot = self.store.snapshot(self.collection)
            if len(snapshot.row_ids) == 0:
                raise WaypostError(f"collection {self.collection!r} is empty: add documents before building a tree")
            tree = self._empty()
            tree.stats.add("read", time.perf_counter() - t0)
            tree.build(leaves_of(snapshot, self._language(snapshot.languages)), snapshot.generation, progress)
            name = self.trees.save_new(self.collection, tree, snapshot.version)
            self.store.acknowledge(self.collection, CONSUMER, snapshot.generation, snapshot.version)
        finally:
            self.store.forget_consumer(self.collection, BUILDER)
        with self._lock:
            self._tree, self._name = tree, name
            self._incarnation = _uid(snapshot.version)
            self.changes += 1
            self._catch_up(progress)
            return tree

    def status(self) -> TreeStatus:
        head = self.store.generation(self.collection)
        record = self.trees.record(self.collection)
        if record is None:
            return TreeStatus(self.collection, False, store_generation=head)
        with self._lock:
            tree = self._tree
            if tree is None or tree.generation < record.generation:
                tree = self._empty()
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
            rebuild_advised=drift > self.config.drift_threshold,
            summarizer=record.summarizer,
            size_mb=round(self.trees.size_bytes(self.collection) / 2**20, 2),
            build_seconds=dict(record.stats.get("seconds", {})),
            problems=tree.check(),
        )


class TreeCache:
    """The live trees of one store, one per collection."""

    def __init__(
        self,
        store: SQLiteStore,
        embedder_for: Callable[[str], Embedder],
        summarizer_for: Callable[[str], Summarizer] | None = None,
        config: TreeConfig | None = None,
    ) -> None:
        self.store = store
        self.trees = TreeStore(store.path)
        self.embedder_for = embedder_for
        self.summarizer_for = summarizer_for or (lambda _c: ExtractiveSummarizer())
        self.config = config or TreeConfig()
        self._live: dict[str, LiveTree] = {}
        self._lock = threading.Lock()

    def live(self, collection: str) -> LiveTree:
        with self._lock:
            if collection not in self._live:
                info = self.store.collection(collection)
                self._live[collection] = LiveTree(
                    collection,
                    self.store,
                    self.trees,
                    self.embedder_for(info.embed_model),
                    self.summarizer_for(collection),
                    self.config,
                )
            return self._live[collection]

    def forget(self, collection: str) -> None:
        with self._lock:
            self._live.pop(collection, None)
        self.trees.drop(collection)
        self.store.forget_consumer(collection, CONSUMER)
