"""The RAPTOR tree: built over a real collection with the real model, kept current through deletes and adds
(touching only the path of a change), persisted and reloaded without a rebuild, sound after kill -9 in the
middle of a rebuild or an incremental update, searched by the three tree strategies, and driven from the CLI."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.cli_runner import Cli
from waypost.base import Embedder
from waypost.engine import Engine, EngineConfig
from waypost.errors import WaypostError
from waypost.filters.model import Condition, Op
from waypost.hierarchy.tree import Tree, TreeConfig
from waypost.ingest.chunker import count_tokens
from waypost.store.backend import open_backend
from waypost.types import Document, Hit

ROOT = Path(__file__).resolve().parents[1]
CHUNK_TOKENS = 64
STRATEGIES = ("raptor-collapsed", "raptor-traversal", "doc-summary")

# -- corpus ---------------------------------------------------------------------------------------------------
# Long "meetings" (several chunks each: they get document subtrees) and short one-chunk notes in four topics
# (enough documents above the document layer for UMAP + Gaussian-mixture clustering to run).
MEETINGS: dict[str, tuple[str, list[str]]] = {
    "budget": (
        "finance",
        [
            "The quarterly budget review opened with the finance director presenting revenue figures",
            "Revenue grew eight percent over the last quarter while operating costs rose faster",
            "The team discussed cutting travel expenses and renegotiating supplier contracts",
            "Payroll remains the largest line item in the operating budget",
            "The auditors asked for a reconciliation of the capital expenditure accounts",
            "Depreciation schedules for the new servers were revised to five years",
            "Cash flow forecasts show a shortfall in the third month unless invoices are collected sooner",
            "Accounts receivable have grown and several clients pay after ninety days",
            "The treasurer proposed a credit line with the bank as a precaution",
            "Tax liabilities for the fiscal year were estimated by the accountants",
        ],
    ),
    "release": (
        "software",
        [
            "The engineering team reviewed the release plan for version four of the mobile application",
            "Three critical bugs in the login flow must be fixed before the release candidate",
            "Continuous integration builds fail intermittently on the database migration tests",
            "The developers agreed to freeze new features two weeks before shipping",
            "Code review turnaround is slow because only two engineers can approve merges",
            "The crash rate on older Android devices doubled after the last update",
            "Quality assurance will run a full regression suite on the staging servers",
            "The product manager wants the dark mode feature behind a feature flag",
            "Memory leaks in the image cache were traced to an unreleased bitmap",
            "The backend API will be versioned so that old clients keep working",
        ],
    ),
    "campaign": (
        "marketing",
        [
            "The marketing group planned the spring advertising campaign for the new running shoes",
            "Television spots are expensive so spending shifts toward social media influencers",
            "The designers presented three poster concepts featuring athletes on mountain trails",
            "Brand awareness surveys show younger customers barely recognise the logo",
            "The campaign slogan was debated at length and the team preferred shorter phrases",
            "Retail partners want in-store displays delivered before the first week of March",
            "Email newsletters will announce a discount code for loyal customers",
            "Click-through rates on last year's banner advertisements were disappointing",
            "A celebrity sprinter agreed to appear in the launch video",
            "Sponsorship of the city marathon will put the logo on every finisher medal",
        ],
    ),
    "relocation": (
        "facilities",
        [
            "The facilities committee discussed moving the headquarters to the new office building downtown",
            "The lease on the current warehouse expires at the end of the year",
            "Movers quoted a price for transporting desks, chairs and filing cabinets",
            "Employees asked about parking spaces and bicycle storage at the new site",
            "Electricians must install network cabling on every floor before the move",
            "Meeting rooms in the new building will have video conferencing equipment",
            "The cafeteria contract will be tendered again with a local catering company",
            "Security badges need to be reissued for all staff before the first day",
            "The elevator inspection certificate for the tower is still pending",
            "Old furniture will be donated to a charity that furnishes shelters",
        ],
    ),
    "garden-club": (
        "gardening",
        [
            "The garden club meeting began with a talk on raised vegetable beds",
            "Members compared tomato varieties that ripen early in cool summers",
            "Slugs ate most of the lettuce seedlings in the community allotment",
            "A beekeeper explained which flowers feed bees in early spring",
            "Rainwater barrels will be installed beside the greenhouse",
            "Mulching the strawberry rows keeps the soil moist and the fruit clean",
            "The club will sell surplus courgettes and herbs at the autumn fair",
            "Seed swaps of heirloom beans are planned for the winter evenings",
            "Pruning the old apple trees should wait until the leaves have fallen",
            "Compost bins need turning every few weeks to stay warm and aerobic",
        ],
    ),
}
SPEAKERS = ["Alice", "Bob", "Chen", "Dana"]

NOTES: dict[str, list[str]] = {
    "gardening": [
        "Tomatoes need full sun, regular watering and a stake to climb as the vines grow.",
        "Compost made from kitchen scraps and leaves enriches garden soil with nutrients.",
        "Prune rose bushes in late winter to encourage strong spring flowering.",
        "Aphids on lettuce can be washed off with water or eaten by ladybirds.",
        "Plant tulip bulbs in autumn, pointed end up, about ten centimetres deep.",
    ],
    "astronomy": [
        "Jupiter is the largest planet in the solar system and has dozens of moons.",
        "A telescope with a wide aperture gathers more light from faint galaxies.",
        "The Andromeda galaxy is the nearest large spiral galaxy to the Milky Way.",
        "Meteor showers happen when Earth passes through debris left by a comet.",
        "Saturn's rings are made of ice and rock particles orbiting the planet.",
    ],
    "cooking": [
        "Knead bread dough for ten minutes until it is smooth and elastic, then let it rise.",
        "A good risotto needs warm stock added slowly while stirring the rice.",
        "Sear the steak in a hot cast iron pan and rest it before slicing.",
        "Fresh basil, garlic, pine nuts and parmesan make a classic pesto sauce.",
        "Caramelise onions slowly over low heat for a sweet, deep flavour.",
    ],
    "football": [
        "The striker scored twice in the second half to win the league match.",
        "The goalkeeper saved a penalty in the final minute of extra time.",
        "The coach changed the formation to three defenders after halftime.",
        "Ticket sales for the cup final sold out within an hour.",
        "The midfielder was shown a red card for a dangerous tackle.",
    ],
}


def meeting(key: str, sentences: int) -> Document:
    topic, lines = MEETINGS[key]
    body = []
    for i in range(sentences):
        rnd = i // len(lines)
        tail = "" if rnd == 0 else f" (raised again in round {rnd + 1})"
        body.append(f"{SPEAKERS[i % len(SPEAKERS)]}: {lines[i % len(lines)]}{tail}.")
    return Document(f"meeting-{key}", "\n".join(body), f"Meeting on {topic}", {"topic": topic, "kind": "meeting"})


def note(topic: str, i: int) -> Document:
    return Document(f"{topic}-{i}", NOTES[topic][i], f"{topic} note {i}", {"topic": topic, "kind": "note"})


def corpus() -> list[Document]:
    docs = [meeting("budget", 30), meeting("release", 24), meeting("campaign", 36)]
    docs += [note(topic, i) for topic in NOTES for i in range(len(NOTES[topic]))]
    return docs


def extra(i: int) -> Document:
    """Documents the crash writer adds and deletes: each says its own made-up word in every sentence."""
    word = f"zorblax{i}"
    text = " ".join(f"Sentence {j} of the {word} report describes the {word} survey in detail." for j in range(12))
    return Document(f"extra-{i}", text, f"Report {i}", {"topic": "extra", "kind": "report"})


WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> set[str]:
    return set(WORD.findall(text.lower()))


def own_words(doc: Document, others: list[Document]) -> set[str]:
    """Words of ``doc`` that no other document uses: a summary quoting ``doc`` would contain some."""
    seen: set[str] = set()
    for other in others:
        if other.id != doc.id:
            seen |= words(other.text)
    mine = {w for w in words(doc.text) if len(w) > 4} - seen
    assert mine, f"{doc.id} has no words of its own"
    return mine


# -- engines --------------------------------------------------------------------------------------------------
def open_engine(path: Path, minilm: Embedder) -> Engine:
    engine = Engine(path, EngineConfig(chunk_tokens=CHUNK_TOKENS, background_index_work=False))
    engine.register_embedder(minilm)
    return engine


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, minilm: Embedder) -> Path:
    """A store with the corpus and its tree built and saved (copied by the tests that change it)."""
    path = tmp_path_factory.mktemp("tree") / "store"
    with open_engine(path, minilm) as engine:
        engine.collection("c", create=True).add(corpus())
        engine.collection("c").tree().get()
    return path


@pytest.fixture
def store(built: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "store"
    shutil.copytree(built, copy)
    return copy


@pytest.fixture(scope="module")
def shared(built: Path, tmp_path_factory: pytest.TempPathFactory, minilm: Embedder) -> Iterator[Engine]:
    """One engine over a copy of the built store for the tests that only read."""
    copy = tmp_path_factory.mktemp("shared") / "store"
    shutil.copytree(built, copy)
    engine = open_engine(copy, minilm)
    yield engine
    engine.close()


# -- checks ---------------------------------------------------------------------------------------------------
def rows_by_document(engine: Engine, collection: str = "c") -> dict[str, list[int]]:
    snap = engine.store.snapshot(collection)
    out: dict[str, list[int]] = {}
    for row, doc in zip(snap.row_ids.tolist(), snap.document_ids, strict=True):
        out.setdefault(doc, []).append(int(row))
    return out


def row_of(engine: Engine, hits: list[Hit]) -> list[int]:
    by_chunk: dict[str, int] = {}
    live = [r for rows in rows_by_document(engine).values() for r in rows]
    for s in engine.store.chunks_by_row("c", live):
        by_chunk[s.chunk.id] = s.row_id
    return [by_chunk[h.chunk.id] for h in hits]


def assert_sound(engine: Engine, tree: Tree, collection: str = "c") -> None:
    """The tree matches the collection: no structural problem, every leaf live, every live chunk covered,
    one document node per document covering exactly its chunks, runs inside their document."""
    assert tree.check() == []
    docs = rows_by_document(engine, collection)
    live = {r for rows in docs.values() for r in rows}
    for node in tree.nodes.values():
        dead = set(node.leaves) - live
        assert not dead, f"node {node.id} ({node.kind} {node.document_id!r}) covers dead rows {sorted(dead)}"
        assert node.kind in ("run", "document", "cluster")
        assert node.layer >= 1
    covered = {r for i in tree.roots() for r in tree.nodes[i].leaves}
    assert covered == live, f"chunks not covered by the tree: {sorted(live - covered)}"
    document_nodes = [n for n in tree.nodes.values() if n.kind == "document"]
    assert sorted(n.document_id for n in document_nodes) == sorted(docs), "one document node per document"
    for n in document_nodes:
        assert n.leaves == docs[n.document_id], f"document node of {n.document_id} covers {n.leaves}"
    for n in tree.nodes.values():
        if n.kind == "run":
            assert set(n.leaves) <= set(docs[n.document_id]), f"run {n.id} strays out of {n.document_id}"
        if n.kind == "cluster":
            assert n.children and n.document_id == ""


def layer_violations(tree: Tree) -> list[str]:
    return [
        f"node {n.id} (layer {n.layer}, {n.kind}) has child {c} at layer {tree.nodes[c].layer}"
        for n in tree.nodes.values()
        for c in n.children
        if tree.nodes[c].layer >= n.layer
    ]


def shape(tree: Tree) -> dict[int, tuple[int, str, str, tuple[int, ...], tuple[int, ...], str]]:
    return {
        n.id: (n.layer, n.kind, n.document_id, tuple(n.children), tuple(n.leaves), n.text) for n in tree.nodes.values()
    }


def ancestors(tree: Tree, node: int) -> set[int]:
    parents = tree.parents()
    out: set[int] = set()
    todo = [node]
    while todo:
        for p in parents.get(todo.pop(), []):
            if p not in out:
                out.add(p)
                todo.append(p)
    return out


def subtree(tree: Tree, node: int) -> set[int]:
    out = {node}
    todo = [node]
    while todo:
        for c in tree.nodes[todo.pop()].children:
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def assert_not_in_tree(tree: Tree, gone: dict[str, set[str]], rows: set[int]) -> None:
    """Nothing of the deleted documents (``gone``: id -> words only they used; ``rows``: their old row
    ids) is left in any node: leaves, document ids or summaries."""
    for node in tree.nodes.values():
        assert not rows.intersection(node.leaves), f"node {node.id} still covers deleted rows"
        assert node.document_id not in gone, f"node {node.id} belongs to deleted {node.document_id}"
        for doc, mine in gone.items():
            quoted = words(node.text) & mine
            assert not quoted, f"node {node.id}'s summary still quotes deleted {doc}: {sorted(quoted)}"


def assert_not_retrieved(engine: Engine, gone: dict[str, set[str]]) -> None:
    """No tree strategy returns a deleted document, or a summary quoting one, even asked in its own words."""
    coll = engine.collection("c")
    for doc, mine in gone.items():
        query = " ".join(sorted(mine)[:12])
        for strategy in STRATEGIES:
            hits = coll.retrieve(query, strategy, k=20).hits
            assert hits, f"{strategy} found nothing at all for {query!r}"
            assert not {h.document_id for h in hits} & set(gone), f"{strategy} returned a deleted document"
            for h in hits:
                if h.node is not None:
                    assert not words(h.node.summary) & mine, f"{strategy}: a summary of deleted {doc}"


# -- 1. build -------------------------------------------------------------------------------------------------
def test_build_covers_the_collection(shared: Engine) -> None:
    live = shared.collection("c").tree()
    tree = live.get()
    assert tree is not None
    assert_sound(shared, tree)
    assert layer_violations(tree) == []
    docs = rows_by_document(shared)
    assert sum(len(r) > 1 for r in docs.values()) == 3  # the meetings have document subtrees
    for doc, rows in docs.items():
        node = tree.nodes[tree.document_nodes()[doc]]
        if len(rows) > 1:
            assert node.children and node.layer >= 2, f"{doc}: its document node has no run below it"
            inside = subtree(tree, node.id) - {node.id}
            assert all(tree.nodes[i].kind == "run" and tree.nodes[i].document_id == doc for i in inside)
            first = [i for i in inside if tree.nodes[i].layer == 1]
            assert {r for i in first for r in tree.nodes[i].leaves} == set(rows)
        else:
            assert node.layer == 1 and node.children == []
    # the collection layers were clustered, and the notes of one topic mostly share a cluster
    clusters = [n for n in tree.nodes.values() if n.kind == "cluster"]
    assert clusters and all(len(n.children) >= 1 for n in clusters)
    document_of = {i: n.document_id for i, n in tree.nodes.items() if n.kind == "document"}
    for topic in NOTES:
        best = max(sum(document_of.get(c, "").startswith(topic) for c in n.children) for n in clusters)
        assert best >= 3, f"the {topic} notes are scattered over the clusters"
    # the build is recorded: layers, generation, no drift
    status = live.status()
    assert status.built and status.problems == []
    assert status.generation == status.store_generation == tree.generation == shared.store.generation("c")
    assert status.layers == tree.layers() and sum(status.layers.values()) == status.nodes == len(tree.nodes)
    assert set(status.layers) == set(range(1, max(status.layers) + 1)) and max(status.layers) >= 3
    assert status.documents == len(docs) and status.drift == 0.0 and not status.rebuild_advised
    assert status.size_mb >= 0 and "clustering" in status.build_seconds
    # the budget counts the same tokens as the chunks say they have
    stored = shared.store.chunks_by_row("c", [r for rows in docs.values() for r in rows])
    assert {s.row_id: s.chunk.token_count for s in stored} == tree.leaf_tokens


def test_rebuild_swaps_in_a_new_sound_tree(store: Path, minilm: Embedder) -> None:
    with open_engine(store, minilm) as engine:
        live = engine.collection("c").tree()
        before = live.trees.record("c")
        old = live.get()
        assert before is not None and old is not None
        new = live.rebuild()
        after = live.trees.record("c")
        assert after is not None and after.tree != before.tree and new is not old
        assert live.get() is new
        assert_sound(engine, new)
        assert sorted(n.document_id for n in new.nodes.values() if n.kind == "document") == sorted(
            n.document_id for n in old.nodes.values() if n.kind == "document"
        )
        assert not [c for c in engine.store.consumers("c") if c.startswith("tree-build")]


# -- 2. delete ------------------------------------------------------------------------------------------------
def test_delete_leaves_nothing_behind(store: Path, minilm: Embedder) -> None:
    with open_engine(store, minilm) as engine:
        coll = engine.collection("c")
        tree = coll.tree().get()
        assert tree is not None
        docs = rows_by_document(engine)
        everything = corpus()
        victims = ["meeting-campaign", "astronomy-2"]
        gone = {d.id: own_words(d, everything) for d in everything if d.id in victims}
        old_rows = {r for v in victims for r in docs[v]}
        assert coll.delete(victims) == 2
        # straight away, before anything else touches the tree: the strategies already leave them out
        assert_not_retrieved(engine, gone)
        tree = coll.tree().get()
        assert tree is not None and "meeting-campaign" not in tree.document_nodes()
        assert_not_in_tree(tree, gone, old_rows)
        assert_sound(engine, tree)
        assert tree.generation == engine.store.generation("c")
        # and the saved tree says the same
    with open_engine(store, minilm) as engine:
        status = engine.collection("c").tree().status()
        assert status.generation == status.store_generation and status.problems == []
        reloaded = engine.collection("c").tree().get(build=False)
        assert reloaded is not None
        assert_not_in_tree(reloaded, gone, old_rows)
        assert_sound(engine, reloaded)


def test_delete_through_another_engine_and_replace(store: Path, minilm: Embedder) -> None:
    """The first engine's tree is in memory; another engine deletes: the next query already knows. A replaced
    document's subtree covers its new chunks only."""
    everything = corpus()
    with open_engine(store, minilm) as first, open_engine(store, minilm) as second:
        coll = first.collection("c")
        assert coll.tree().get() is not None
        assert coll.retrieve("quarterly budget revenue", "raptor-collapsed").hits
        old_rows = set(rows_by_document(first)["meeting-budget"])
        gone = {"meeting-budget": own_words(meeting("budget", 30), everything)}
        assert second.collection("c").delete(["meeting-budget"]) == 1
        for strategy in STRATEGIES:
            hits = coll.retrieve("quarterly budget revenue payroll auditors", strategy, k=20).hits
            assert hits and all(h.document_id != "meeting-budget" for h in hits), strategy
        tree = coll.tree().get()
        assert tree is not None
        assert_not_in_tree(tree, gone, old_rows)
        assert_sound(first, tree)
        assert_not_retrieved(first, gone)

        release_rows = set(rows_by_document(first)["meeting-release"])
        replaced = meeting("release", 16)
        second.collection("c").add([replaced])
        tree = coll.tree().get()
        assert tree is not None
        assert_sound(first, tree)
        new_rows = set(rows_by_document(first)["meeting-release"])
        assert not new_rows & release_rows
        for node in tree.nodes.values():
            assert not release_rows.intersection(node.leaves), f"node {node.id} covers the replaced chunks"
        # the old version's third round of lines is gone: no summary of the document quotes it any more
        assert not any("round 3" in n.text for n in tree.nodes.values() if n.document_id == "meeting-release")


def test_drop_and_recreate_elsewhere_is_noticed(tmp_path: Path, minilm: Embedder) -> None:
    with open_engine(tmp_path / "s", minilm) as first:
        coll = first.collection("c", create=True)
        for i in range(4):
            coll.add([extra(i)])  # generation 4
        assert coll.tree().get() is not None
        with open_engine(tmp_path / "s", minilm) as second:
            second.drop("c")
            second.collection("c", create=True).add([extra(10), extra(11), extra(12)])  # generation 1
        for strategy in STRATEGIES:
            hits = coll.retrieve("zorblax11 survey", strategy).hits
            assert hits and hits[0].document_id == "extra-11", strategy
        tree = coll.tree().get()
        assert tree is not None
        assert_sound(first, tree)


# -- 3. incremental add -----------------------------------------------------------------------------------------
def test_add_touches_only_the_path(store: Path, minilm: Embedder) -> None:
    with open_engine(store, minilm) as engine:
        coll = engine.collection("c")
        tree = coll.tree().get()
        assert tree is not None
        before = shape(tree)
        clusters_before = {i for i, n in tree.nodes.items() if n.kind == "cluster"}
        coll.add([meeting("relocation", 20)])  # embedding happens here, outside the timed part
        t0 = time.perf_counter()
        tree = coll.tree().get()
        seconds = time.perf_counter() - t0
        assert tree is not None
        assert seconds < 2.0, f"the incremental update took {seconds:.2f} s"
        assert_sound(engine, tree)
        after = shape(tree)
        assert set(before) <= set(after), "an add dropped nodes"
        new_rows = rows_by_document(engine)["meeting-relocation"]
        top = tree.document_nodes()["meeting-relocation"]
        created = set(after) - set(before)
        assert subtree(tree, top) == created, "the new nodes are exactly the new document's subtree"
        assert tree.nodes[top].leaves == new_rows and len(new_rows) > 3
        parents = tree.parents().get(top, [])
        assert len(parents) == 1, f"the document node hangs under {parents}"
        home = parents[0]
        assert home in clusters_before
        assert all(tree.nodes[c].kind != "cluster" for c in tree.nodes[home].children), "not the lowest cluster"
        path = {home} | ancestors(tree, home)
        for i in path:
            assert set(new_rows) <= set(tree.nodes[i].leaves), f"node {i} on the path does not cover the new rows"
            assert set(before[i][4]) <= set(tree.nodes[i].leaves)
        assert tree.nodes[home].children == [*before[home][3], top]
        untouched = [i for i in before if i not in path]
        assert untouched
        for i in untouched:
            assert after[i] == before[i], f"node {i} is off the path but changed"
        changed = {i for i in before if after[i] != before[i]}
        assert changed <= path
        status = coll.tree().status()
        assert status.generation == status.store_generation and status.changed_nodes == len(path | created)


def test_add_without_clusters_makes_a_root(tmp_path: Path, minilm: Embedder) -> None:
    with open_engine(tmp_path / "small", minilm) as engine:
        coll = engine.collection("c", create=True)
        coll.add([meeting("budget", 18), note("cooking", 0)])  # two documents: nothing to cluster
        tree = coll.tree().get()
        assert tree is not None and not [n for n in tree.nodes.values() if n.kind == "cluster"]
        before, roots = shape(tree), set(tree.roots())
        coll.add([meeting("release", 15)])
        tree = coll.tree().get()
        assert tree is not None
        assert_sound(engine, tree)
        top = tree.document_nodes()["meeting-release"]
        assert set(tree.roots()) == roots | {top}
        assert {i: shape(tree)[i] for i in before} == before


def test_add_keeps_parents_above_children(store: Path, minilm: Embedder) -> None:
    with open_engine(store, minilm) as engine:
        coll = engine.collection("c")
        tree = coll.tree().get()
        assert tree is not None and layer_violations(tree) == []
        coll.add([meeting("garden-club", 20)])  # lands in the notes' low cluster
        tree = coll.tree().get()
        assert tree is not None
        assert_sound(engine, tree)
        assert layer_violations(tree) == []


# -- 3b. RAPTOR-lite -----------------------------------------------------------------------------------------
HANDBOOK = """# Travel policy
Employees book flights through the company travel desk at least two weeks ahead.
Economy class is the rule for flights shorter than six hours.
Hotel rooms are reimbursed up to the city rate published by finance.
Taxi receipts must be submitted within thirty days of the trip.
# Equipment
Every new employee receives a laptop, a monitor and a headset on the first day.
Broken equipment is returned to the service desk, which issues a replacement.
Personal software may not be installed on company laptops without approval.
Laptops are replaced every four years or earlier when they fail.
"""


def lite_engine(path: Path, minilm: Embedder, lite: bool | None = True) -> Engine:
    tree = None if lite is None else TreeConfig(lite=lite)
    engine = Engine(path, EngineConfig(chunk_tokens=40, background_index_work=False, tree=tree))
    engine.register_embedder(minilm)
    return engine


def assert_lite(engine: Engine, tree: Tree) -> None:
    """One summary layer: every node sits on leaves; a section node's chunks are consecutive chunks of one
    section of one document; clusters hold one-chunk documents; nothing covers a dead chunk."""
    assert tree.check() == [] and tree.config.lite
    docs = rows_by_document(engine)
    live = {r for rows in docs.values() for r in rows}
    stored = {s.row_id: s for s in engine.store.chunks_by_row("c", sorted(live))}
    for n in tree.nodes.values():
        assert n.layer == 1 and n.children == [] and set(n.leaves) <= live, n
        if n.kind == "cluster":
            assert all(len(docs[stored[r].chunk.document_id]) == 1 for r in n.leaves)
        else:
            assert n.kind in ("section", "document") and n.leaves == [
                r for r in docs[n.document_id] if r in set(n.leaves)
            ]
            assert len({stored[r].chunk.section for r in n.leaves}) == 1, f"node {n.id} spans sections"
            indexes = [stored[r].chunk.index for r in n.leaves]
            assert indexes == list(range(indexes[0], indexes[0] + len(indexes))), "a section's chunks are a run"
    for doc, rows in docs.items():
        if len(rows) > 1:  # every chunk of a long document is under one of its section nodes
            covered = [r for n in tree.nodes.values() if n.document_id == doc for r in n.leaves]
            assert sorted(covered) == rows, doc


def test_lite_tree_follows_the_collection(tmp_path: Path, minilm: Embedder) -> None:
    path = tmp_path / "lite"
    with lite_engine(path, minilm) as engine:
        coll = engine.collection("c", create=True)
        handbook = Document("handbook", HANDBOOK, "Staff handbook", {"topic": "policy", "kind": "handbook"})
        coll.add([*corpus(), handbook])
        live = coll.tree()
        tree = live.get()
        assert tree is not None
        assert_lite(engine, tree)
        kinds = {n.document_id: n.kind for n in tree.nodes.values() if n.document_id}
        assert kinds["handbook"] == "section" and kinds["meeting-budget"] == "document"
        sections = {tuple(n.text.split()[:1]) for n in tree.nodes.values() if n.document_id == "handbook"}
        assert len(sections) >= 2
        assert [n for n in tree.nodes.values() if n.kind == "cluster"], "the notes are clustered"
        status = live.status()
        assert status.shape == "lite" and status.layers == {1: len(tree.nodes)} and status.problems == []
        # a one-chunk document joins its nearest cluster; a long one gets its own section nodes
        lamb = Document("cooking-9", "Slow-roast the lamb shoulder with garlic and rosemary for hours.")
        coll.add([lamb])
        tree = live.get()
        assert tree is not None and live.last_update["nodes_touched"] == 1
        assert_lite(engine, tree)
        assert any(n.kind == "cluster" and engine.store.chunks_by_row("c", n.leaves) for n in tree.nodes.values())
        coll.add([meeting("relocation", 20)])
        tree = live.get()
        assert tree is not None and "meeting-relocation" in {n.document_id for n in tree.nodes.values()}
        assert_lite(engine, tree)
        hits = coll.retrieve("flights booked through the travel desk", "raptor-collapsed", k=5).hits
        assert hits and hits[0].document_id == "handbook"
        # deletes are exact
        everything = [*corpus(), handbook, lamb, meeting("relocation", 20)]
        gone = {d.id: own_words(d, everything) for d in everything if d.id in ("handbook", "astronomy-1")}
        old = {r for d in gone for r in rows_by_document(engine)[d]}
        coll.delete(list(gone))
        assert_not_retrieved(engine, gone)
        tree = live.get()
        assert tree is not None
        assert_not_in_tree(tree, gone, old)
        assert_lite(engine, tree)
        name = live.trees.record("c")
        assert name is not None
    # reopened without a shape asked for: the stored lite tree stays; asked for full: rebuilt as full
    with lite_engine(path, minilm, lite=None) as engine:
        live = engine.collection("c").tree()
        tree = live.get()
        record = live.trees.record("c")
        assert tree is not None and tree.config.lite and record is not None and record.tree == name.tree
    with lite_engine(path, minilm, lite=False) as engine:
        live = engine.collection("c").tree()
        tree = live.get()
        assert tree is not None and not tree.config.lite and live.status().shape == "full"
        assert_sound(engine, tree)


# -- 4. persistence -------------------------------------------------------------------------------------------
def test_reopened_engine_loads_the_saved_tree(store: Path, minilm: Embedder) -> None:
    with open_engine(store, minilm) as engine:
        live = engine.collection("c").tree()
        tree = live.get()
        assert tree is not None
        saved = shape(tree)
        record = live.trees.record("c")
        assert record is not None
    with open_engine(store, minilm) as engine:
        live = engine.collection("c").tree()
        status = live.status()
        assert status.built and status.generation == status.store_generation and status.problems == []
        t0 = time.perf_counter()
        tree = live.get(build=False)
        assert tree is not None and time.perf_counter() - t0 < 2.0
        assert shape(tree) == saved
        again = live.trees.record("c")
        assert again is not None and (again.tree, again.built_at) == (record.tree, record.built_at), "rebuilt"
        # an incremental update is saved too
        engine.collection("c").add([meeting("relocation", 20)])
        tree = live.get()
        assert tree is not None
        updated = shape(tree)
        assert updated != saved
    with open_engine(store, minilm) as engine:
        live = engine.collection("c").tree()
        tree = live.get(build=False)
        assert tree is not None and shape(tree) == updated
        assert tree.generation == engine.store.generation("c")
        # a change made while no tree was in memory is caught up from the log on load, without a rebuild
        engine.collection("c").delete(["football-1"])
    with open_engine(store, minilm) as engine:
        live = engine.collection("c").tree()
        status = live.status()
        assert status.generation == status.store_generation - 1
        tree = live.get(build=False)
        assert tree is not None and "football-1" not in tree.document_nodes()
        assert_sound(engine, tree)
        again = live.trees.record("c")
        assert again is not None and again.tree == record.tree, "caught up by a rebuild instead of the log"
        status = live.status()
        assert status.generation == status.store_generation and status.changed_nodes > 0


# -- 5. kill -9 -----------------------------------------------------------------------------------------------
WRITER = textwrap.dedent(
    """
    import sys
    from tests.test_tree import CHUNK_TOKENS, extra
    from waypost.engine import Engine, EngineConfig
    engine = Engine(sys.argv[1], EngineConfig(chunk_tokens=CHUNK_TOKENS, background_index_work=False))
    coll = engine.collection("c")
    live = coll.tree()
    live.get()
    i = 0
    while True:
        if sys.argv[2] == "rebuild":
            live.rebuild()
            print("rebuilt", i, flush=True)
        else:
            print("adding", extra(i).id, flush=True)
            coll.add([extra(i)])
            live.get()
            victim = extra(i - 1).id if i % 2 else f"gardening-{i // 2 % 5}"
            print("deleting", victim, flush=True)
            coll.delete([victim])
            live.get()
            print("step", i, flush=True)
        i += 1
    """
)


def kill_during(store: Path, mode: str, delay: float) -> list[str]:
    """Run the writer, let it get going, SIGKILL it ``delay`` seconds later; its output lines."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])}
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(store), mode],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    lines: list[str] = []
    try:
        while not lines or not lines[-1].startswith(("rebuilt", "step")):  # one whole round written first
            line = proc.stdout.readline()
            assert line, f"the writer died: {proc.stderr.read()}"
            lines.append(line.strip())
        reader = threading.Thread(target=lambda: lines.extend(line.strip() for line in proc.stdout), daemon=True)
        reader.start()
        time.sleep(delay)
        assert proc.poll() is None, f"the writer stopped: {proc.stderr.read()}"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    reader.join(timeout=10)
    return lines


@pytest.mark.slow
def test_kill_9_leaves_a_sound_tree(built: Path, tmp_path: Path, minilm: Embedder) -> None:
    """One writer rebuilds the tree over and over, another adds, deletes and updates the tree incrementally;
    each is killed -9 at a random moment (both at once, on copies of the store, to save time)."""
    with open_backend(built) as backend:
        record = backend.trees.record("c")
    assert record is not None
    modes = ("rebuild", "update")
    stores = {mode: tmp_path / mode for mode in modes}
    for path in stores.values():
        shutil.copytree(built, path)
    with open_engine(stores["update"], minilm) as engine:
        generation = engine.store.generation("c")
    delays = {mode: random.uniform(0.5, 3.0) for mode in modes}
    with ThreadPoolExecutor(len(modes)) as pool:
        outputs = dict(zip(modes, pool.map(lambda m: kill_during(stores[m], m, delays[m]), modes), strict=True))
    for mode, lines in outputs.items():
        where = f"{mode} writer killed {delays[mode]:.2f} s in, after {lines[-3:]}"
        with open_engine(stores[mode], minilm) as engine:
            coll = engine.collection("c")
            live = coll.tree()
            status = live.status()  # what is stored, before any catch-up
            assert status.built and status.problems == [], where
            now = live.trees.record("c")
            assert now is not None
            if mode == "rebuild":
                assert now.tree != record.tree, f"no rebuild finished before the kill: {where}"
            else:
                assert engine.store.generation("c") > generation, f"nothing was written before the kill: {where}"
            tree = live.get(build=False)
            assert tree is not None, where
            assert tree.generation == engine.store.generation("c"), where
            held = [c for c in engine.store.consumers("c") if c.startswith("tree-build")]
            assert held == [], f"a killed rebuild still holds the change log ({held}): {where}"
            assert_sound(engine, tree)
            live_docs = set(rows_by_document(engine))
            ever = [*corpus(), *(extra(i) for i in range(sum(line.startswith("adding") for line in lines)))]
            gone = {d.id: own_words(d, ever) for d in ever if d.id not in live_docs}
            assert bool(gone) == (mode == "update"), where
            for doc, mine in gone.items():
                hits = coll.retrieve(" ".join(sorted(mine)), "raptor-collapsed", k=20).hits
                assert hits and not {h.document_id for h in hits} & set(gone), f"{doc}: {where}"
            assert_not_in_tree(tree, gone, set())
            assert_not_retrieved(engine, gone)


# -- 6. strategies --------------------------------------------------------------------------------------------
def test_collapsed_budget_and_layers(shared: Engine) -> None:
    coll = shared.collection("c")
    query = "marketing campaign advertising posters slogan"
    totals = []
    for budget in (40, 150, 600):
        result = coll.retrieve(query, "raptor-collapsed", k=200, params={"budget": budget})
        tokens = [h.chunk.token_count for h in result.hits]
        assert tokens and sum(tokens[:-1]) < budget, (budget, tokens)
        assert f"of {budget} budget tokens" in " ".join(result.explanation.notes)
        totals.append(sum(tokens))
    assert totals[0] < totals[1] < totals[2]
    big = coll.retrieve(query, "raptor-collapsed", k=200, params={"budget": 600}).hits
    assert {h.document_id for h in big[:3]} == {"meeting-campaign"}
    assert len({h.chunk.id for h in big}) == len(big), "the same chunk twice"
    reached = [h for h in big if h.node is not None]
    assert reached, "no summary was expanded"
    tree = coll.tree().get()
    assert tree is not None
    for h, row in zip(big, row_of(shared, big), strict=True):
        if h.node is not None:
            node = tree.nodes[h.node.id]
            assert row in node.leaves and h.node.layer == node.layer and h.node.kind == node.kind
            assert h.node.summary == node.text and h.node.leaves == len(node.leaves)
    capped = coll.retrieve(query, "raptor-collapsed", k=200, params={"budget": 600, "max_layer": 1}).hits
    assert capped and all(h.node is None or h.node.layer <= 1 for h in capped)
    as_text = coll.retrieve(query, "raptor-collapsed", k=200, params={"budget": "600", "max_layer": "none"})
    assert [h.chunk.id for h in as_text.hits] == [h.chunk.id for h in big]
    assert len(coll.retrieve(query, "raptor-collapsed", k=2, params={"budget": 5000}).hits) == 2


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_filters_hold_for_leaves_and_summaries(shared: Engine, strategy: str) -> None:
    coll = shared.collection("c")
    snap = shared.store.snapshot("c")
    topic_of = {int(r): str(m.get("topic")) for r, m in zip(snap.row_ids.tolist(), snap.metadata, strict=True)}
    tree = coll.tree().get()
    assert tree is not None
    cases = [
        ("marketing campaign advertising budget", Condition("topic", Op.EQ, "finance"), {"finance"}),
        ("crash rate bugs in the release", Condition("topic", Op.EQ, "software"), {"software"}),
        ("planets and galaxies", Condition("topic", Op.IN, ["cooking", "gardening"]), {"cooking", "gardening"}),
    ]
    through_nodes = 0
    for query, condition, allowed in cases:
        hits = coll.retrieve(query, strategy, k=30, filters=condition).hits
        assert hits, (strategy, query)
        assert {h.metadata["topic"] for h in hits} <= allowed
        for h, row in zip(hits, row_of(shared, hits), strict=True):
            assert topic_of[row] in allowed
            if h.node is not None:
                through_nodes += 1
                leaves = tree.nodes[h.node.id].leaves
                assert {topic_of[r] for r in leaves} <= allowed, f"{strategy}: node {h.node.id} spans other topics"
    assert through_nodes, f"{strategy}: no hit came through a summary node"


def test_traversal_and_doc_summary(shared: Engine) -> None:
    coll = shared.collection("c")
    tree = coll.tree().get()
    assert tree is not None
    query = "crash rate on Android and bugs before the release"
    hits = coll.retrieve(query, "raptor-traversal", k=10).hits
    assert hits and hits[0].document_id == "meeting-release"
    for h, row in zip(hits, row_of(shared, hits), strict=True):
        assert h.node is not None and row in tree.nodes[h.node.id].leaves
    small = coll.retrieve(query, "raptor-traversal", k=50, params={"budget": 100, "top_k": 1, "depth": 1}).hits
    tokens = [h.chunk.token_count for h in small]
    assert small and sum(tokens[:-1]) < 100
    result = coll.retrieve(query, "doc-summary", k=50, params={"documents": 2, "chunks_per_document": 2})
    docs = [h.document_id for h in result.hits]
    assert docs and docs[0] == "meeting-release"
    assert len(set(docs)) <= 2 and all(docs.count(d) <= 2 for d in docs)
    assert all(h.node is not None and h.node.kind == "document" for h in result.hits)
    assert docs == sorted(docs, key=docs.index), "doc-summary returns document by document"


@pytest.mark.parametrize(
    ("strategy", "params", "message"),
    [
        ("raptor-collapsed", {"bogus": 1}, "has no parameter 'bogus' (it takes: "),
        ("raptor-collapsed", {"budget": "lots"}, "parameter 'budget' takes int, not 'lots'"),
        ("raptor-collapsed", {"budget": 2.5}, "parameter 'budget' takes int"),
        ("raptor-collapsed", {"budget": 0}, "budget must be positive"),
        ("raptor-traversal", {"top_k": 0}, "must be positive"),
        ("raptor-traversal", {"depth": 0}, "depth must be at least 1"),
        ("doc-summary", {"documents": -1}, "values must be positive"),
        ("doc-summary", {"budget": 10, "top_k": 3}, "has no parameter 'top_k'"),
        ("hybrid", {"budget": 10}, "has no parameter 'budget' (it takes: none)"),
        ("raptor-collapsed", {"candidates": 0}, "candidates must be positive"),
        ("raptor-collapsed", {"max_layer": -1}, "max_layer must be at least 1"),
        ("raptor-collapsed", {"alpha": 7.5}, "alpha must be between 0 and 1"),
        ("doc-summary", {"alpha": -1}, "alpha must be between 0 and 1"),
    ],
)
def test_bad_params_are_refused(shared: Engine, strategy: str, params: dict[str, object], message: str) -> None:
    with pytest.raises(WaypostError) as err:
        shared.collection("c").retrieve("revenue", strategy, params=params)
    assert message in str(err.value) and repr(strategy) in str(err.value)
    if "it takes: " in message and strategy != "hybrid":  # the error lists what the strategy does take
        assert "budget" in str(err.value).split("it takes: ")[1]


# -- 7. CLI ---------------------------------------------------------------------------------------------------
def test_cli(tmp_path: Path, minilm: Embedder, cli: Cli) -> None:
    path = tmp_path / "cli"
    with open_engine(path, minilm) as engine:
        coll = engine.collection("c", create=True)
        coll.add([meeting("budget", 20), meeting("release", 20), *(note("cooking", i) for i in range(4))])
        generation = engine.store.generation("c")
        assert not coll.tree().exists()
    where = ("--store", str(path), "-c", "c")
    listing, build = cli("strategies"), cli("tree", "build", *where)
    assert listing.exit_code == 0, listing.stderr
    described = {line.split("  ", 1)[0]: line for line in listing.stdout.splitlines() if "  " in line}
    for strategy, fragments in {
        "raptor-collapsed": ["budget: int = 2000", "max_layer: int = None", "candidates: int = 400"],
        "raptor-traversal": ["budget: int = 2000", "top_k: int = 3", "depth: int = None"],
        "doc-summary": ["documents: int = 10", "chunks_per_document: int = 3", "budget: int = 2000"],
        "hybrid": ["(no parameters)"],
    }.items():
        assert all(f in described.get(strategy, "") for f in fragments), listing.stdout
    assert build.exit_code == 0, build.stderr
    assert "built True" in build.stdout and f"generation {generation}" in build.stdout, build.stdout
    assert "problems []" in build.stdout and "layers {1:" in build.stdout, build.stdout
    status = cli("tree", "status", *where, "--json")
    show = cli("tree", "show", *where, "--depth", "4")
    query = cli("query", "quarterly revenue and payroll", *where, "--strategy", "raptor-collapsed",
                "--param", "budget=100", "-k", "50", "--json")  # fmt: skip
    assert status.exit_code == 0, status.stderr
    data = json.loads(status.stdout)
    assert data["built"] and data["generation"] == data["store_generation"] == generation
    assert data["problems"] == [] and data["documents"] == 6 and data["nodes"] == sum(data["layers"].values())
    assert show.exit_code == 0, show.stderr
    for doc in ("meeting-budget", "meeting-release", "cooking-0"):
        assert re.search(rf"#\d+ L\d+ document {doc} \(\d+ chunks\): \S", show.stdout), show.stdout
    assert re.search(r"#\d+ L1 run meeting-budget \(3 chunks\)", show.stdout), show.stdout
    assert query.exit_code == 0, query.stderr
    hits = json.loads(query.stdout)["hits"]
    assert hits and hits[0]["document_id"] == "meeting-budget" and hits[0]["strategy"] == "raptor-collapsed"
    tokens = [count_tokens(h["text"]) for h in hits]
    assert sum(tokens[:-1]) < 100 and "of 100 budget tokens" in " ".join(json.loads(query.stdout)["explain"]["notes"])
    lite, wrong = cli("tree", "rebuild", *where, "--shape", "lite"), cli("tree", "build", *where, "--shape", "flat")
    assert lite.exit_code == 0, lite.stderr
    assert "shape lite" in lite.stdout and re.search(r"layers \{1: \d+\}\n", lite.stdout), lite.stdout
    assert wrong.exit_code == 2 and "must be full or lite" in wrong.stderr, wrong.stderr
