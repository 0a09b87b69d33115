"""The evidence graph (document, section, chunk) and passage assembly, on a real store with the real model."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli_runner import Cli
from waypost.base import Embedder
from waypost.engine import Engine, EngineConfig
from waypost.errors import WaypostError
from waypost.post.evidence import EvidenceGraph
from waypost.post.passages import PassageConfig, PassagePolicy
from waypost.types import Document, Hit

ROOT = Path(__file__).resolve().parents[1]

# A manual with sections of several chunks each (at 20 tokens a chunk), and two unrelated notes.
MANUAL = """# Installing the pump
Unpack the pump and check that the impeller turns freely by hand.
Mount the pump on a level concrete base with the four anchor bolts supplied.
Connect the suction pipe first, keeping it as short and straight as possible.
Fill the pump casing with water before the first start so the seals never run dry.
# Maintaining the pump
Inspect the mechanical seal every three months for drips or white crust.
Grease the motor bearings twice a year with a lithium based grease.
Clean the strainer basket whenever the flow drops noticeably.
Replace the impeller when its vanes show pitting or cracks.
# Warranty
The warranty covers manufacturing defects for two years from purchase.
It does not cover damage from running the pump dry or from frost.
"""
NOTES = [
    Document("bread", "Knead the dough for ten minutes, then let it rise in a warm place for an hour."),
    Document("chess", "The Sicilian Defence is the most popular reply to the king's pawn opening."),
]


@pytest.fixture
def store(tmp_path: Path, minilm: Embedder) -> Iterator[Engine]:
    engine = Engine(tmp_path / "store", EngineConfig(chunk_tokens=20, background_index_work=False))
    engine.register_embedder(minilm)
    engine.collection("c", create=True).add([Document("manual", MANUAL, "Pump manual"), *NOTES])
    yield engine
    engine.close()


def manual_chunks(engine: Engine) -> list[tuple[int, tuple[str, ...], str]]:
    """(position, section, text) of the manual's chunks, in order."""
    ctx = engine.collection("c").context()
    graph = EvidenceGraph("c", ctx.indexes, ctx.store)
    out = []
    for pos in range(len(ctx.indexes)):
        stored = graph.chunk(pos)
        if stored is not None and stored.chunk.document_id == "manual":
            out.append((stored.chunk.index, pos, stored.chunk.section, stored.chunk.text))
    return [(pos, section, text) for _i, pos, section, text in sorted(out)]


def test_evidence_graph_sections_and_adjacency(store: Engine) -> None:
    ctx = store.collection("c").context()
    graph = EvidenceGraph("c", ctx.indexes, ctx.store)
    chunks = manual_chunks(store)
    sections = [s for _p, s, _t in chunks]
    assert len(set(sections)) == 3 and len(chunks) >= 6
    for i, (pos, section, _text) in enumerate(chunks):
        parent = graph.get_parent(pos)
        assert parent is not None and parent.document_id == "manual" and parent.path == section
        assert list(parent.positions) == [p for p, s, _t in chunks if s == section]
        expected = [chunks[j][0] for j in (i - 1, i + 1) if 0 <= j < len(chunks) and chunks[j][1] == section]
        assert graph.get_adjacent(pos) == expected  # never across a heading
    sub = graph.get_subgraph(chunks[1][0], depth=2)
    assert {e[2] for e in sub.edges} == {"adjacent"}
    assert sub.positions <= {p for p, s, _t in chunks if s == chunks[1][1]}
    assert [s.path for s in sub.sections] == [chunks[1][1]]


def assert_exact(engine: Engine, hit: Hit) -> None:
    doc = engine.store.get_document("c", hit.document_id)
    assert doc is not None and doc.text[hit.chunk.start : hit.chunk.end] == hit.chunk.text


@pytest.mark.parametrize("policy", list(PassagePolicy))
def test_passages_are_exact_spans_inside_one_section(store: Engine, policy: PassagePolicy) -> None:
    coll = store.collection("c")
    config = PassageConfig(policy, tokens=120)
    result = coll.retrieve("how do I maintain the pump seal and bearings", "hybrid", k=10, passages=config)
    chunks = manual_chunks(store)
    by_id = {f"manual#{i}": (pos, s) for i, (pos, s, _t) in enumerate(chunks)}
    assert result.hits and result.hits[0].document_id == "manual"
    assert any(f"passages: {policy.value}" in n for n in result.explanation.notes)
    assert "passages" in result.explanation.timings_ms
    seen: set[str] = set()
    for hit in result.hits:
        assert_exact(store, hit)
        if hit.passage is None:
            continue
        ids = hit.passage.chunk_ids
        assert hit.passage.policy == policy.value and hit.passage.anchor in ids
        assert not seen & set(ids), "two passages repeat a chunk"
        seen |= set(ids)
        if hit.document_id == "manual":
            assert len({by_id[c][1] for c in ids}) == 1, "a passage crosses a heading"
            indexes = [int(c.split("#")[1]) for c in ids]
            assert indexes == list(range(indexes[0], indexes[0] + len(indexes)))
        assert hit.chunk.token_count <= 120 or len(ids) == 1
    top = result.hits[0]
    assert top.passage is not None and top.chunk.section == ("Maintaining the pump",)


def test_policies_differ_as_documented(store: Engine) -> None:
    coll = store.collection("c")
    chunks = manual_chunks(store)
    warranty = [p for p, s, _t in chunks if s == ("Warranty",)]
    query = "warranty covers defects, not frost or running dry"
    merged = coll.retrieve(query, "hybrid", k=10, passages=PassageConfig(PassagePolicy.AUTO_MERGE, 400)).hits
    # auto-merge: both warranty chunks were retrieved, so their section comes back whole, once
    whole = [h for h in merged if h.chunk.section == ("Warranty",)]
    assert len(whole) == 1 and whole[0].passage is not None and len(whole[0].passage.chunk_ids) == len(warranty)
    # small-to-big with no window returns the chunks as they are; window 1 adds a neighbour each side
    plain = coll.retrieve(query, "hybrid", k=3).hits
    same = coll.retrieve(query, "hybrid", k=3, passages=PassageConfig(PassagePolicy.SMALL_TO_BIG, 400, window=0))
    assert [h.chunk.text for h in same.hits] == [h.chunk.text for h in plain]
    wide = coll.retrieve(query, "hybrid", k=3, passages=PassageConfig(PassagePolicy.SMALL_TO_BIG, 400, window=1))
    assert sum(len(h.passage.chunk_ids) for h in wide.hits if h.passage) > len(plain)
    # grow with keep=1 takes only neighbours at least as relevant as the anchor; keep=0 fills the limit
    strict = coll.retrieve(query, "hybrid", k=1, passages=PassageConfig(PassagePolicy.GROW, 400, keep=1.0)).hits[0]
    loose = coll.retrieve(query, "hybrid", k=1, passages=PassageConfig(PassagePolicy.GROW, 400, keep=0.0)).hits[0]
    assert strict.passage is not None and loose.passage is not None
    assert set(strict.passage.chunk_ids) <= set(loose.passage.chunk_ids)
    assert len(loose.passage.chunk_ids) == len(warranty)  # the whole section, which fits in 400 tokens
    assert 0 < loose.passage.coherence <= 1


def test_deleted_chunks_never_join_a_passage(store: Engine) -> None:
    coll = store.collection("c")
    coll.add([Document("manual", MANUAL.replace("# Warranty", "# Guarantee"), "Pump manual")])  # replaced
    coll.delete(["bread"])
    hits = coll.retrieve("warranty guarantee frost bread dough", "hybrid", k=10, passages=PassageConfig()).hits
    assert hits and "bread" not in {h.document_id for h in hits}
    for hit in hits:
        assert_exact(store, hit)
        assert "Warranty" not in hit.chunk.section


def test_bad_passage_settings_are_refused(store: Engine) -> None:
    with pytest.raises(WaypostError, match="tokens must be positive"):
        store.collection("c").retrieve("pump", passages=PassageConfig(tokens=0))
    with pytest.raises(WaypostError, match="keep must be between"):
        store.collection("c").retrieve("pump", passages=PassageConfig(keep=2))


def test_cli_passages(tmp_path: Path, minilm: Embedder, cli: Cli) -> None:
    path = tmp_path / "cli"
    engine = Engine(path, EngineConfig(chunk_tokens=20, background_index_work=False))
    engine.register_embedder(minilm)
    engine.collection("c", create=True).add([Document("manual", MANUAL, "Pump manual"), *NOTES])
    engine.close()
    base = ["query", "grease the motor bearings", "--store", str(path), "-c", "c"]
    ok = cli(*base, "--passages", "grow", "--passage-tokens", "80", "--json")
    assert ok.exit_code == 0, ok.stderr
    top = json.loads(ok.stdout)["hits"][0]
    assert top["passage"]["policy"] == "grow" and top["section"] == ["Maintaining the pump"]
    assert "Grease the motor bearings" in top["text"]
    bad = cli(*base, "--passages", "paragraphs")
    assert bad.exit_code == 2 and "--passages must be one of" in bad.stderr


def test_a_repeated_heading_is_two_sections_and_no_chunk_comes_twice(tmp_path: Path, minilm: Embedder) -> None:
    text = (
        "# Notes\nThe pump impeller was replaced after the spring inspection found cracks.\n"
        "# Setup\nMount the frame on a level base and tighten the anchor bolts.\n"
        "# Notes\nThe new pump impeller runs quietly and the flow is back to normal.\n"
    )
    engine = Engine(tmp_path / "store", EngineConfig(chunk_tokens=20, background_index_work=False))
    engine.register_embedder(minilm)
    coll = engine.collection("c", create=True)
    coll.add([Document("log", text), Document("manual", MANUAL, "Pump manual"), *NOTES])
    query = "pump impeller"
    for tokens in (10, 1024):  # 10: no section fits whole; 1024: both do
        hits = coll.retrieve(query, "hybrid", k=10, passages=PassageConfig(PassagePolicy.AUTO_MERGE, tokens)).hits
        log = [h for h in hits if h.document_id == "log"]
        assert {c for h in log for c in (h.passage.chunk_ids if h.passage else ())} >= {"log#0", "log#2"}
        for h in log:
            assert_exact(engine, h)
            assert h.passage is not None and "log#1" not in h.passage.chunk_ids  # never across "# Setup"
    # overlapping windows that cannot join (40 tokens) share no chunk
    for policy in PassagePolicy:
        config = PassageConfig(policy, tokens=40, window=1, keep=0.0)
        hits = coll.retrieve(
            "maintain the pump seal, bearings, strainer and impeller", "hybrid", k=20, passages=config
        ).hits
        ids = [c for h in hits for c in (h.passage.chunk_ids if h.passage else (h.chunk.id,))]
        assert len(ids) == len(set(ids)), f"{policy}: a chunk comes twice"
        for h in hits:
            assert_exact(engine, h)
    # a passage strategy's passages are not taken apart again by --passages
    merged = coll.retrieve("warranty frost", "auto-merge", k=3).hits
    again = coll.retrieve(
        "warranty frost", "auto-merge", k=3, passages=PassageConfig(PassagePolicy.SMALL_TO_BIG, window=0)
    )
    assert [h.chunk.id for h in again.hits] == [h.chunk.id for h in merged]
    assert [h.passage.chunk_ids for h in again.hits if h.passage] == [h.passage.chunk_ids for h in merged if h.passage]
    assert any("returned passages already" in n for n in again.explanation.notes)
    engine.close()
