"""The RAPTOR tree: nodes over leaf chunks, built from a collection and kept current from its change log.

Layout. Leaves (layer 0) are the collection's chunks, referenced by row id. A document with several
chunks gets its own subtree: runs of consecutive chunks (3 wide, overlapping by one), runs of those runs,
and so on up to one node for the whole document (its document summary). Above the documents, the
collection's layers come from RAPTOR clustering (UMAP, then Gaussian mixtures chosen by BIC, soft
membership), repeated until fewer than 3 nodes remain or ``max_depth`` layers are built.

Why runs inside a document: measured on qmsum's train meetings, clustering a meeting's chunks by
embedding (with or without a position feature) barely beat flat retrieval, while runs of consecutive
chunks raised evidence recall by a quarter to a half: a discussion is a run of turns (see the README).

RAPTOR-lite (``TreeConfig(lite=True)``): one summary layer only. A document with several chunks gets a
node per section (consecutive chunks with the same section path, split where a section's text exceeds
the summarizer's budget); one-chunk documents are grouped by one clustering pass. Cheaper to build and
update, with no collection layers above.

Vectors. A node's ``centroid`` is the leaf-weighted mean of its children's (a leaf's is its embedding);
searches use it normalised. An abstractive summary is embedded too (``summary_vector``), and then the
dense score is the summary's, as in RAPTOR."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from waypost.base import Embedder
from waypost.hierarchy.cluster import ClusterConfig, runs, soft_clusters
from waypost.hierarchy.summarize import Summarizer
from waypost.ingest.chunker import count_tokens
from waypost.llm.cache import derived_from

FloatMatrix = npt.NDArray[np.float32]
RUN = "run"
SECTION = "section"
DOCUMENT = "document"
CLUSTER = "cluster"


@dataclass(frozen=True)
class TreeConfig:
    summary_tokens: int = 120  # length of each node's summary
    cluster_tokens: int = 3000  # the summarizer's input budget: a cluster with more text is re-clustered
    max_depth: int = 5  # collection layers above the documents
    run_width: int = 3  # chunks per run inside a document
    run_stride: int = 2
    document_subtrees: bool = True  # False: a document's chunks go straight under its document node
    clustering: ClusterConfig = field(default_factory=ClusterConfig)
    drift_threshold: float = 0.3  # share of nodes changed since the build past which a rebuild is advised
    lite: bool = False  # RAPTOR-lite: chunks under section (or cluster) summaries, one layer

    @property
    def shape(self) -> str:
        return "lite" if self.lite else "full"

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "clustering"}
        out["clustering"] = dict(self.clustering.__dict__)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TreeConfig:
        data = dict(data)
        clustering = ClusterConfig(**data.pop("clustering", {}))
        return cls(clustering=clustering, **data)


@dataclass
class TreeNode:
    id: int
    layer: int
    kind: str  # run | section | document | cluster
    document_id: str  # the document for run and document nodes; "" for clusters
    children: list[int]  # child node ids ([] when the children are leaves)
    leaves: list[int]  # leaf row ids covered, in document order for a document's nodes
    weight: float  # leaves counted with multiplicity (soft clusters overlap)
    centroid: FloatMatrix
    text: str = ""
    summary_vector: FloatMatrix | None = None
    cluster: int = -1  # which clustering pass made it (-1: a document's runs)

    @property
    def vector(self) -> FloatMatrix:
        v = self.summary_vector if self.summary_vector is not None else self.centroid
        norm = float(np.linalg.norm(v))
        return v / norm if norm else v


@dataclass
class Leaves:
    """The chunks a tree is built over, in row order (a document's chunks are consecutive rows)."""

    row_ids: npt.NDArray[np.int64]
    document_ids: list[str]
    texts: list[str]
    vectors: FloatMatrix
    language: str = "en"
    sections: list[tuple[str, ...]] = field(default_factory=list)  # per chunk (empty: not known)

    def by_document(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for i, doc in enumerate(self.document_ids):
            out.setdefault(doc, []).append(i)
        return out


Progress = Callable[[str], None]


@dataclass
class BuildStats:
    seconds: dict[str, float] = field(default_factory=dict)
    nodes_per_layer: dict[int, int] = field(default_factory=dict)

    def add(self, phase: str, seconds: float) -> None:
        self.seconds[phase] = round(self.seconds.get(phase, 0.0) + seconds, 3)


class Tree:
    """An in-memory tree. ``apply`` brings it to a later generation; ``dirty`` and ``dropped`` say what to save."""

    def __init__(self, config: TreeConfig, summarizer: Summarizer, embedder: Embedder) -> None:
        self.config = config
        self.summarizer = summarizer
        self.embedder = embedder
        self.nodes: dict[int, TreeNode] = {}
        self.next_id = 1
        self.generation = 0
        self.dirty: set[int] = set()  # changed since the last save
        self.dropped: set[int] = set()
        self.changed_since_build = 0
        self.nodes_at_build = 0
        self.stats = BuildStats()
        self.leaf_tokens: dict[int, int] = {}  # row id -> tokens, for budgets

    # -- structure ----------------------------------------------------------------------------------
    def parents(self) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {}
        for node in self.nodes.values():
            for child in node.children:
                out.setdefault(child, []).append(node.id)
        return out

    def roots(self) -> list[int]:
        has_parent = {c for n in self.nodes.values() for c in n.children}
        return [i for i in self.nodes if i not in has_parent]

    def document_nodes(self) -> dict[str, int]:
        return {n.document_id: n.id for n in self.nodes.values() if n.kind == DOCUMENT}

    def layers(self) -> dict[int, int]:
        out: dict[int, int] = {}
        for n in self.nodes.values():
            out[n.layer] = out.get(n.layer, 0) + 1
        return dict(sorted(out.items()))

    def _new(self, **fields: Any) -> TreeNode:
        node = TreeNode(id=self.next_id, **fields)
        self.next_id += 1
        self.nodes[node.id] = node
        self.dirty.add(node.id)
        return node

    # -- building -----------------------------------------------------------------------------------
    def build(self, leaves: Leaves, generation: int, progress: Progress | None = None) -> None:
        """Build from scratch over ``leaves`` (the collection at ``generation``)."""
        self.nodes.clear()
        self.next_id, self.generation = 1, generation
        self.stats = BuildStats()
        say = progress or (lambda _m: None)
        if self.config.lite:
            self._lite_layer(leaves, say)
        else:
            documents = self._document_subtrees(leaves, say)
            self.embed_summaries(list(self.nodes))
            self._collection_layers(documents, say)
        self.changed_since_build, self.nodes_at_build = 0, len(self.nodes)
        self.stats.nodes_per_layer = self.layers()

    def _document_subtrees(self, leaves: Leaves, say: Progress) -> list[int]:
        """Each document's runs and document node; returns the document node ids."""
        t0 = time.perf_counter()
        for i, row in enumerate(leaves.row_ids.tolist()):
            self.leaf_tokens[row] = count_tokens(leaves.texts[i])
        out = []
        groups = leaves.by_document()
        for done, (doc, idx) in enumerate(groups.items(), start=1):
            out.append(self._document(doc, idx, leaves))
            if done % 500 == 0:
                say(f"document subtrees: {done}/{len(groups)}")
        self.stats.add("document_subtrees", time.perf_counter() - t0)
        return out

    def _document(self, doc: str, idx: list[int], leaves: Leaves) -> int:
        cfg = self.config
        rows = [int(leaves.row_ids[i]) for i in idx]
        vectors = leaves.vectors[idx]
        texts = [leaves.texts[i] for i in idx]
        # level 1 over the leaves, then runs of runs until one node covers the document
        level: list[TreeNode] = []
        groups = runs(len(idx), cfg.run_width, cfg.run_stride) if cfg.document_subtrees else [list(range(len(idx)))]
        for g in groups:
            level.append(
                self._new(
                    layer=1,
                    kind=RUN,
                    document_id=doc,
                    children=[],
                    leaves=[rows[i] for i in g],
                    weight=float(len(g)),
                    centroid=vectors[g].mean(axis=0),
                )
            )
            level[-1].text = self._summarize(level[-1], [texts[i] for i in g])
        while len(level) > 1:
            level = [
                self._parent(RUN, doc, [level[i] for i in g]) for g in runs(len(level), cfg.run_width, cfg.run_stride)
            ]
        top = level[0]
        top.kind = DOCUMENT
        return top.id

    # -- RAPTOR-lite ------------------------------------------------------------------------------------
    def _lite_layer(self, leaves: Leaves, say: Progress) -> None:
        t0 = time.perf_counter()
        for i, row in enumerate(leaves.row_ids.tolist()):
            self.leaf_tokens[row] = count_tokens(leaves.texts[i])
        singles: list[int] = []  # leaf indexes of one-chunk documents
        for doc, idx in leaves.by_document().items():
            if len(idx) == 1:
                singles.append(idx[0])
            else:
                self._sections(doc, idx, leaves)
        self.stats.add("document_subtrees", time.perf_counter() - t0)
        if len(singles) >= 3:
            t0 = time.perf_counter()
            costs = [max(1, self.leaf_tokens[int(leaves.row_ids[i])]) for i in singles]
            clusters = soft_clusters(
                leaves.vectors[singles], costs, self.config.cluster_tokens, self.config.clustering, say
            )
            self.stats.add("clustering", time.perf_counter() - t0)
            t0 = time.perf_counter()
            for members in clusters:
                self._leaf_node(CLUSTER, "", [singles[m] for m in members], leaves, cluster=0)
            self.stats.add("summaries", time.perf_counter() - t0)
        self.embed_summaries(list(self.nodes))
        say(f"lite layer: {len(self.nodes)} nodes")

    def _sections(self, doc: str, idx: list[int], leaves: Leaves) -> list[int]:
        """One node per section of a document (consecutive chunks with the same section path), a section
        past the summarizer's budget split into consecutive parts. Returns the node ids."""
        groups: list[list[int]] = []
        current: tuple[str, ...] | None = None
        used = 0
        for i in idx:
            section = leaves.sections[i] if leaves.sections else ()
            size = self.leaf_tokens[int(leaves.row_ids[i])]
            if groups and section == current and used + size <= self.config.cluster_tokens:
                groups[-1].append(i)
                used += size
            else:
                groups.append([i])
                current, used = section, size
        kind = DOCUMENT if len(groups) == 1 else SECTION
        return [self._leaf_node(kind, doc, g, leaves).id for g in groups]

    def _leaf_node(self, kind: str, doc: str, idx: list[int], leaves: Leaves, cluster: int = -1) -> TreeNode:
        node = self._new(
            layer=1,
            kind=kind,
            document_id=doc,
            children=[],
            leaves=[int(leaves.row_ids[i]) for i in idx],
            weight=float(len(idx)),
            centroid=leaves.vectors[idx].mean(axis=0).astype(np.float32),
            cluster=cluster,
        )
        node.text = self._summarize(node, [leaves.texts[i] for i in idx])
        return node

    def _summarize(self, node: TreeNode, texts: Sequence[str]) -> str:
        """The node's summary; an LLM's reply is cached as derived from the node's leaf rows (for purges)."""
        with derived_from(rows=node.leaves):
            return self.summarizer.summarize(texts, self.config.summary_tokens)

    def _parent(self, kind: str, doc: str, children: Sequence[TreeNode], cluster: int = -1) -> TreeNode:
        weight = float(sum(c.weight for c in children))
        centroid = np.sum([c.centroid * c.weight for c in children], axis=0) / max(weight, 1.0)
        leaves = list(dict.fromkeys(r for c in children for r in c.leaves))
        node = self._new(
            layer=1 + max(c.layer for c in children),
            kind=kind,
            document_id=doc,
            children=[c.id for c in children],
            leaves=leaves,
            weight=weight,
            centroid=centroid.astype(np.float32),
            cluster=cluster,
        )
        node.text = self._summarize(node, [c.text for c in children])
        return node

    def _collection_layers(self, items: list[int], say: Progress) -> None:
        cfg = self.config
        for depth in range(cfg.max_depth):
            if len(items) < 3:
                return
            t0 = time.perf_counter()
            vectors = np.vstack([self.nodes[i].vector for i in items]).astype(np.float32)
            costs = [max(1, count_tokens(self.nodes[i].text)) for i in items]
            clusters = soft_clusters(vectors, costs, cfg.cluster_tokens, cfg.clustering, say)
            self.stats.add("clustering", time.perf_counter() - t0)
            if len(clusters) <= 1 and depth > 0:
                return
            t0 = time.perf_counter()
            items = [
                self._parent(CLUSTER, "", [self.nodes[items[i]] for i in members], cluster=depth).id
                for members in clusters
            ]
            self.stats.add("summaries", time.perf_counter() - t0)
            self.embed_summaries(items)
            say(f"collection layer {depth + 1}: {len(items)} nodes")

    def embed_summaries(self, ids: Iterable[int]) -> None:
        """An abstractive summarizer's summaries are embedded (an extractive one's centroid says as much)."""
        if not self.summarizer.abstractive:
            return
        todo = [self.nodes[i] for i in ids if i in self.nodes and self.nodes[i].text]
        if todo:
            t0 = time.perf_counter()
            vectors = self.embedder.embed_documents([n.text for n in todo])
            for node, v in zip(todo, vectors, strict=True):
                node.summary_vector = np.asarray(v, dtype=np.float32)
            self.stats.add("summary_embedding", time.perf_counter() - t0)

    # -- incremental updates ---------------------------------------------------------------------------
    def apply(
        self, removed_rows: Iterable[int], added: Leaves, generation: int, leaf_texts: Callable[[list[int]], list[str]]
    ) -> set[int]:
        """Remove ``removed_rows`` everywhere, give each added document its subtree and hang it under the
        nearest cluster, then re-summarize only what changed, bottom up. Returns the ids touched."""
        removed = set(int(r) for r in removed_rows)
        touched: set[int] = set()
        if removed:
            for row in removed:
                self.leaf_tokens.pop(row, None)
            for node in list(self.nodes.values()):
                if removed.intersection(node.leaves):
                    node.leaves = [r for r in node.leaves if r not in removed]
                    touched.add(node.id)
            self._drop_empty(touched)
        for i, row in enumerate(added.row_ids.tolist()):
            self.leaf_tokens[row] = count_tokens(added.texts[i])
        created: set[int] = set()
        for doc, idx in added.by_document().items():
            if self.config.lite:
                touched |= self._lite_add(doc, idx, added, created)
                continue
            before = self.next_id
            top = self._document(doc, idx, added)
            created.update(range(before, self.next_id))
            home = self._nearest_cluster(self.nodes[top].vector, exclude=created)
            if home is not None:
                self.nodes[home].children.append(top)
                touched.add(home)
        touched |= created
        self._refresh(touched, created, leaf_texts)
        self.generation = generation
        self.changed_since_build += len(touched)
        return touched

    def _lite_add(self, doc: str, idx: list[int], added: Leaves, created: set[int]) -> set[int]:
        """A lite tree's new document: its sections, or (one chunk) a place in the nearest cluster."""
        if len(idx) > 1:
            made = self._sections(doc, idx, added)
            created.update(made)
            return set(made)
        vector = added.vectors[idx[0]]
        home = self._nearest_cluster(vector / max(float(np.linalg.norm(vector)), 1e-12), exclude=created)
        if home is None:
            return set()  # no cluster yet: the chunk stands alone, as a leaf
        node = self.nodes[home]
        node.centroid = ((node.centroid * node.weight + vector) / (node.weight + 1)).astype(np.float32)
        node.weight += 1
        node.leaves.append(int(added.row_ids[idx[0]]))
        return {home}

    def _drop_empty(self, touched: set[int]) -> None:
        while True:
            empty = [i for i in touched if i in self.nodes and not self.nodes[i].leaves]
            if not empty:
                return
            for i in empty:
                del self.nodes[i]
                self.dropped.add(i)
                self.dirty.discard(i)
            gone = set(empty)
            for node in self.nodes.values():
                if gone.intersection(node.children):
                    node.children = [c for c in node.children if c not in gone]
                    touched.add(node.id)

    def _nearest_cluster(self, vector: FloatMatrix, exclude: set[int]) -> int | None:
        """The lowest collection cluster whose vector is closest: where RAPTOR's clustering would most
        likely have put the document (adRAP keeps the global structure and assigns new items this way)."""
        candidates = [
            n
            for n in self.nodes.values()
            if n.kind == CLUSTER and n.id not in exclude and all(self.nodes[c].kind != CLUSTER for c in n.children)
        ]
        if not candidates:
            return None
        sims = np.array([float(n.vector @ vector) for n in candidates])
        return candidates[int(np.argmax(sims))].id

    def _refresh(self, touched: set[int], created: set[int], leaf_texts: Callable[[list[int]], list[str]]) -> None:
        """Recompute leaves, centroids and summaries of ``touched`` nodes and their ancestors, bottom up
        (``created`` nodes were just built whole and only need their summaries embedded)."""
        parents = self.parents()
        todo = set(i for i in touched if i in self.nodes)
        frontier = list(todo)
        while frontier:
            nxt = []
            for i in frontier:
                for p in parents.get(i, []):
                    if p not in todo:
                        todo.add(p)
                        nxt.append(p)
            frontier = nxt
        touched.update(todo)
        t0 = time.perf_counter()
        for i in sorted(todo - created, key=lambda i: self.nodes[i].layer):
            node = self.nodes[i]
            if node.children:
                kids = [self.nodes[c] for c in node.children]
                node.layer = 1 + max(c.layer for c in kids)  # a document hung below may be taller
                node.leaves = list(dict.fromkeys(r for c in kids for r in c.leaves))
                node.weight = float(sum(c.weight for c in kids))
                mean = np.sum([c.centroid * c.weight for c in kids], axis=0) / max(node.weight, 1.0)
                node.centroid = mean.astype(np.float32)
                node.text = self._summarize(node, [c.text for c in kids])
            else:  # a run over leaves (documents change whole, so this is rare): re-read what is left
                node.text = self._summarize(node, leaf_texts(node.leaves))
            node.summary_vector = None
            self.dirty.add(i)
        self.stats.add("update_summaries", time.perf_counter() - t0)
        self.embed_summaries(todo)

    # -- checks -----------------------------------------------------------------------------------------
    def check(self) -> list[str]:
        """Structural problems (empty for a sound tree): what tests and ``tree status`` look at."""
        problems = []
        for node in self.nodes.values():
            if not node.leaves:
                problems.append(f"node {node.id} covers no leaf")
            for c in node.children:
                if c not in self.nodes:
                    problems.append(f"node {node.id} has a missing child {c}")
                elif not set(self.nodes[c].leaves) <= set(node.leaves):
                    problems.append(f"node {node.id} does not cover its child {c}")
        return problems
