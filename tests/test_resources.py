"""Bounded resources and honest errors: per-collection indexes, trees and graphs live in an LRU (evicting
saves what is unsaved, a later query reloads the same results); background failures reach the ``waypost``
loggers with a bounded record; streams abandoned early release the locks and connections they hold; the
library sets no environment variable."""

from __future__ import annotations

import gc
import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.fault_server import FaultServer, fault_server
from waypost.answer.service import AnswerService
from waypost.base import Embedder
from waypost.engine import Engine, EngineConfig
from waypost.errors import WaypostError
from waypost.graph.live import LiveGraph
from waypost.hierarchy.live import LiveTree
from waypost.index.dense import DenseIndex
from waypost.index.live import KEPT_ERRORS, LiveIndex
from waypost.index.set import MergePolicy
from waypost.llm.accounting import KEPT_FALLBACKS, QueryMetadata
from waypost.llm.base import GenerationParams
from waypost.llm.cache import CachedLLM
from waypost.llm.openai_compat import OpenAICompatibleLLM
from waypost.lru import CollectionLRU
from waypost.types import Document

ROOT = Path(__file__).resolve().parents[1]
ASK = [{"role": "user", "content": "hi"}]

TOPICS = {
    "rivers": ["The Danube flows through Vienna and Budapest.", "The Rhine carries barges past Cologne."],
    "stars": ["Sirius is the brightest star in the night sky.", "Betelgeuse is a red supergiant in Orion."],
    "bread": ["Yeast ferments sugar and the dough rises.", "A sourdough starter keeps wild yeast alive."],
    "metals": ["Copper conducts electricity well.", "Marie Curie studied radium in Paris."],
}


def documents(topic: str, extra: int = 0) -> list[Document]:
    texts = [*TOPICS[topic], *(f"Note {i} about {topic}: {TOPICS[topic][i % 2]}" for i in range(extra))]
    return [Document(f"{topic}-{i}", text, f"{topic} {i}") for i, text in enumerate(texts)]


def open_engine(path: Path, minilm: Embedder, **config: object) -> Engine:
    engine = Engine(path, EngineConfig(chunk_tokens=64, **config))  # type: ignore[arg-type]
    engine.register_embedder(minilm)
    return engine


def results(engine: Engine, topic: str) -> list[tuple[str, float]]:
    hits = engine.collection(topic).retrieve(f"what about {topic}?", "hybrid", k=5).hits
    return [(h.chunk.id, round(h.score, 5)) for h in hits]


def alive(kind: type) -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if type(o) is kind)


# -- 1. caches of indexes, trees and graphs are bounded ---------------------------------------------------------
def test_open_collections_are_bounded_and_reload_the_same(tmp_path: Path, minilm: Embedder) -> None:
    # engines of other tests may live for the session (the shared test server's tenants): count only ours
    before = {kind: alive(kind) for kind in (LiveIndex, LiveTree, LiveGraph)}
    engine = open_engine(tmp_path / "store", minilm, max_open_collections=2)
    try:
        for topic in TOPICS:
            engine.collection(topic, create=True).add(documents(topic))
        first = {topic: results(engine, topic) for topic in TOPICS}
        for topic in TOPICS:
            engine.collection(topic).tree().get()
        for topic in list(TOPICS)[:3]:
            engine.collection(topic).graph().get()
        assert len(engine.indexes.open_collections()) == 2
        assert len(engine.trees.open_collections()) == 2 and len(engine.graphs.open_collections()) == 2
        assert engine.indexes.open_collections() == ["bread", "metals"]  # the most recently used
        # the evicted ones are gone from memory, not merely from the map
        assert alive(LiveIndex) - before[LiveIndex] == 2
        assert alive(LiveTree) - before[LiveTree] == 2 and alive(LiveGraph) - before[LiveGraph] == 2
        # every collection answers as before, reloaded from what was saved (not rebuilt)
        for topic in TOPICS:
            assert results(engine, topic) == first[topic]
            assert engine.indexes.live(topic).loaded_from.startswith("state-"), engine.indexes.live(topic).loaded_from
        tree = engine.collection("rivers").tree().get(build=False)
        graph = engine.collection("rivers").graph().get(build=False)
        assert tree is not None and graph is not None  # loaded from the store, not built again
        assert alive(LiveIndex) - before[LiveIndex] == 2
    finally:
        engine.close()


def test_evicting_a_collection_saves_its_unsaved_index_work(tmp_path: Path, minilm: Embedder) -> None:
    never = MergePolicy(persist_rows=10**9, persist_generations=10**9, max_small_segments=10**6)
    engine = open_engine(tmp_path / "store", minilm, max_open_collections=1, merge_policy=never)
    try:
        coll = engine.collection("rivers", create=True)
        coll.add(documents("rivers"))
        results(engine, "rivers")  # built and saved once
        engine.indexes.live("rivers").wait()
        for i in range(3):  # three more writes, caught up in memory only: the policy never saves them
            coll.add([Document(f"late-{i}", f"The Volga {i} reaches the Caspian Sea.", f"late {i}")])
            results(engine, "rivers")
        live = engine.indexes.live("rivers")
        head = engine.store.generation("rivers")
        assert live.status().persisted_generation < head and any(not s["saved"] for s in live.status().segments)
        before = results(engine, "rivers")

        engine.collection("stars", create=True).add(documents("stars"))
        results(engine, "stars")  # opens a second collection: "rivers" is flushed and closed
        assert engine.indexes.open_collections() == ["stars"]
        base = tmp_path / "store" / "indexes" / "rivers"
        saved = [json.loads(p.read_text())["generation"] for p in base.glob("*/state-*.json")]
        assert max(saved) == head, "evicting lost the unsaved index work"

        assert results(engine, "rivers") == before
        reopened = engine.indexes.live("rivers")
        assert reopened is not live and reopened.loaded_from.startswith("state-")
        assert reopened.status().generation == head
    finally:
        engine.close()


def test_an_index_kept_past_its_eviction_still_works(tmp_path: Path, minilm: Embedder) -> None:
    engine = open_engine(tmp_path / "store", minilm, max_open_collections=1)
    try:
        coll = engine.collection("rivers", create=True)
        coll.add(documents("rivers"))
        held = engine.indexes.live("rivers")
        held.get()
        engine.collection("stars", create=True).add(documents("stars"))
        results(engine, "stars")  # evicts (closes) ``held``
        coll.add([Document("late", "The Volga reaches the Caspian Sea.", "late")])
        assert held.get().live_count == engine.indexes.get("rivers").live_count  # background work runs inline
    finally:
        engine.close()


def test_max_open_collections_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(WaypostError, match="max_open_collections"):
        Engine(tmp_path / "store", EngineConfig(max_open_collections=0))


def test_a_failed_close_on_eviction_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    def fail(name: str, _value: str) -> None:
        raise OSError(f"disk gone under {name}")

    lru: CollectionLRU[str] = CollectionLRU(1, str.upper, fail)
    assert lru.get("a") == "A"
    with caplog.at_level(logging.ERROR, logger="waypost"):
        assert lru.get("b") == "B"
    assert lru.names() == ["b"] and lru.evictions == 1
    assert any("closing collection 'a' failed" in r.getMessage() and r.exc_info for r in caplog.records)


# -- 2. background errors go to logging, with a bounded record ------------------------------------------------
def test_a_failed_background_save_is_logged_and_bounded(
    tmp_path: Path, minilm: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    engine = open_engine(tmp_path / "store", minilm, background_index_work=False)
    try:
        coll = engine.collection("rivers", create=True)
        coll.add(documents("rivers"))
        (tmp_path / "store" / "indexes").mkdir(parents=True, exist_ok=True)
        (tmp_path / "store" / "indexes" / "rivers").write_text("a file where the index directory goes")
        with caplog.at_level(logging.WARNING, logger="waypost"):
            results(engine, "rivers")  # builds, then the save fails for real: the directory cannot be made
        live = engine.indexes.live("rivers")
        failures = [r for r in caplog.records if r.name == "waypost.index" and r.levelno == logging.ERROR]
        assert failures and "rivers" in failures[0].getMessage() and failures[0].exc_info is not None
        assert live.error_count == 1 and len(live.status().errors) == 1
        for _ in range(KEPT_ERRORS + 3):  # every retry fails again: counted and logged, not kept
            live.flush()
        assert live.error_count == KEPT_ERRORS + 4 and len(live.status().errors) == KEPT_ERRORS
        assert live.status().error_count == KEPT_ERRORS + 4
        assert results(engine, "rivers")  # queries are served all the while
    finally:
        (tmp_path / "store" / "indexes" / "rivers").unlink()
        engine.close()


def test_an_unreadable_saved_state_is_logged(
    tmp_path: Path, minilm: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    engine = open_engine(tmp_path / "store", minilm, background_index_work=False)
    engine.collection("rivers", create=True).add(documents("rivers"))
    before = results(engine, "rivers")
    engine.close()
    for state in (tmp_path / "store" / "indexes" / "rivers").glob("*/state-*.json"):
        state.write_text("{not json")
    engine = open_engine(tmp_path / "store", minilm, background_index_work=False)
    try:
        with caplog.at_level(logging.WARNING, logger="waypost"):
            assert results(engine, "rivers") == before
        assert any(r.name == "waypost.index" and "ignored saved index state" in r.getMessage() for r in caplog.records)
    finally:
        engine.close()


def test_long_lived_fallback_reasons_are_logged_and_bounded(caplog: pytest.LogCaptureFixture) -> None:
    usage = QueryMetadata("summaries")
    with caplog.at_level(logging.WARNING, logger="waypost"):
        for i in range(KEPT_FALLBACKS + 50):
            usage.add_fallback(f"summary {i}: connection refused")
    assert len(usage.fallbacks) == KEPT_FALLBACKS and usage.fallbacks[-1].startswith(f"summary {KEPT_FALLBACKS + 49}")
    assert sum(r.name == "waypost.llm" for r in caplog.records) == KEPT_FALLBACKS + 50


def test_the_stem_cache_is_bounded_and_stems_stay_right(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    import Stemmer

    analyzers = importlib.import_module("waypost.text.analyzers")
    monkeypatch.setattr(analyzers, "STEM_CACHE_WORDS", 50)
    stemming = analyzers._Stemming("english")
    reference = Stemmer.Stemmer("english")
    for start in range(0, 400, 30):
        words = [f"running{i}s" for i in range(start, start + 30)] + ["running", "ponies"]
        assert stemming(words) == reference.stemWords(words)
        assert len(stemming._cache) <= 50


# -- 3. nothing swallowed ----------------------------------------------------------------------------------------
def test_hnsw_mark_deleted_tolerates_only_an_already_deleted_item() -> None:
    vectors = np.random.default_rng(0).normal(size=(20, 8)).astype(np.float32)
    index = DenseIndex(vectors / np.linalg.norm(vectors, axis=1, keepdims=True), approximate=True)
    index.mark_deleted(np.asarray([3], dtype=np.int64))
    index.mark_deleted(np.asarray([3], dtype=np.int64))  # a saved graph's deletes marked again: fine
    with pytest.raises(RuntimeError, match="Label not found"):
        index.mark_deleted(np.asarray([999], dtype=np.int64))  # a position the graph never held: a bug, said


def test_a_cross_encoder_replaced_on_disk_replaces_its_loaded_model() -> None:
    from waypost.post.rerank import cross_encoder

    saved = dict(cross_encoder._MODELS)
    cross_encoder._MODELS.clear()
    try:
        for stamp in range(5):  # one folder retrained five times: one model stays loaded
            cross_encoder._share(("/m/a", "cpu", 512, float(stamp)), f"model {stamp}")
        assert list(cross_encoder._MODELS.values()) == ["model 4"]
        for name in "bcdefg":
            cross_encoder._share((f"/m/{name}", "cpu", 512, 0.0), name)
        assert len(cross_encoder._MODELS) == cross_encoder.MAX_SHARED_MODELS
    finally:
        cross_encoder._MODELS.clear()
        cross_encoder._MODELS.update(saved)


# -- 4. abandoned streams release their locks ------------------------------------------------------------------
@pytest.fixture
def server() -> Iterator[FaultServer]:
    with fault_server() as srv:
        srv.reply = "one two three four five six"
        yield srv


@pytest.fixture
def no_gc() -> Iterator[None]:
    """Release must not wait for the cycle collector: references dropped, resources freed."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def completes(call: Callable[[], object], timeout: float = 10.0) -> bool:
    done = threading.Event()

    def run() -> None:
        call()
        done.set()

    threading.Thread(target=run, daemon=True).start()
    return done.wait(timeout)


def one_slot(server: FaultServer) -> OpenAICompatibleLLM:
    return OpenAICompatibleLLM("test-model", server.url, backoff=0.01, max_concurrency=1)


@pytest.mark.parametrize("abandon", ["close", "with", "del"])
def test_an_abandoned_llm_stream_gives_back_its_slot(server: FaultServer, no_gc: None, abandon: str) -> None:
    client = one_slot(server)
    stream = client.stream(ASK)
    if abandon == "with":
        with stream:
            assert next(iter(stream.tokens)) == "one "
    else:
        assert next(iter(stream.tokens)) == "one "
        if abandon == "close":
            stream.close()
    del stream
    assert completes(lambda: client.complete(ASK)), "the abandoned stream still holds the only slot"


@pytest.mark.parametrize("abandon", ["close", "tokens.close", "del"])
def test_an_abandoned_answer_stream_releases_the_llm(
    server: FaultServer, no_gc: None, tmp_path: Path, engine: Engine, abandon: str
) -> None:
    coll = engine.collection("bread", create=True)
    coll.add(documents("bread"))
    client = one_slot(server)
    cached = CachedLLM(client, tmp_path / "llm.sqlite")
    service = AnswerService(lambda q, s, k: coll.retrieve(q, s, k), cached)
    stream = service.stream("Why does bread rise?")
    assert next(stream.tokens) == "one "
    if abandon == "close":
        stream.close()
    elif abandon == "tokens.close":
        stream.tokens.close()  # type: ignore[attr-defined]
    del stream
    assert completes(lambda: client.complete(ASK, GenerationParams(max_tokens=3))), "the LLM is still held"
    with service.stream("Why does bread rise?") as whole:  # the context-manager form, read to the end
        assert "".join(whole) == server.reply + " "
    assert whole.answer is not None


def test_a_read_section_abandoned_on_another_thread_lets_its_thread_catch_up(tmp_path: Path, minilm: Embedder) -> None:
    engine = open_engine(tmp_path / "store", minilm)
    try:
        coll = engine.collection("metals", create=True)
        coll.add(documents("metals"))
        live = coll.graph()
        assert live.get() is not None
        section = [live.reading()]
        section[0].__enter__()
        # the caller hands the section away and it is dropped (collected) on another thread
        dropper = threading.Thread(target=lambda: (section.pop(), gc.collect()))
        dropper.start()
        dropper.join()
        coll.add([Document("volta", "Alessandro Volta built the first battery in Pavia.", "Volta")])
        assert completes(lambda: live.get(), timeout=60.0), "a catch-up waits for an abandoned reader"
        coll.add([Document("davy", "Humphry Davy isolated sodium in London.", "Davy")])
        graph = live.get()  # this thread is inside no section any more: it catches up, not served as it was
        assert graph is not None and graph.generation == engine.store.generation("metals")
    finally:
        engine.close()


# -- 5. no environment variable set by the library ------------------------------------------------------------
def test_importing_and_loading_the_model_sets_no_environment_variable() -> None:
    script = (
        "import importlib, os, pkgutil\n"
        "before = dict(os.environ)\n"
        "import waypost\n"
        "for m in pkgutil.walk_packages(waypost.__path__, 'waypost.'):\n"
        "    if m.name != 'waypost.cli':  # the CLI's own settings are its main()'s business\n"
        "        importlib.import_module(m.name)\n"
        "from waypost.embeddings.sentence_transformer import SentenceTransformerEmbedder\n"
        "SentenceTransformerEmbedder('all-MiniLM-L6-v2').embed_query('hello')\n"
        "changed = sorted(k for k in set(before) | set(os.environ) if before.get(k) != os.environ.get(k))\n"
        "print(changed)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TRANSFORMERS_"))}
    env["PYTHONPATH"] = str(ROOT / "src")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout
