"""Dense search past ``exact_dense_below``: HNSW candidates with exact scores, filters pushed down, deletes
never returned, merges that grow the main graph, and strategies reading candidates through the context.
3,000 synthetic chunks (clustered 32-dimensional vectors) in a real SQLite store, with a low threshold."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from waypost.base import FloatMatrix, IngestItem
from waypost.context import SearchContext
from waypost.engine import Engine, EngineConfig
from waypost.filters.model import Condition, Op
from waypost.index import dense as dense_module
from waypost.index.dense import QueryScores
from waypost.index.live import LiveIndex
from waypost.index.set import IndexSet, MergePolicy
from waypost.index.topk import top_k
from waypost.post.passages import relevance
from waypost.retrieval.dense import DenseRetriever
from waypost.retrieval.hybrid import HybridRetriever
from waypost.store.sqlite import SQLiteStore
from waypost.types import Chunk, Document

pytest.importorskip("hnswlib")

DIM = 32
DOCS = 600
PER_DOC = 5  # 3,000 chunks
THRESHOLD = 1_000  # exact_below: this collection is past it
NEVER = MergePolicy(max_small_segments=100, main_merge_rows=10**9, dead_ratio=10.0)
WORDS = ["copper", "river", "falcon", "granite", "willow", "harbour", "quarry", "cedar", "basalt", "heron"]


def vectors(seed: int, count: int, centres: np.ndarray) -> np.ndarray:
    rng = np.random.default_rng(seed)
    picked = centres[rng.integers(0, len(centres), size=count)]
    out = picked + 0.35 * rng.normal(size=(count, DIM))
    return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)


CENTRES = np.random.default_rng(7).normal(size=(40, DIM))


def document(i: int, prefix: str = "d") -> IngestItem:
    doc_id = f"{prefix}{i}"
    rng = np.random.default_rng(i)
    texts = [" ".join(rng.choice(WORDS, size=6).tolist()) + f" n{i}x{j}." for j in range(PER_DOC)]
    text = " ".join(texts)
    chunks, start = [], 0
    for j, t in enumerate(texts):
        chunks.append(Chunk(doc_id, j, t, start, start + len(t), 8, (), "en"))
        start += len(t) + 1
    meta = {"bucket": i % 10, "kind": "rare" if i % 50 == 0 else "common"}
    doc = Document(doc_id, text, f"title {doc_id}", meta, language="en")
    return IngestItem(doc, chunks, vectors(10_000 + i, PER_DOC, CENTRES))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(tmp_path / "s.sqlite")
    s.create_collection("c", "synthetic", DIM)
    s.write("c", [document(i) for i in range(DOCS)])
    yield s
    s.close()


def queries(count: int = 40) -> np.ndarray:
    return vectors(99, count, CENTRES)


def exact_top(state: IndexSet, q: np.ndarray, k: int, mask: np.ndarray | None = None) -> np.ndarray:
    allowed = state.live if mask is None else mask
    return top_k(state.dense.scores(q), k, allowed)[0]


def count_graph_builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The row counts of every HNSW graph built from now on."""
    builds: list[int] = []
    original = dense_module.build_hnsw

    def counted(vectors: FloatMatrix, *args: Any, **kwargs: Any) -> Any:
        builds.append(len(vectors))
        return original(vectors, *args, **kwargs)

    monkeypatch.setattr(dense_module, "build_hnsw", counted)
    return builds


def recall(found: Sequence[np.ndarray], truth: Sequence[np.ndarray]) -> float:
    return float(
        np.mean([len(set(f.tolist()) & set(t.tolist())) / max(1, len(t)) for f, t in zip(found, truth, strict=True)])
    )


def test_below_the_threshold_every_query_reads_exact_scores(store: SQLiteStore) -> None:
    state = LiveIndex(store, "c", None, policy=NEVER, background=False, exact_below=10**6).get()
    assert not state.dense.approximate and state.segments[0].dense.hnsw is None
    for q in queries(10):
        scores = QueryScores(state.dense, q)
        full = state.dense.scores(q)
        pos, val = scores.top(10, state.live)
        want_pos, want_val = top_k(full, 10, state.live)
        assert np.array_equal(pos, want_pos) and np.array_equal(val, want_val)
        assert np.array_equal(scores.at(np.asarray([5, 17, 2999])), full[[5, 17, 2999]])


def test_above_it_candidates_come_from_the_graph_with_exact_scores(store: SQLiteStore) -> None:
    state = LiveIndex(store, "c", None, policy=NEVER, background=False, exact_below=THRESHOLD).get()
    assert state.dense.approximate and state.segments[0].dense.hnsw is not None
    found, truth = [], []
    for q in queries():
        scores = QueryScores(state.dense, q)
        assert not scores.exact
        pos, val = scores.top(10)
        full = state.dense.scores(q)
        assert np.allclose(val, full[pos], atol=1e-6)  # candidates carry their exact scores
        assert np.all(np.diff(val) <= 0)
        assert np.allclose(scores.at(np.asarray([3, 1500, 2999])), full[[3, 1500, 2999]], atol=1e-6)
        assert scores.max() == pytest.approx(float(full.max()), abs=1e-6)
        found.append(pos)
        truth.append(exact_top(state, q, 10))
    assert recall(found, truth) >= 0.98


def test_a_selective_filter_is_an_exact_scan_over_its_rows(store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    state = LiveIndex(store, "c", None, policy=NEVER, background=False, exact_below=THRESHOLD).get()
    mask = state.metadata.mask(Condition("kind", Op.EQ, "rare"))  # 60 rows: 2% of the segment
    graph = state.segments[0].dense.graphs[0]
    calls: list[int] = []
    state.segments[0].dense.graphs[0] = _Spy(graph, lambda *a, **k: calls.append(1) or graph.knn_query(*a, **k))
    for rows in (dense_module.FILTER_EXACT_ROWS, 10):  # selective by its rows, then by its share alone
        monkeypatch.setattr(dense_module, "FILTER_EXACT_ROWS", rows)
        for q in queries(10):
            pos, val = QueryScores(state.dense, q).top(10, mask)
            want_pos, want_val = top_k(state.dense.scores(q), 10, mask)
            assert np.array_equal(pos, want_pos) and np.allclose(val, want_val, atol=1e-6)
    assert calls == []  # never the graph
    QueryScores(state.dense, queries(1)[0]).top(10)
    assert calls == [1]


def test_a_broad_filter_is_applied_inside_the_graph_search(store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    state = LiveIndex(store, "c", None, policy=NEVER, background=False, exact_below=THRESHOLD).get()
    monkeypatch.setattr(dense_module, "FILTER_EXACT_ROWS", 100)  # 3,000 rows: a broad filter goes to the graph
    calls: list[int] = []
    graph = state.segments[0].dense.hnsw
    original = graph.knn_query

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1 if kwargs.get("filter") is not None else 0)
        return original(*args, **kwargs)

    state.segments[0].dense.graphs[0] = _Spy(graph, counted)
    mask = state.metadata.mask(Condition("bucket", Op.LT, 3))  # 30%
    found, truth = [], []
    for q in queries():
        pos, _ = QueryScores(state.dense, q).top(10, mask)
        assert mask[pos].all()
        found.append(pos)
        truth.append(exact_top(state, q, 10, mask))
    assert calls and all(calls)  # every query filtered during the graph search
    assert recall(found, truth) >= 0.95


class _Spy:
    """The graph with ``knn_query`` observed (everything else as it is)."""

    def __init__(self, graph: Any, knn_query: Any) -> None:
        self._graph = graph
        self.knn_query = knn_query

    def __getattr__(self, name: str) -> Any:
        return getattr(self._graph, name)


def test_deleted_rows_are_never_candidates_and_new_rows_are(store: SQLiteStore) -> None:
    live = LiveIndex(store, "c", None, policy=NEVER, background=False, exact_below=THRESHOLD)
    before = live.get()
    probes = queries(20)
    doomed = {before.document_of(int(exact_top(before, q, 1)[0])) for q in probes}
    store.delete("c", sorted(doomed))
    store.write("c", [document(i, prefix="late") for i in range(30)])  # a small segment, scanned exactly
    state = live.get()
    assert state.dense.approximate and state.live is not None and len(state.segments) == 2
    dead = set(state.tombstones().tolist())
    late = vectors(10_000 + 7, PER_DOC, CENTRES)  # document late7's own vectors
    broad = state.metadata.mask(Condition("bucket", Op.LT, 9))
    selective = state.metadata.mask(Condition("kind", Op.EQ, "rare"))
    for mask in (None, state.live, broad & state.live, selective & state.live):
        for q in probes:
            pos, _ = QueryScores(state.dense, q).top(50, mask)
            assert not dead & set(state.row_ids[pos].tolist())
        if mask is None or mask is state.live:
            pos, _ = QueryScores(state.dense, late[0]).top(3, mask)
            assert "late7" in {state.document_of(int(p)) for p in pos}


def test_a_merge_into_main_grows_its_graph_unless_rows_died(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    live = LiveIndex(store, "c", None, policy=NEVER, background=False, exact_below=THRESHOLD)
    live.get()
    store.write("c", [document(i, prefix="n") for i in range(40)])
    state = live.get()
    builds = count_graph_builds(monkeypatch)
    live._merge_task(list(state.segments))()
    merged = live.get()
    assert len(merged.segments) == 1 and builds == []  # grown from the old graph, not built again
    assert merged.segments[0].dense.hnsw.get_current_count() == len(merged) == (DOCS + 40) * PER_DOC
    new = vectors(10_000 + 11, PER_DOC, CENTRES)  # n11's vectors: the new rows are in the graph
    pos, _ = QueryScores(merged.dense, new[0]).top(3)
    assert "n11" in {merged.document_of(int(p)) for p in pos}
    store.delete("c", ["d1", "d2"])
    store.write("c", [document(i, prefix="m") for i in range(5)])
    state = live.get()
    live._merge_task(list(state.segments))()
    assert builds == [(DOCS + 40 - 2 + 5) * PER_DOC]  # main had tombstones: positions move, a new graph
    after = live.get()
    found = [QueryScores(after.dense, q).top(10)[0] for q in queries()]
    assert recall(found, [exact_top(after, q, 10) for q in queries()]) >= 0.98


class _VectorEmbedder:
    """Queries named ``q<i>`` embed to ``queries()[i]`` (the dense path is under test, not a model)."""

    def __init__(self) -> None:
        self._vectors = queries()

    @property
    def model_id(self) -> str:
        return "synthetic"

    @property
    def dimension(self) -> int:
        return DIM

    def embed_documents(self, texts: Sequence[str]) -> FloatMatrix:
        return np.stack([self.embed_query(t) for t in texts])

    def embed_query(self, text: str) -> FloatMatrix:
        words = text.split()
        vector = self._vectors[int(words[0][1:])]
        return np.asarray(vector, dtype=np.float32)


def test_strategies_read_candidates_and_scores_through_the_context(store: SQLiteStore) -> None:
    exact = SearchContext(
        "c", LiveIndex(store, "c", None, policy=NEVER, background=False).get(), _VectorEmbedder(), store
    )
    approx_state = LiveIndex(store, "c", None, policy=NEVER, background=False, exact_below=THRESHOLD).get()
    same_hybrid, same_dense = [], []
    for i in range(20):
        query = f"q{i} copper falcon"
        approx = SearchContext("c", approx_state, _VectorEmbedder(), store)
        assert exact.dense(query).exact and not approx.dense(query).exact
        for retriever, out in ((HybridRetriever, same_hybrid), (DenseRetriever, same_dense)):
            a = [h.chunk.id for h in retriever(approx).retrieve(query, k=10).hits]
            b = [h.chunk.id for h in retriever(exact).retrieve(query, k=10).hits]
            out.append(len(set(a) & set(b)) / 10)
        positions = np.arange(0, len(approx_state), 97)
        assert np.allclose(relevance(approx, query, 0.4)[positions], relevance(exact, query, 0.4)[positions])
        flt = Condition("bucket", Op.EQ, 4)
        hits = HybridRetriever(approx).retrieve(query, k=10, filters=flt).hits
        assert hits and all(h.metadata["bucket"] == 4 for h in hits)
    assert np.mean(same_hybrid) >= 0.98 and np.mean(same_dense) >= 0.98


def test_the_engine_takes_the_threshold_from_its_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    builds = count_graph_builds(monkeypatch)
    default = Engine(tmp_path / "e", EngineConfig(background_index_work=False))
    default.store.create_collection("c", "synthetic", DIM)
    default.store.write("c", [document(i) for i in range(DOCS)])
    assert not default.indexes.get("c").dense.approximate  # 3,000 chunks are far below the default
    default.close()
    assert builds == []
    for _run in range(2):  # saved without a graph: built once at load and saved with it, then only read
        engine = Engine(tmp_path / "e", EngineConfig(exact_dense_below=THRESHOLD))
        state = engine.indexes.get("c")
        assert state.dense.approximate and state.segments[0].dense.hnsw is not None
        engine.close()
        assert builds == [DOCS * PER_DOC]
        assert engine.indexes.cache_dir is not None
        assert len(list(engine.indexes.cache_dir.rglob("hnsw.bin"))) == 1
    found = [QueryScores(state.dense, q).top(10)[0] for q in queries()]
    assert recall(found, [exact_top(state, q, 10) for q in queries()]) >= 0.98


def test_a_large_segment_has_one_graph_per_range_of_positions(
    store: SQLiteStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dense_module, "GRAPH_ROWS", 1_000)  # 3,000 rows: three graphs
    builds = count_graph_builds(monkeypatch)
    live = LiveIndex(store, "c", tmp_path / "idx", policy=NEVER, background=False, exact_below=THRESHOLD)
    state = live.get()
    main = state.segments[0].dense
    assert builds == [1_000, 1_000, 1_000] and [g.get_current_count() for g in main.graphs] == builds
    found = [QueryScores(state.dense, q).top(10)[0] for q in queries()]
    assert recall(found, [exact_top(state, q, 10) for q in queries()]) >= 0.98
    doomed = sorted({state.document_of(p) for p in range(2_000, 3_000, 37)})  # rows of the third graph
    store.delete("c", doomed)
    store.write("c", [document(i, prefix="n") for i in range(40)])  # 200 rows
    state = live.get()
    dead = set(state.tombstones().tolist())
    for q in queries():
        pos, _ = QueryScores(state.dense, q).top(30)
        assert not dead & set(state.row_ids[pos].tolist())
    live._merge_task(list(state.segments))()  # main had tombstones: graphs of the whole, built again
    merged = live.get()
    rows = (DOCS - len(doomed) + 40) * PER_DOC  # 3,060: three full graphs and one of 60
    assert builds[3:] == [1_000, 1_000, 1_000, rows - 3_000] and len(merged.segments[0].dense.graphs) == 4
    builds.clear()
    old = merged.segments[0].dense.graphs
    store.write("c", [document(i, prefix="m") for i in range(30)])  # 150 rows: the last graph grows
    live._merge_task(list(live.get().segments))()
    grown = live.get().segments[0].dense.graphs
    assert builds == [] and len(grown) == 4
    assert all(g is o for g, o in zip(grown[:3], old[:3], strict=True))  # full graphs are shared, not copied
    assert grown[3] is not old[3] and old[3].get_current_count() == rows - 3_000  # the old view's stays as it was
    assert [g.get_current_count() for g in grown] == [1_000, 1_000, 1_000, rows + 150 - 3_000]
    live.close()
    names = sorted(p.name for p in (tmp_path / "idx").rglob("hnsw*.bin"))
    assert {"hnsw.bin", "hnsw-1.bin", "hnsw-2.bin", "hnsw-3.bin"} <= set(names)
    builds.clear()
    reopened = LiveIndex(store, "c", tmp_path / "idx", policy=NEVER, background=False, exact_below=THRESHOLD).get()
    assert builds == [] and len(reopened.segments[0].dense.graphs) == len(grown)  # read, not built
    found = [QueryScores(reopened.dense, q).top(10)[0] for q in queries()]
    assert recall(found, [exact_top(reopened, q, 10) for q in queries()]) >= 0.98


class _Gate:
    """Holds background graph builds until released."""

    def __init__(self, build: Any) -> None:
        self.build, self.open, self.started = build, threading.Event(), threading.Event()

    def __call__(self, *a: Any, **k: Any) -> Any:
        self.started.set()
        assert self.open.wait(30)
        return self.build(*a, **k)


def test_a_large_rebuild_answers_exactly_first_and_gets_its_graphs_in_the_background(
    store: SQLiteStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from waypost.index import live as live_module

    monkeypatch.setattr(live_module, "GRAPHS_LATER_FROM", 2_000)  # this 3,000-chunk collection counts as large
    gate = _Gate(live_module.build_graphs)
    monkeypatch.setattr(live_module, "build_graphs", gate)
    live = LiveIndex(store, "c", tmp_path / "idx", policy=NEVER, background=True, exact_below=THRESHOLD)
    try:
        first = live.get()
        assert not first.segments[0].dense.graphs and not first.dense.approximate  # answering before the graphs
        q = queries(1)[0]
        assert np.array_equal(QueryScores(first.dense, q).top(10)[0], exact_top(first, q, 10))
        assert gate.started.wait(30)
        store.delete("c", ["d0", "d1"])  # while the graphs are built ...
        assert live.get().live is not None  # ... and applied to the view before they are installed
        gate.open.set()
        live.wait()
        later = live.get()
        assert later.segments[0].dense.graphs and later.dense.approximate
        assert later.live is not None and int((~later.live).sum()) == 2 * PER_DOC
        for q in queries(20):  # no deleted row comes back through the new graphs
            assert later.live[QueryScores(later.dense, q).top(10)[0]].all()
        assert live.status().persisted_generation == later.generation  # saved with its graphs
        saved = live.status().segments[0]
        assert saved["saved"]
    finally:
        live.close()
    assert list((tmp_path / "idx").rglob("hnsw.bin"))
    reloaded = LiveIndex(store, "c", tmp_path / "idx", policy=NEVER, background=False, exact_below=THRESHOLD)
    try:
        state = reloaded.get()
        assert state.segments[0].dense.graphs and reloaded.loaded_from.startswith("state-")
    finally:
        reloaded.close()


def test_closing_stops_a_background_graph_build_and_the_next_load_builds_them_later(
    store: SQLiteStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from waypost.index import dense
    from waypost.index import live as live_module

    monkeypatch.setattr(live_module, "GRAPHS_LATER_FROM", 2_000)
    monkeypatch.setattr(dense, "ADD_BATCH", 100)  # the build looks at its stop signal every 100 rows
    gate = _Gate(live_module.build_graphs)
    monkeypatch.setattr(live_module, "build_graphs", gate)
    live = LiveIndex(store, "c", tmp_path / "idx", policy=NEVER, background=True, exact_below=THRESHOLD)
    closing = threading.Thread(target=live.close)  # stops the build at its next batch, saves without graphs
    live.get()
    assert gate.started.wait(30)
    closing.start()
    try:
        assert live._stop_graphs.wait(30)  # the stop is asked for before the build goes on
    finally:
        gate.open.set()
        closing.join(60)
    assert not closing.is_alive()
    assert not list((tmp_path / "idx").rglob("hnsw.bin"))
    again = LiveIndex(store, "c", tmp_path / "idx", policy=NEVER, background=True, exact_below=THRESHOLD)
    try:
        loaded = again.get()
        assert again.loaded_from.startswith("state-") and not loaded.segments[0].dense.graphs  # not built at load
        again.wait()
        assert again.get().segments[0].dense.graphs  # built on the worker thread after the load
    finally:
        again.close()
