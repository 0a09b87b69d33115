"""Deletes purge everything derived from a document; ``purge`` leaves no trace of it under the store directory."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from waypost.base import Embedder
from waypost.cli import app
from waypost.embeddings.cache import CachedEmbedder
from waypost.engine import Engine, EngineConfig
from waypost.index.set import IndexSet
from waypost.llm.base import Completion, GenerationParams, Message, StreamResult
from waypost.llm.cache import CachedLLM
from waypost.text.analyzers import analyzers
from waypost.types import Document

TOKEN = "zq9purgetoken"
SECRET = "ledger"

TOPICS = [
    ("harbour", "The harbour master logged every ship that entered the bay, noting cargo, crew and weather."),
    ("orchard", "Apple trees in the orchard were pruned in winter; the harvest in autumn filled forty crates."),
    ("observatory", "Astronomers at the observatory measured the comet's orbit over three clear nights."),
    ("bakery", "The bakery opened at dawn, selling rye loaves, croissants and cinnamon buns to the village."),
    ("railway", "Engineers extended the railway across the valley with a stone viaduct of twelve arches."),
    ("library", "The library catalogued rare manuscripts, maps of the coast and letters of the founding family."),
]


def corpus() -> list[Document]:
    docs = [
        Document(
            id=name,
            title=f"{name.title()} notes",
            text=" ".join([body] * 6),
            metadata={"topic": name, "year": 2020 + i},
        )
        for i, (name, body) in enumerate(TOPICS)
    ]
    secret = (
        f"Marta Keller kept the {TOKEN} ledger in Geneva. The {TOKEN} ledger lists every payment Marta Keller "
        f"approved for the Geneva office, and auditors asked about {TOKEN} twice."
    )
    docs.append(
        Document(
            id=SECRET,
            title=f"The {TOKEN} ledger",
            text=" ".join([secret] * 4),
            metadata={"topic": TOKEN, "owner": f"{TOKEN} office", "year": 2024},
        )
    )
    return docs


class EchoLLM:
    """Replies by quoting the prompt (as ``Title: ...`` / ``Summary: ...``, so community reports take it).

    A fake is used on purpose: what matters here is that the LLM cache holds replies quoting the deleted
    document's text, which a real model only sometimes does. An echo always does, so the test fails whenever
    a derived reply survives; the real llama.cpp path of the cache is covered by tests/test_llm.py."""

    model_id = "fake:echo"

    def __init__(self) -> None:
        self.calls = 0
        self._lock = threading.Lock()

    def complete(self, messages: list[Message], params: GenerationParams | None = None) -> Completion:
        with self._lock:
            self.calls += 1
        quoted = " ".join(messages[-1]["content"].split())[-1500:]
        return Completion(f"Title: echo\nSummary: {quoted}", self.model_id, 100, 50, 1.0, finish_reason="stop")

    def stream(self, messages: list[Message], params: GenerationParams | None = None) -> StreamResult:
        completion = self.complete(messages, params)
        return StreamResult(iter([completion.text]), completion)


def forms(token: str) -> set[bytes]:
    """The token as it may be stored: as written, lower-cased, and as the BM25 analyzer's terms."""
    out = {token.encode(), token.lower().encode()}
    for language in ("en", "und"):
        out.update(t.encode() for t in analyzers()(language).terms(token) if len(t) >= 6)
    return out


def traces(root: Path, token: str = TOKEN) -> list[str]:
    """Every file under ``root`` holding any form of ``token`` (read as bytes)."""
    needles = forms(token)
    return sorted(
        str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and any(n in p.read_bytes() for n in needles)
    )


class Opened:
    """An engine with every cache in use: the embedding cache, the LLM cache (tree summaries, graph
    extraction, community reports and answers through the LLM)."""

    def __init__(self, path: Path, minilm: Embedder) -> None:
        config = EngineConfig(
            chunk_tokens=64,
            background_index_work=False,
            tree_summarizer="llm",
            graph_extractor="llm",
            graph_reports="llm",
        )
        self.engine = Engine(path, config)
        self.embedder = CachedEmbedder(minilm, path / "embedding-cache.sqlite")
        self.engine.register_embedder(self.embedder)
        self.llm = CachedLLM(EchoLLM(), path / "llm-cache.sqlite")
        self.engine.use_llm(self.llm)

    def close(self) -> None:
        self.engine.close()
        self.embedder.close()
        self.llm.close()


@pytest.fixture
def opened(tmp_path: Path, minilm: Embedder) -> Iterator[Opened]:
    handle = Opened(tmp_path / "store", minilm)
    yield handle
    handle.close()


def populate(handle: Opened) -> None:
    coll = handle.engine.collection("c", create=True)
    coll.add(corpus())
    coll.tree().get()
    coll.graph().get()
    result = coll.retrieve(f"who kept the {TOKEN} ledger", "hybrid", k=3)
    assert result.hits[0].document_id == SECRET
    coll.feedback(f"who kept the {TOKEN} ledger", result.hits[0], "used")
    coll.feedback("when was the railway viaduct built", "railway#0", "used")
    assert coll.answer(f"Who kept the {TOKEN} ledger?", k=3).text
    for strategy in ("raptor-collapsed", "graph-local"):
        coll.retrieve(f"{TOKEN} ledger Geneva", strategy, k=3)
    handle.engine.indexes.live("c").flush()


def cached_replies(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        return [str(r[0]) for r in conn.execute("SELECT reply FROM completions")]


def test_purge_leaves_no_trace_of_a_deleted_document(opened: Opened, tmp_path: Path) -> None:
    store = tmp_path / "store"
    populate(opened)
    assert opened.llm.inner.calls > 0 and opened.embedder.misses > 0  # type: ignore[attr-defined]
    found = traces(store)  # the test can see the token where it is: the store, the LLM cache, the indexes
    assert all(any(p.startswith(where) for p in found) for where in ("store.sqlite", "llm-cache.sqlite", "indexes/"))

    coll = opened.engine.collection("c")
    assert coll.delete([SECRET]) == 1
    report = coll.purge()
    assert report.tombstoned_rows > 0 and report.vocabulary_terms > 0 and report.index_files > 0
    assert not report.skipped
    opened.close()

    assert traces(store) == []
    assert sorted(p.name for p in store.rglob("*.sqlite-wal") if p.stat().st_size) == []


def test_delete_alone_removes_what_is_derived(opened: Opened, tmp_path: Path) -> None:
    """Without ``purge``: feedback, cache entries, tree summaries and community reports go with the delete."""
    store = tmp_path / "store"
    populate(opened)
    coll = opened.engine.collection("c")
    before = len(cached_replies(store / "llm-cache.sqlite"))
    keys_before = _embedding_keys(store)
    coll.delete([SECRET])

    assert [f.document_id for f in opened.engine.store.feedback("c")] == ["railway"]
    replies = cached_replies(store / "llm-cache.sqlite")
    assert 0 < len(replies) < before and not [r for r in replies if TOKEN in r]
    assert _embedding_keys(store) < keys_before
    tree = coll.tree().get(build=False)
    assert tree is not None and not [n for n in tree.nodes.values() if TOKEN in n.text.lower()]
    graph = coll.graph().get(build=False)
    assert graph is not None
    assert not [c for c in graph.communities.values() if TOKEN in (c.report + c.title).lower()]
    assert not [e for e in graph.entities.values() if TOKEN in e.name.lower()]


def _embedding_keys(store: Path) -> set[str]:
    with sqlite3.connect(store / "embedding-cache.sqlite") as conn:
        return {str(r[0]) for r in conn.execute("SELECT key FROM embeddings")}


def test_replace_keeps_feedback_and_other_documents_are_unaffected(opened: Opened, tmp_path: Path) -> None:
    populate(opened)
    coll = opened.engine.collection("c")
    railway = coll.get("railway")
    assert railway is not None
    coll.add([Document(id="railway", title=railway.title, text=railway.text + " It opened in 1901.")])
    coll.delete([SECRET])
    coll.purge()
    assert sorted(f.document_id for f in opened.engine.store.feedback("c")) == ["railway"]

    for name, _body in TOPICS:
        assert coll.retrieve(f"{name} notes", "hybrid", k=1).hits[0].document_id == name
    assert not coll.retrieve(TOKEN, "bm25", k=3).hits

    purged = opened.engine.indexes.get("c")
    rebuilt = IndexSet.build("c", opened.engine.store.snapshot("c"), analyzer=purged.analyzers)
    assert_equal_indexes(purged, rebuilt)
    opened.close()

    reopened = Opened(tmp_path / "store", opened.embedder.inner)
    try:
        loaded = reopened.engine.indexes.get("c")
        assert reopened.engine.indexes.live("c").loaded_from.startswith("state-")
        assert_equal_indexes(loaded, rebuilt)
    finally:
        reopened.close()


def assert_equal_indexes(got: IndexSet, want: IndexSet) -> None:
    assert len(got.segments) == 1 and got.live is None
    assert np.array_equal(got.row_ids, want.row_ids)
    assert sorted(got.vocab.terms) == sorted(want.vocab.terms)
    for query in ("harbour ship cargo", "orchard apple harvest", "railway viaduct arches", "rye loaves", TOKEN):
        assert np.allclose(got.bm25.scores(query), want.bm25.scores(query))
    assert np.allclose(np.asarray(got.segments[0].dense.vectors), np.asarray(want.segments[0].dense.vectors))


def test_cli_purge_sweeps_what_a_bare_store_delete_left(tmp_path: Path, minilm: Embedder) -> None:
    """A delete made below the engine (or by code before purges existed) left cache entries: ``waypost purge``
    sweeps them against what is live, and says what it removed."""
    handle = Opened(tmp_path / "store", minilm)
    try:
        coll = handle.engine.collection("c", create=True)
        coll.add(corpus())
        assert coll.answer(f"Who kept the {TOKEN} ledger?", k=3).text
        handle.engine.indexes.live("c").flush()
        handle.engine.store.delete("c", [SECRET])
    finally:
        handle.close()
    result = CliRunner().invoke(app, ["purge", "--store", str(tmp_path / "store"), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["collections"] == ["c"] and report["vacuumed"] and report["skipped"] == []
    assert report["embedding_cache_entries"] > 0 and report["llm_cache_entries"] == 1
    assert traces(tmp_path / "store") == []
    again = CliRunner().invoke(app, ["purge", "--store", str(tmp_path / "store"), "-c", "c", "--no-vacuum"])
    assert again.exit_code == 0 and "purged c: 0 tombstoned rows" in again.output, again.output


def test_the_next_merge_drops_terms_no_live_row_uses(tmp_path: Path, minilm: Embedder) -> None:
    """Without ``purge``: once tombstones pass the policy's share, the merge into main leaves the deleted
    document's terms out of the vocabulary, in memory and in the saved state."""
    from waypost.index.set import MergePolicy

    engine = Engine(
        tmp_path / "store",
        EngineConfig(chunk_tokens=64, background_index_work=False, merge_policy=MergePolicy(dead_ratio=0.05)),
    )
    engine.register_embedder(minilm)
    try:
        coll = engine.collection("c", create=True)
        coll.add(corpus())
        assert any(TOKEN in t for t in engine.indexes.get("c").vocab.terms)
        coll.delete([SECRET])
        engine.indexes.get("c")  # the catch-up tombstones the rows; the merge it starts installs the next view
        state = engine.indexes.get("c")
        assert len(state.segments) == 1 and state.live is None
        assert not [t for t in state.vocab.terms if TOKEN in t]
        assert coll.retrieve("orchard apple harvest", "bm25", k=1).hits[0].document_id == "orchard"
    finally:
        engine.close()
    # the newest saved state names a vocabulary without it (the state before stays until the next save or purge)
    newest = max((tmp_path / "store" / "indexes" / "c").rglob("state-*.json"), key=lambda p: p.name)
    vocab = json.loads((newest.parent / json.loads(newest.read_text())["vocab"]).read_text())
    assert not [t for t in vocab if TOKEN in t] and len(vocab) == len(state.vocab)


def test_purge_never_sweeps_a_cache_shared_with_other_stores(tmp_path: Path, minilm: Embedder) -> None:
    """An embedding cache outside the store directory (``EngineConfig(embed_cache=...)``, as the evaluation
    runner shares one) holds other stores' entries: a purge of one store leaves them and says so."""
    shared = tmp_path / "shared-embeddings.sqlite"
    engines = [Engine(tmp_path / name, EngineConfig(chunk_tokens=64, embed_cache=shared)) for name in ("a", "b")]
    try:
        for engine, docs in zip(engines, (corpus()[:2], corpus()[2:4]), strict=True):
            engine.register_embedder(CachedEmbedder(minilm, shared))
            engine.collection("c", create=True).add(docs)
        with sqlite3.connect(shared) as conn:
            before = conn.execute("SELECT count(*) FROM embeddings").fetchone()[0]
        report = engines[0].purge()
        with sqlite3.connect(shared) as conn:
            after = conn.execute("SELECT count(*) FROM embeddings").fetchone()[0]
        assert before > 0 and after == before
        assert report.embedding_cache_entries == 0
        assert any("outside the store directory" in note for note in report.skipped)
        # a delete's targeted clean-up still reaches the shared cache, for the deleted document's text only
        assert engines[0].collection("c").delete([corpus()[0].id]) == 1
        with sqlite3.connect(shared) as conn:
            left = conn.execute("SELECT count(*) FROM embeddings").fetchone()[0]
        assert 0 < left < before
    finally:
        for engine in engines:
            engine.close()
