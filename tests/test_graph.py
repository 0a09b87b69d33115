"""The knowledge graph over a real collection (real spaCy model, real MiniLM, real SQLite): built with chunk
provenance, reloaded as it was, kept current through adds and deletes from the change log (a deleted document
leaves no entity, mention, relation, description sentence or community report behind, in memory or in the
store file, and hipporag never returns it), sound after kill -9 in the middle of a save, and driven from the CLI."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.cli_runner import Cli
from waypost.base import Embedder
from waypost.engine import Engine, EngineConfig
from waypost.graph.graph import GraphConfig, KnowledgeGraph, Touched
from waypost.types import Document

ROOT = Path(__file__).resolve().parents[1]
CHUNK_TOKENS = 40
# small communities: the biggest ones split one level down, so both levels are exercised
GRAPH = GraphConfig(community_max_size=8)

# -- corpus ---------------------------------------------------------------------------------------------------
# Ten short biographies (people, places, organisations); "okonkwo" is invented, names things no other document
# names (the delete test's victim) and shares Bletchley Park with "turing".
DOCS: dict[str, tuple[str, str]] = {
    "curie": (
        "Marie Curie",
        "Marie Curie was a physicist and chemist at the University of Paris. She shared the Nobel Prize in Physics "
        "with Pierre Curie and Henri Becquerel. Marie Curie was born in Warsaw and later founded the Radium "
        "Institute in Paris.",
    ),
    "pierre": (
        "Pierre Curie",
        "Pierre Curie taught physics at the University of Paris. He married Marie Curie in Paris and studied "
        "magnetism and piezoelectricity with his brother Jacques Curie.",
    ),
    "einstein": (
        "Albert Einstein",
        "Albert Einstein developed the theory of relativity while he worked at the patent office in Bern. He later "
        "joined Princeton University in New Jersey and corresponded with Niels Bohr.",
    ),
    "bohr": (
        "Niels Bohr",
        "Niels Bohr founded the Institute for Theoretical Physics in Copenhagen. Bohr debated quantum mechanics "
        "with Albert Einstein and advised Werner Heisenberg in Copenhagen.",
    ),
    "lovelace": (
        "Ada Lovelace",
        "Ada Lovelace worked with Charles Babbage in London on the Analytical Engine. Lovelace wrote the first "
        "published algorithm for the machine.",
    ),
    "turing": (
        "Alan Turing",
        "Alan Turing broke German ciphers at Bletchley Park during the war. Turing later worked at the University "
        "of Manchester on early computers.",
    ),
    "franklin": (
        "Rosalind Franklin",
        "Rosalind Franklin photographed DNA fibres at King's College London. Her image helped James Watson and "
        "Francis Crick in Cambridge.",
    ),
    "hopper": (
        "Grace Hopper",
        "Grace Hopper served in the United States Navy and programmed the Harvard Mark I at Harvard University. "
        "Hopper later designed the COBOL language.",
    ),
    "meitner": (
        "Lise Meitner",
        "Lise Meitner worked with Otto Hahn at the Kaiser Wilhelm Institute in Berlin. Meitner fled to Stockholm "
        "and explained nuclear fission with Otto Frisch.",
    ),
    "okonkwo": (
        "Zephyrine Okonkwo",
        "Zephyrine Okonkwo founded the Tidewater Cipher Guild in Lagos. Okonkwo restored the Bombe machines of "
        "Bletchley Park with Quillon Marchetti.",
    ),
}
WU = Document(
    id="wu",
    title="Chien-Shiung Wu",
    text="Chien-Shiung Wu measured beta decay at Columbia University in New York. Wu corresponded with Lise Meitner.",
)
VICTIM = "okonkwo"
VICTIM_WORDS = ("Okonkwo", "Zephyrine", "Tidewater", "Marchetti", "Lagos", "Bombe")  # only the victim says these


def corpus() -> list[Document]:
    return [Document(id=k, text=text, title=title) for k, (title, text) in DOCS.items()]


def config(**changes: Any) -> EngineConfig:
    return EngineConfig(chunk_tokens=CHUNK_TOKENS, background_index_work=False, graph=GRAPH, **changes)


@contextmanager
def open_engine(path: Path, minilm: Embedder) -> Iterator[Engine]:
    engine = Engine(path, config())
    engine.register_embedder(minilm)
    try:
        yield engine
    finally:
        engine.close()


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory, minilm: Embedder) -> Path:
    """A store holding the corpus and no graph."""
    path = tmp_path_factory.mktemp("graph") / "plain"
    with open_engine(path, minilm) as engine:
        engine.collection("c", create=True).add(corpus())
    return path


@pytest.fixture(scope="module")
def built(plain: Path, tmp_path_factory: pytest.TempPathFactory, minilm: Embedder) -> Path:
    """The same store with its graph built (tests that change it work on a copy)."""
    path = tmp_path_factory.mktemp("graph") / "built"
    shutil.copytree(plain, path)
    with open_engine(path, minilm) as engine:
        live = engine.collection("c").graph()
        assert not live.exists()
        assert live.get() is not None
    return path


def copy_of(store: Path, tmp_path: Path, name: str = "copy") -> Path:
    shutil.copytree(store, tmp_path / name)
    return tmp_path / name


# -- checks ---------------------------------------------------------------------------------------------------
def live_rows(engine: Engine) -> set[int]:
    return set(engine.store.snapshot("c").row_ids.tolist())


def rows_of(engine: Engine, doc: str) -> set[int]:
    snapshot = engine.store.snapshot("c")
    return {r for r, d in zip(snapshot.row_ids.tolist(), snapshot.document_ids, strict=True) if d == doc}


def signature(graph: KnowledgeGraph) -> dict[str, Any]:
    """Everything a graph holds, comparable across a save and a load (vectors aside)."""
    return {
        "entities": {
            e.id: (e.key, e.name, e.label, e.description, dict(e.rows), dict(e.sentences))
            for e in graph.entities.values()
        },
        "by_key": dict(graph.by_key),
        "rows": {row: sorted(ids) for row, ids in graph.row_entities.items() if ids},
        "titles": dict(graph.row_title),
        "relations": {r.id: (r.source, r.target, r.label, r.row, r.weight) for r in graph.relations.values()},
        "synonyms": {e: dict(o) for e, o in graph.synonyms.items() if o},
        "communities": {
            c.id: (c.level, c.parent, sorted(c.members), c.title, c.report, sorted(c.rows))
            for c in graph.communities.values()
        },
        "member_of": {e: sorted(cs) for e, cs in graph.member_of.items() if cs},
        "counters": (graph.generation, graph.next_entity, graph.next_relation, graph.next_community,
                     graph.entities_at_leiden, graph.changed_since_leiden),
    }  # fmt: skip


def stored(engine: Engine) -> KnowledgeGraph:
    loaded = engine.backend.graphs.load("c")
    assert loaded is not None
    return loaded[0]


def assert_sound(engine: Engine, graph: KnowledgeGraph) -> None:
    """The graph is current, cites only live chunk rows, its indexes agree, and the store holds exactly it."""
    rows = live_rows(engine)
    assert graph.generation == engine.store.generation("c")
    assert {r for r, ids in graph.row_entities.items() if ids} == rows, "a live chunk is missing or a dead one cited"
    assert set(graph.row_relations) <= rows and set(graph.row_title) <= rows
    for e in graph.entities.values():
        assert e.rows and set(e.rows) <= rows, f"{e.name} cites dead rows or none"
        assert set(e.sentences) <= set(e.rows)
        assert all(e.id in graph.row_entities[r] for r in e.rows) and graph.by_key[e.key] == e.id
    for row, ids in graph.row_entities.items():
        assert all(row in graph.entities[i].rows for i in ids)
    for r in graph.relations.values():
        assert r.row in rows and r.source in graph.entities and r.target in graph.entities
        assert r.id in graph.row_relations[r.row]
        assert r.row in graph.entities[r.source].rows and r.row in graph.entities[r.target].rows
    for e, others in graph.synonyms.items():
        assert e in graph.entities and all(o in graph.entities and graph.synonyms[o][e] == s for o, s in others.items())
    for c in graph.communities.values():
        assert len(c.members) >= 2 and all(m in graph.entities for m in c.members), f"community {c.id}"
        assert c.rows and set(c.rows) <= rows, f"community {c.id} cites dead rows"
        assert set(c.rows) <= {r for m in c.members for r in graph.entities[m].rows}
        assert c.parent == -1 or c.parent in graph.communities
        assert all(c.id in graph.member_of[m] for m in c.members)
    for e, cs in graph.member_of.items():
        assert all(e in graph.communities[c].members for c in cs)
    assert_store_cites_only(engine, rows)
    assert signature(stored(engine)) == signature(graph), "the store does not hold the graph in memory"


def graph_tables(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    conn = sqlite3.connect(path / "store.sqlite")
    try:
        return {
            table: sorted(conn.execute(f"SELECT * FROM {table} WHERE collection='c'").fetchall(), key=repr)
            for table in ("graphs", "graph_entities", "graph_mentions", "graph_relations", "graph_synonyms",
                          "graph_communities")
        }  # fmt: skip
    finally:
        conn.close()


def assert_store_cites_only(engine: Engine, rows: set[int]) -> None:
    """Straight from the SQLite file: every row a mention, relation or community report cites is live."""
    tables = graph_tables(engine.path)
    cited = {r[1] for r in tables["graph_mentions"]} | {r[5] for r in tables["graph_relations"]}
    for c in tables["graph_communities"]:
        cited |= set(np.frombuffer(c[7], dtype=np.int64).tolist())
    assert cited <= rows, f"the store cites dead rows {sorted(cited - rows)}"
    entities = {r[1] for r in tables["graph_entities"]}
    assert {r[2] for r in tables["graph_mentions"]} <= entities
    assert {r[2] for r in tables["graph_relations"]} | {r[3] for r in tables["graph_relations"]} <= entities
    assert {r[1] for r in tables["graph_synonyms"]} | {r[2] for r in tables["graph_synonyms"]} <= entities


# -- 1. build and reload --------------------------------------------------------------------------------------
def test_build_cites_only_live_rows(built: Path, minilm: Embedder) -> None:
    with open_engine(built, minilm) as engine:
        live = engine.collection("c").graph()
        graph = live.get(build=False)
        assert graph is not None
        assert_sound(engine, graph)
        status = live.status()
        assert status.built and status.generation == status.store_generation == engine.store.generation("c")
        assert status.entities == len(graph.entities) > 40 and status.named_entities > 30
        assert status.entities > status.named_entities  # noun phrases too
        assert status.relations > 100 and status.mentions > status.entities and status.chunks == len(live_rows(engine))
        assert status.communities.get(0, 0) >= 5 and status.communities.get(1, 0) >= 1, status.communities
        assert set(status.build_seconds) >= {"extract", "entities", "communities", "reports", "save", "total"}
        assert status.size_mb > 0 and status.extractor.startswith("spacy:") and status.reporter == "extractive"
        # the extraction reads like the corpus: people, places and organisations, with their sentences
        labels = {name: graph.entity_named(name) for name in ("Otto Hahn", "Berlin", "Princeton University")}
        assert [e.label if e else None for e in labels.values()] == ["PERSON", "GPE", "ORG"]
        hahn = labels["Otto Hahn"]
        assert hahn is not None and "Kaiser Wilhelm Institute" in hahn.description
        assert rows_of(engine, "meitner") == set(hahn.rows)
        partners = {graph.entities[o].name for o in graph.neighbours(hahn.id)}
        assert {"Lise Meitner", "Berlin"} <= partners
        title = graph.entity_named("ada lovelace")
        assert title is not None and title.label == "title" and graph.row_title[min(title.rows)] == title.id


def test_reload_gives_the_same_graph(built: Path, minilm: Embedder) -> None:
    with open_engine(built, minilm) as first:
        live = first.collection("c").graph()
        graph = live.get(build=False)
        assert graph is not None
        before, status = signature(graph), live.status().to_dict()
        record = live.graphs.record("c")
    with open_engine(built, minilm) as second:  # a new engine: loaded from the store, not rebuilt
        live = second.collection("c").graph()
        again = live.get(build=False)
        assert again is not None and again is not graph
        assert signature(again) == before
        assert live.status().to_dict() == status
        assert live.graphs.record("c") == record, "reloading rewrote the stored graph"
        named = [e for e in again.entities.values() if e.kind == "named"]
        assert named and all(e.vector is not None and e.vector.shape == (384,) for e in named)


# -- 2. incremental add ---------------------------------------------------------------------------------------
def test_add_updates_through_the_change_log(built: Path, tmp_path: Path, minilm: Embedder) -> None:
    path = copy_of(built, tmp_path)
    with open_engine(path, minilm) as engine:
        coll = engine.collection("c")
        live = coll.graph()
        graph = live.get()
        assert graph is not None
        record = live.graphs.record("c")
        assert record is not None
        entities_before, meitner = set(graph.entities), graph.entity_named("Lise Meitner")
        assert meitner is not None and graph.entity_named("Chien-Shiung Wu") is None
        meitner_rows = set(meitner.rows)
        coll.add([WU])
        assert live.get() is graph, "the graph was replaced instead of updated"
        new_rows = rows_of(engine, "wu")
        assert len(new_rows) == 1
        update = live.last_update
        assert update["documents"] == 1 and update["chunks_added"] == 1 and update["chunks_removed"] == 0
        assert update["leiden_rerun"] is False and update["entities_dropped"] == 0
        after = live.graphs.record("c")
        assert after is not None and after.built_at == record.built_at and after.updated_at > record.updated_at
        wu = graph.entity_named("chien-shiung wu")
        assert wu is not None and set(wu.rows) == new_rows and "beta decay" in wu.description
        columbia = graph.entity_named("Columbia University")
        assert columbia is not None and columbia.id not in entities_before and set(columbia.rows) == new_rows
        assert set(meitner.rows) == meitner_rows | new_rows, "a known entity did not gain the new mention"
        assert "Wu corresponded with Lise Meitner." in meitner.description
        assert any(new_rows & set(c.rows) for c in graph.communities.values()), "no community reports the new chunk"
        assert_sound(engine, graph)
        status = live.status()
        assert status.generation == status.store_generation and 0 < status.drift < GRAPH.drift_threshold
    with open_engine(path, minilm) as engine:  # what was saved is what a new process reads
        again = engine.collection("c").graph().get(build=False)
        assert again is not None and signature(again) == signature(graph)


# -- 3. delete (the acceptance test) --------------------------------------------------------------------------
def test_a_catch_up_waits_for_the_queries_reading_the_graph(built: Path, tmp_path: Path, minilm: Embedder) -> None:
    path = copy_of(built, tmp_path)
    with open_engine(path, minilm) as engine:
        coll = engine.collection("c")
        live = coll.graph()
        live.get()
        with live.reading() as graph:
            assert graph is not None
            before = signature(graph)
            coll.add([WU])
            writer = threading.Thread(target=live.get)
            writer.start()
            writer.join(timeout=3.0)
            assert writer.is_alive(), "the catch-up did not wait for the reading query"
            assert signature(graph) == before, "the graph changed under a reading query"
            assert live.get() is graph  # inside the read, the graph is served as it is
        writer.join(timeout=60.0)
        assert not writer.is_alive()
        caught_up = live.get()
        assert caught_up is not None and caught_up.entity_named("Chien-Shiung Wu") is not None
        hits = coll.retrieve("Chien-Shiung Wu experiment", "hipporag", k=5).hits
        assert "wu" in {h.document_id for h in hits}


def test_delete_leaves_nothing_behind(built: Path, tmp_path: Path, minilm: Embedder) -> None:
    path = copy_of(built, tmp_path)
    with open_engine(path, minilm) as engine:
        coll = engine.collection("c")
        live = coll.graph()
        graph = live.get()
        assert graph is not None
        gone = rows_of(engine, VICTIM)
        only = {e.id: e.key for e in graph.entities.values() if set(e.rows) <= gone}
        touched = {e.id for e in graph.entities.values() if gone & set(e.rows)} - set(only)
        sentences = {s for e in graph.entities.values() for r, s in e.sentences.items() if r in gone}
        assert gone and sentences
        assert {"zephyrine okonkwo", "tidewater cipher guild", "quillon marchetti"} <= set(only.values())
        bletchley = graph.entity_named("Bletchley Park")
        assert bletchley is not None and bletchley.id in touched
        assert "Okonkwo restored the Bombe" in bletchley.description  # so the check below means something
        assert any(gone & set(c.rows) for c in graph.communities.values())
        assert any("Okonkwo" in c.report for c in graph.communities.values())
        query = "Who restored the Bombe machines with Quillon Marchetti?"
        assert VICTIM in {h.document_id for h in coll.retrieve(query, "hipporag", k=3).hits}

        assert coll.delete([VICTIM]) == 1
        assert live.get() is graph
        assert live.last_update["chunks_removed"] == len(gone) and live.last_update["chunks_added"] == 0
        assert live.last_update["entities_dropped"] >= len(only)

        # in memory
        assert not set(only) & set(graph.entities) and not set(only.values()) & set(graph.by_key)
        assert not gone & set(graph.row_entities) and not gone & set(graph.row_relations)
        for e in graph.entities.values():
            assert not gone & set(e.rows) and not any(s in e.description for s in sentences), e.name
        for e in touched:
            assert e in graph.entities and graph.entities[e].description, "a surviving entity lost its description"
        assert "Okonkwo" not in bletchley.description and set(bletchley.rows) == rows_of(engine, "turing")
        for r in graph.relations.values():
            assert r.row not in gone and r.source not in only and r.target not in only
        for c in graph.communities.values():
            assert not gone & set(c.rows) and not set(only) & set(c.members), f"community {c.id}"
            assert not any(s in c.report for s in sentences) and not any(w in c.report for w in VICTIM_WORDS)
        assert not set(only) & set(graph.synonyms) and not set(only) & set(graph.member_of)

        # in the store file
        tables = graph_tables(path)
        assert not [m for m in tables["graph_mentions"] if m[1] in gone or m[2] in only]
        assert not [r for r in tables["graph_relations"] if r[5] in gone or {r[2], r[3]} & set(only)]
        assert not [s for s in tables["graph_synonyms"] if {s[1], s[2]} & set(only)]
        assert not [e for e in tables["graph_entities"] if e[1] in only or e[2] in only.values()]
        for c in tables["graph_communities"]:
            assert not gone & set(np.frombuffer(c[7], dtype=np.int64).tolist()), f"community {c[1]} cites {gone}"
            assert not set(only) & set(np.frombuffer(c[4], dtype=np.int64).tolist())
        for table, rows in tables.items():
            text = json.dumps([[v for v in row if isinstance(v, str)] for row in rows])
            assert not [w for w in VICTIM_WORDS if w in text], f"{table} still names the deleted document"
            assert not [s for s in sentences if s in text], f"{table} still quotes the deleted document"
        assert_sound(engine, graph)

        # hipporag never returns it, asked in its own words (k above the collection's size: every chunk comes back)
        for q in [query, *sentences, " ".join(VICTIM_WORDS), "Bletchley Park"]:
            hits = coll.retrieve(q, "hipporag", k=50).hits
            assert hits and VICTIM not in {h.document_id for h in hits}, q
    with open_engine(path, minilm) as engine:  # and a new process reads the same
        again = engine.collection("c").graph().get(build=False)
        assert again is not None and signature(again) == signature(graph)
        assert_sound(engine, again)


def test_replace_and_delete_in_one_catch_up(built: Path, tmp_path: Path, minilm: Embedder) -> None:
    """Several changes between two uses (a document replaced, one deleted, one added) apply as one step."""
    path = copy_of(built, tmp_path)
    with open_engine(path, minilm) as engine:
        coll = engine.collection("c")
        live = coll.graph()
        graph = live.get()
        assert graph is not None
        old_turing = rows_of(engine, "turing")
        coll.add([Document("turing", "Alan Turing studied morphogenesis at the University of Manchester.",
                           title="Alan Turing")])  # fmt: skip
        coll.delete(["franklin"])
        coll.add([WU])
        assert live.get() is graph
        assert live.last_update["documents"] == 3
        bletchley, manchester = graph.entity_named("Bletchley Park"), graph.entity_named("University of Manchester")
        assert bletchley is not None and set(bletchley.rows) == rows_of(engine, VICTIM)  # the new turing does not
        assert manchester is not None and set(manchester.rows) == rows_of(engine, "turing") != old_turing
        assert graph.entity_named("Francis Crick") is None and graph.entity_named("Columbia University") is not None
        assert not old_turing & set(graph.row_entities)
        assert_sound(engine, graph)


def test_large_change_runs_leiden_again(built: Path, tmp_path: Path, minilm: Embedder) -> None:
    """Past the drift threshold the communities are detected anew (and replaced whole in the store)."""
    path = copy_of(built, tmp_path)
    with open_engine(path, minilm) as engine:
        coll = engine.collection("c")
        live = coll.graph()
        graph = live.get()
        assert graph is not None
        before = set(graph.communities)
        coll.delete(["curie", "pierre", "einstein"])
        assert live.get() is graph
        assert live.last_update["leiden_rerun"] is True and live.last_update["entities_dropped"] > 0
        assert not before & set(graph.communities), "a re-run keeps no community of the last one"
        assert graph.changed_since_leiden == 0 and graph.entities_at_leiden == len(graph.entities)
        assert graph.entity_named("Marie Curie") is None and graph.entity_named("Paris") is None
        assert live.status().drift == 0
        assert_sound(engine, graph)


# -- 4. atomic persistence ------------------------------------------------------------------------------------
def test_a_stale_save_writes_nothing(built: Path, tmp_path: Path, minilm: Embedder) -> None:
    path = copy_of(built, tmp_path)
    with open_engine(path, minilm) as engine:
        live = engine.collection("c").graph()
        graph = live.get()
        assert graph is not None
        before = graph_tables(path)
        victim = graph.entity_named("Otto Hahn")
        assert victim is not None
        touched = Touched(
            entities=set(list(graph.entities)[:5]), dropped_entities={victim.id}, removed_rows=set(victim.rows),
            added_rows=set(victim.rows), communities=set(graph.communities),
        )  # fmt: skip
        base = graph.generation
        for stale in (base - 1, base + 1):
            assert not live.graphs.save_changes("c", graph, stale, touched, set(graph.communities), {0}, True)
            assert graph_tables(path) == before, f"a save based on generation {stale} wrote to the store"
        assert live.graphs.save_changes("c", graph, base, Touched(), set(), set(), False)  # the right base writes


KILLER = textwrap.dedent(
    """
    import os, signal, sys
    from tests.test_graph import WU, VICTIM, config
    from waypost.engine import Engine
    from waypost.store.sqlite_graphs import SQLiteGraphRepository as GraphStore

    original = GraphStore._write_rows

    def write_rows_then_die(self, conn, *args):
        original(self, conn, *args)  # inside the save's transaction: the old graph's rows are already gone
        print("dying", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

    engine = Engine(sys.argv[1], config())
    coll = engine.collection("c")
    live = coll.graph()
    live.get()
    GraphStore._write_rows = write_rows_then_die
    if sys.argv[2] == "rebuild":
        live.rebuild()
    else:
        coll.add([WU])
        coll.delete([VICTIM])
        live.get()
    print("survived", flush=True)
    """
)


def killed(path: Path, mode: str) -> subprocess.Popen[str]:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])}
    return subprocess.Popen(
        [sys.executable, "-c", KILLER, str(path), mode], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


@pytest.fixture(scope="module")
def after_kills(built: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Copies of the built store whose writer was killed -9 inside a save's transaction: a rebuild's, an update's
    (both at once: each process loads its models)."""
    root = tmp_path_factory.mktemp("kills")
    paths = {mode: copy_of(built, root, mode) for mode in ("rebuild", "update")}
    procs = {mode: killed(path, mode) for mode, path in paths.items()}
    for mode, proc in procs.items():
        out, errors = proc.communicate(timeout=300)
        assert proc.returncode == -signal.SIGKILL and "dying" in out and "survived" not in out, (mode, out, errors)
    return paths


@pytest.mark.slow
def test_kill_9_in_the_middle_of_a_save(built: Path, after_kills: dict[str, Path], minilm: Embedder) -> None:
    """The killed save leaves the old graph whole; the next process loads it and catches up from the change log."""
    with open_engine(built, minilm) as engine:
        graph = engine.collection("c").graph().get(build=False)
        assert graph is not None
        old, old_tables = signature(graph), graph_tables(built)
    for mode, path in after_kills.items():
        with open_engine(path, minilm) as engine:
            assert graph_tables(path) == old_tables, f"{mode}: the killed save left part of itself in the store"
            assert signature(stored(engine)) == old
            live = engine.collection("c").graph()
            status = live.status()  # what is stored, before any catch-up
            assert status.built and status.generation == old["counters"][0]
            if mode == "update":
                assert status.store_generation > status.generation
            graph = live.get(build=False)
            assert graph is not None
            assert_sound(engine, graph)
            assert (graph.entity_named("Zephyrine Okonkwo") is None) == (mode == "update")
            assert (graph.entity_named("Chien-Shiung Wu") is not None) == (mode == "update")


@pytest.mark.slow
def test_a_killed_rebuild_does_not_hold_the_change_log(after_kills: dict[str, Path], minilm: Embedder) -> None:
    with open_engine(after_kills["rebuild"], minilm) as engine:
        engine.collection("c").graph().get(build=False)
        held = [c for c in engine.store.consumers("c") if c.startswith("graph-build")]
        assert held == [], f"a killed rebuild still holds the change log: {held}"


def test_an_update_after_another_process_rebuilt_at_the_same_generation(
    built: Path, tmp_path: Path, minilm: Embedder
) -> None:
    path = copy_of(built, tmp_path)
    with open_engine(path, minilm) as server, open_engine(path, minilm) as cli:
        coll = server.collection("c")
        live = coll.graph()
        live.get()
        coll.delete(["franklin"])
        mine = live.get()  # caught up incrementally: the dropped entities leave gaps in the ids
        theirs = cli.collection("c").graph().rebuild()  # e.g. waypost graph build --rebuild, at the same generation
        assert mine is not None and theirs.generation == mine.generation
        assert sorted(theirs.entities) != sorted(mine.entities)
        coll.add([WU])
        now = live.get()
        assert now is not None
        assert signature(stored(server)) == signature(now), "the store holds neither graph"
        assert_sound(server, stored(server))


# -- 5. CLI ---------------------------------------------------------------------------------------------------
def test_cli_build_and_status(plain: Path, built: Path, tmp_path: Path, cli: Cli, minilm: Embedder) -> None:
    path = copy_of(plain, tmp_path)
    where = ("--store", str(path), "-c", "c")
    none = cli("graph", "status", *where)
    assert none.exit_code == 0 and "has no graph" in none.stdout and "waypost graph build" in none.stdout
    missing = cli("graph", "show", "Otto Hahn", *where)
    assert missing.exit_code == 2 and "has no graph" in missing.stderr
    bad = cli("graph", "build", *where, "--extractor", "regex")
    assert bad.exit_code == 2 and "--extractor must be one of spacy, llm" in bad.stderr
    no_llm = cli("graph", "build", *where, "--extractor", "llm")
    assert no_llm.exit_code == 2 and "needs an LLM: pass --llm" in no_llm.stderr
    bad = cli("graph", "build", *where, "--reports", "abstract")
    assert bad.exit_code == 2 and "--reports must be one of extractive, llm" in bad.stderr
    no_llm = cli("graph", "build", *where, "--reports", "llm")
    assert no_llm.exit_code == 2 and "--reports llm needs an LLM: pass --llm" in no_llm.stderr

    build = cli("graph", "build", *where, "--json")
    assert build.exit_code == 0, build.stderr
    data = json.loads(build.stdout)
    with open_engine(built, minilm) as engine:
        expected = engine.collection("c").graph().status().to_dict()
    for key in ("entities", "named_entities", "relations", "mentions", "synonyms", "chunks", "extractor"):
        assert data[key] == expected[key], key
    assert data["built"] and data["generation"] == data["store_generation"] and data["communities"]["0"] > 0
    assert data["build_seconds"]["total"] > 0 and data["size_mb"] > 0 and data["built_at"] == data["updated_at"]

    status = cli("graph", "status", *where)
    assert status.exit_code == 0, status.stderr
    text = status.stdout
    assert f"{data['entities']} ({data['named_entities']} named" in text and "phrases)" in text
    assert "(current)" in text and "level 0:" in text and "drift" in text and "extract" in text
    as_json = json.loads(cli("graph", "status", *where, "--json").stdout)
    assert {k: v for k, v in as_json.items() if k != "last_update"} == {
        k: v for k, v in data.items() if k != "last_update"
    }

    rebuilt = cli("graph", "build", *where, "--rebuild", "--json")
    assert rebuilt.exit_code == 0, rebuilt.stderr
    again = json.loads(rebuilt.stdout)
    assert again["built_at"] > data["built_at"] and again["entities"] == data["entities"]
    updated = cli("graph", "build", *where)  # up to date: nothing to do, the status printed
    assert updated.exit_code == 0 and "(current)" in updated.stdout


def test_cli_show(built: Path, tmp_path: Path, cli: Cli, minilm: Embedder) -> None:
    path = copy_of(built, tmp_path)
    where = ("--store", str(path), "-c", "c")
    show = cli("graph", "show", "otto hahn", *where)
    assert show.exit_code == 0, show.stderr
    text = " ".join(show.stdout.split())
    assert text.startswith("Otto Hahn PERSON (named)")
    assert "mentioned in (1 chunk)" in text and "meitner#0" in text
    assert "Lise Meitner worked with Otto Hahn at the Kaiser Wilhelm Institute in Berlin." in text
    assert "Lise Meitner — worked with — Otto Hahn" in text and "neighbours, 1 hop" in text
    assert "neighbours, 2 hops" not in text and "communities #" in text

    data = json.loads(cli("graph", "show", "Otto Hahn", *where, "--json", "--hops", "2").stdout)
    assert data["entity"]["name"] == "Otto Hahn" and data["entity"]["label"] == "PERSON"
    assert [(m["document_id"], m["chunk_id"]) for m in data["mentions"]] == [("meitner", "meitner#0")]
    assert "Kaiser Wilhelm Institute" in data["mentions"][0]["sentence"]
    rel = next(r for r in data["relations"] if r["other_name"] == "Lise Meitner")
    assert rel["label"] == "worked with" and rel["direction"] == "in" and rel["document_id"] == "meitner"
    near = {n["name"]: n["hops"] for n in data["neighbours"]}
    assert near["Lise Meitner"] == near["Berlin"] == 1 and 2 in near.values()
    assert all(c["title"] for c in data["communities"]) and data["communities"]
    with open_engine(path, minilm) as engine:
        graph = engine.collection("c").graph().get(build=False)
        assert graph is not None
        hahn = graph.entity_named("Otto Hahn")
        assert hahn is not None
        assert {n["id"] for n in data["neighbours"] if n["hops"] == 1} == set(graph.neighbours(hahn.id))
        assert {c["id"] for c in data["communities"]} == set(graph.member_of[hahn.id])

    cid = data["communities"][0]["id"]
    community = cli("graph", "show", "--community", str(cid), *where)
    assert community.exit_code == 0, community.stderr
    assert f"community #{cid}" in community.stdout and "Otto Hahn" in community.stdout
    assert "report" in community.stdout and "sources" in community.stdout and "meitner#0" in community.stdout
    brief = json.loads(cli("graph", "show", "--community", str(cid), *where, "--json").stdout)
    assert "Otto Hahn" in {m["name"] for m in brief["members"]} and brief["community"]["report"]
    assert {s["document_id"] for s in brief["sources"]} == {"meitner"}

    unknown = cli("graph", "show", "Curie", *where)
    assert unknown.exit_code == 2 and "no entity named 'Curie'" in unknown.stderr
    assert "did you mean" in unknown.stderr and "Marie Curie" in unknown.stderr and "Pierre Curie" in unknown.stderr
    typo = cli("graph", "show", "Otto Hanh", *where)
    assert typo.exit_code == 2 and "did you mean: Otto Hahn" in typo.stderr
    nothing = cli("graph", "show", "xyzzy plugh", *where)
    assert nothing.exit_code == 2 and "no entity named" in nothing.stderr and "did you mean" not in nothing.stderr
    no_community = cli("graph", "show", "--community", "9999", *where)
    assert no_community.exit_code == 2 and "no community #9999" in no_community.stderr
    neither = cli("graph", "show", *where)
    assert neither.exit_code == 2 and "give an ENTITY" in neither.stderr
