"""Incremental indexes equal indexes rebuilt from scratch, after every add, replace and delete;
persisted state is reloaded without a rebuild, and corrupt or stale state is never used."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from waypost.base import Embedder
from waypost.context import SearchContext
from waypost.engine import Engine, EngineConfig
from waypost.filters.model import Condition, Filter, Op
from waypost.index.set import IndexSet, MergePolicy
from waypost.retrieval.registry import make_retriever
from waypost.types import Document

WORDS = (
    "river harbour glacier volcano orchard vineyard lighthouse canal bridge tunnel meadow quarry "
    "copper silver granite basalt salmon trout heron falcon willow cedar maple birch tide storm "
    "drought harvest festival treaty charter census ledger archive mill forge kiln loom"
).split()
PLACES = ["Northbridge Abbey", "Calloway Harbour", "Mount Verrin", "Lake Ostrava", "Fenwick Mill", "Aldergate"]
QUERIES = [
    "copper mill on the river",
    "falcon and heron",
    "Calloway Harbour treaty",
    "storm drought harvest",
    "granite quarry",
]


def make_doc(rng: random.Random, doc_id: str, version: int = 0) -> Document:
    sentences = []
    for _ in range(rng.randint(1, 9)):
        words = rng.sample(WORDS, rng.randint(5, 12))
        if rng.random() < 0.3:
            words.insert(rng.randint(0, len(words)), rng.choice(PLACES))  # names another document's title
        sentences.append(" ".join(words).capitalize() + ".")
    title = PLACES[int(doc_id[1:]) % len(PLACES)] if rng.random() < 0.4 else f"Record {doc_id} v{version}"
    meta: dict[str, object] = {"year": rng.randint(1990, 2024), "kind": rng.choice(["letter", "map", "deed"])}
    if rng.random() < 0.5:
        meta["tags"] = rng.sample(["coast", "inland", "upland", "urban"], 2)
    if rng.random() < 0.2:
        meta["rare_field_" + doc_id] = "only here"  # a field that disappears when this document goes
    return Document(doc_id, " ".join(sentences), title, meta)


class QueryMemo:
    """The real model, with each query string embedded once (the comparison asks the same queries often)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dimension = inner.dimension
        self._queries: dict[str, np.ndarray] = {}

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        if text not in self._queries:
            self._queries[text] = self.inner.embed_query(text)
        return self._queries[text]


@pytest.fixture(scope="module")
def memo(minilm: Embedder) -> Embedder:
    return QueryMemo(minilm)  # type: ignore[return-value]


def reference_context(engine: Engine, name: str) -> SearchContext:
    snap = engine.store.snapshot(name)
    rebuilt = IndexSet.build(name, snap)
    coll = engine.collection(name)
    return SearchContext(name, rebuilt, coll.embedder, engine.store)


def live_bm25(indexes: IndexSet, query: str) -> dict[int, float]:
    scores = indexes.bm25.scores(query)
    live = np.ones(len(indexes), np.bool_) if indexes.live is None else indexes.live
    return {int(r): float(s) for r, s, ok in zip(indexes.row_ids, scores, live, strict=True) if ok}


def assert_same(engine: Engine, name: str, filters: list[Filter]) -> None:
    coll = engine.collection(name)
    incremental = coll.context()
    rebuilt = reference_context(engine, name)
    inc_rows = set(live_bm25(incremental.indexes, "x").keys())
    assert inc_rows == set(rebuilt.indexes.row_ids.tolist()), "live rows differ from the store's rows"
    for query in QUERIES:
        a, b = live_bm25(incremental.indexes, query), live_bm25(rebuilt.indexes, query)
        assert a.keys() == b.keys()
        worst = max((abs(a[r] - b[r]) for r in a), default=0.0)
        assert worst <= 1e-6, f"BM25 scores drift by {worst} for {query!r}"
        for strategy, flts in (("bm25", [None]), ("dense", [None, *filters[:1]]), ("hybrid", [None, *filters])):
            for flt in flts:
                try:
                    got = make_retriever(strategy, incremental).retrieve(query, 8, flt)
                except Exception as exc:  # the same error must come from both
                    with pytest.raises(type(exc)):
                        make_retriever(strategy, rebuilt).retrieve(query, 8, flt)
                    continue
                want = make_retriever(strategy, rebuilt).retrieve(query, 8, flt)
                assert [h.chunk.id for h in got.hits] == [h.chunk.id for h in want.hits], (strategy, query, flt)
                np.testing.assert_allclose([h.score for h in got.hits], [h.score for h in want.hits], atol=1e-6)
    assert incremental.indexes.metadata.fields == rebuilt.indexes.metadata.fields
    for field in rebuilt.indexes.metadata.fields:
        assert incremental.indexes.metadata.values(field) == rebuilt.indexes.metadata.values(field)
        assert incremental.indexes.metadata.numeric_range(field) == rebuilt.indexes.metadata.numeric_range(field)


@pytest.mark.parametrize("background", [False, True])
def test_incremental_indexes_equal_a_rebuild_after_every_change(
    tmp_path: Path, memo: Embedder, background: bool
) -> None:
    policy = MergePolicy(
        max_small_segments=3, main_merge_rows=12, main_merge_ratio=0.2, dead_ratio=0.15, persist_rows=6
    )
    config = EngineConfig(chunk_tokens=32, merge_policy=policy, background_index_work=background)
    engine = Engine(tmp_path / "store", config)
    engine.register_embedder(memo)
    coll = engine.collection("c", create=True)
    rng = random.Random(7 if background else 11)
    next_id = 0
    alive: dict[str, int] = {}

    def add(n: int) -> None:
        nonlocal next_id
        docs = []
        for _ in range(n):
            doc_id = f"d{next_id}"
            next_id += 1
            docs.append(make_doc(rng, doc_id))
            alive[doc_id] = 0
        coll.add(docs)

    add(6)
    filters: list[Filter] = [
        Condition("year", Op.GTE, 2005),
        Condition("kind", Op.EQ, "map"),
        Condition("tags", Op.IN, ["coast", "urban"]),
    ]
    assert_same(engine, "c", filters)
    for step in range(24):
        op = rng.choice(["add", "add", "replace", "delete"]) if alive else "add"
        if op == "add":
            add(rng.randint(1, 3))
        elif op == "replace":
            doc_id = rng.choice(sorted(alive))
            alive[doc_id] += 1
            coll.add([make_doc(rng, doc_id, alive[doc_id])])
        else:
            doomed = rng.sample(sorted(alive), min(len(alive), rng.randint(1, 2)))
            assert coll.delete(doomed) == len(doomed)
            for doc_id in doomed:
                del alive[doc_id]
                assert all(h.document_id != doc_id for q in QUERIES for h in coll.retrieve(q, "hybrid", k=50).hits)
        assert_same(engine, "c", filters)
        if step % 10 == 9:
            engine.indexes.live("c").wait()  # let a background merge land, then compare again
            assert_same(engine, "c", filters)
    live = engine.indexes.live("c")
    live.wait()
    assert live.last_merge is not None, "the policy should have merged segments"
    engine.close()

    reopened = Engine(tmp_path / "store", config)
    reopened.register_embedder(memo)
    index = reopened.indexes.live("c")
    index.get()
    assert index.loaded_from.startswith("state-"), index.loaded_from
    assert_same(reopened, "c", filters)
    reopened.close()


def test_opening_a_saved_store_rebuilds_nothing(tmp_path: Path, memo: Embedder) -> None:
    engine = Engine(tmp_path / "store", EngineConfig(chunk_tokens=32, background_index_work=False))
    engine.register_embedder(memo)
    rng = random.Random(3)
    coll = engine.collection("c", create=True)
    coll.add([make_doc(rng, f"d{i}") for i in range(12)])
    coll.retrieve("granite", "hybrid")
    engine.close()

    reopened = Engine(tmp_path / "store", EngineConfig(chunk_tokens=32))
    reopened.register_embedder(memo)
    reopened.collection("c").add([make_doc(rng, "d99")])  # a change the saved state has not seen
    live = reopened.indexes.live("c")
    state = live.get()
    assert live.loaded_from.startswith("state-"), live.loaded_from
    assert [len(s) for s in state.segments][1:] == [
        len(reopened.store.snapshot("c").document_ids) - len(state.segments[0])
    ]
    assert not state.segments[-1].path  # caught up from the log, not yet saved
    assert_same(reopened, "c", [])
    reopened.close()


def test_corrupt_or_stale_saved_state_is_detected_and_rebuilt(tmp_path: Path, memo: Embedder) -> None:
    engine = Engine(tmp_path / "store", EngineConfig(chunk_tokens=32, background_index_work=False))
    engine.register_embedder(memo)
    rng = random.Random(5)
    coll = engine.collection("c", create=True)
    coll.add([make_doc(rng, f"d{i}") for i in range(10)])
    coll.retrieve("granite", "hybrid")
    engine.close()
    [segment] = list((tmp_path / "store" / "indexes" / "c").glob("*/seg-*"))
    postings = segment / "chunks.by_term_tf.npy"
    data = bytearray(postings.read_bytes())
    data[-4:] = b"\x00\x00\x80\x7f"  # one term frequency becomes +inf; the file still parses
    postings.write_bytes(bytes(data))

    fresh = Engine(tmp_path / "store", EngineConfig(chunk_tokens=32, background_index_work=False))
    fresh.register_embedder(memo)
    live = fresh.indexes.live("c")
    live.get()
    assert live.loaded_from == "rebuilt from the store"
    assert any("corrupt" in e for e in live.errors), live.errors
    assert_same(fresh, "c", [])
    fresh.close()


def test_the_change_log_is_compacted_once_saved_and_a_lagging_process_reloads(tmp_path: Path, memo: Embedder) -> None:
    config = EngineConfig(chunk_tokens=32, background_index_work=False, merge_policy=MergePolicy(persist_rows=0))
    writer = Engine(tmp_path / "store", config)
    writer.register_embedder(memo)
    reader = Engine(tmp_path / "store", config)
    reader.register_embedder(memo)
    rng = random.Random(9)
    writer.collection("c", create=True).add([make_doc(rng, f"d{i}") for i in range(5)])
    reader.collection("c").retrieve("granite", "bm25")  # the reader's view: generation 1
    for i in range(5, 9):
        writer.collection("c").add([make_doc(rng, f"d{i}")])
        writer.collection("c").retrieve("granite", "bm25")  # catches up and saves (persist_rows=0)
    assert writer.store.log_floor("c") == writer.store.generation("c")
    assert writer.store.changes("c", 1) is None  # compacted past the reader
    assert_same(reader, "c", [])  # so the reader loads the writer's saved state and goes on from there
    assert reader.indexes.live("c").loaded_from.startswith("state-")
    writer.close()
    reader.close()


def test_queries_run_while_another_thread_ingests(tmp_path: Path, memo: Embedder) -> None:
    """One engine, one collection: a writer thread ingests while reader threads query. No query fails,
    and no reader ever sees part of a document (every document is seen with all of its chunks or none)."""
    import threading

    engine = Engine(tmp_path / "store", EngineConfig(chunk_tokens=32))
    engine.register_embedder(memo)
    coll = engine.collection("c", create=True)
    rng = random.Random(21)
    docs = [make_doc(rng, f"d{i}") for i in range(60)]
    coll.add(docs[:10])
    expected_chunks: dict[str, int] = {}
    for d in docs:
        expected_chunks[d.id] = len(engine.collection("c")._ingestor().chunker.chunk(d.id, d.text))
    errors: list[str] = []
    done = threading.Event()
    seen_sizes: set[int] = set()

    def reader() -> None:
        while not done.is_set():
            try:
                indexes = coll.context().indexes
                live = np.ones(len(indexes), np.bool_) if indexes.live is None else indexes.live
                counts: dict[str, int] = {}
                for pos in np.flatnonzero(live):
                    doc = indexes.document_of(int(pos))
                    counts[doc] = counts.get(doc, 0) + 1
                for doc, n in counts.items():
                    if n != expected_chunks[doc]:
                        errors.append(f"{doc}: {n} of {expected_chunks[doc]} chunks visible")
                seen_sizes.add(len(counts))
                coll.retrieve(rng.choice(QUERIES), "hybrid", k=5)
            except Exception as exc:
                errors.append(repr(exc))

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for start in range(10, 60, 5):
        coll.add(docs[start : start + 5])
    done.set()
    for t in threads:
        t.join()
    engine.close()
    assert not errors, errors[:5]
    assert len(seen_sizes) >= 3, f"readers did not interleave with the writer: {sorted(seen_sizes)}"


def test_hnsw_follows_deletes_and_is_saved(tmp_path: Path, memo: Embedder) -> None:
    config = EngineConfig(chunk_tokens=32, approximate_dense=True, background_index_work=False)
    engine = Engine(tmp_path / "store", config)
    engine.register_embedder(memo)
    rng = random.Random(13)
    coll = engine.collection("c", create=True)
    docs = [make_doc(rng, f"d{i}") for i in range(40)]
    coll.add(docs)
    main = engine.indexes.get("c").segments[0]
    assert main.dense.hnsw is not None
    top = coll.retrieve("granite quarry", "dense", k=3).hits[0].document_id
    coll.add([make_doc(rng, "late")])  # lands in a small segment, searched exactly beside the graph
    coll.delete([top])
    result = coll.retrieve("granite quarry", "dense", k=60)
    assert top not in {h.document_id for h in result.hits}
    assert "late" in {h.document_id for h in result.hits}
    engine.close()
    reopened = Engine(tmp_path / "store", config)
    reopened.register_embedder(memo)
    state = reopened.indexes.get("c")
    assert state.segments[0].dense.hnsw is not None and (state.segments[0].path / "hnsw.bin").exists()  # type: ignore[operator]
    assert top not in {h.document_id for h in reopened.collection("c").retrieve("granite quarry", "dense", k=60).hits}
    reopened.close()


def test_a_corrupt_block_missed_by_the_sampled_check_is_caught_in_the_background(
    tmp_path: Path, memo: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    import waypost.index.segment as segment_module

    monkeypatch.setattr(segment_module, "_BLOCK", 256)  # many small blocks: loading checks only 8 of them
    engine = Engine(tmp_path / "store", EngineConfig(chunk_tokens=32, background_index_work=False))
    engine.register_embedder(memo)
    rng = random.Random(8)
    engine.collection("c", create=True).add([make_doc(rng, f"d{i}") for i in range(30)])
    engine.collection("c").retrieve("granite", "hybrid")
    engine.close()
    [segment] = list((tmp_path / "store" / "indexes" / "c").glob("*/seg-*"))
    vectors = segment / "vectors.npy"
    blocks = (vectors.stat().st_size + 255) // 256
    sampled = {int(i) for i in np.linspace(0, blocks - 1, num=8)}
    victim = next(i for i in range(1, blocks) if i not in sampled)
    data = bytearray(vectors.read_bytes())
    data[victim * 256 + 10] ^= 0xFF
    vectors.write_bytes(bytes(data))

    fresh = Engine(tmp_path / "store", EngineConfig(chunk_tokens=32))  # background work: sampled check first
    fresh.register_embedder(memo)
    live = fresh.indexes.live("c")
    live.get()
    assert live.loaded_from.startswith("state-")  # the sample missed it
    live.wait()
    assert any("full check" in e for e in live.errors), live.errors
    live.get()
    assert live.loaded_from == "rebuilt from the store"
    assert_same(fresh, "c", [])
    fresh.close()
