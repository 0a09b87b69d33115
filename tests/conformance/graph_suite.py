"""The ``GraphRepository`` contract. A backend's test module subclasses ``GraphRepositoryConformance``
and provides a ``graphs`` fixture; every test here then runs against that backend."""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import pytest

from waypost.base import GraphRepository
from waypost.graph.graph import Community, GraphConfig, KnowledgeGraph
from waypost.graph.model import ChunkExtraction, ExtractedEntity, ExtractedRelation

DIM = 4


def embed(names: list[str]) -> np.ndarray:
    """Name vectors that depend on the name only (stored as float16: values kept representable)."""
    out = np.stack([np.random.default_rng(zlib.crc32(n.encode())).normal(size=DIM) for n in names])
    return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float16).astype(np.float32)


def extraction(*names: str, title: str = "") -> ChunkExtraction:
    entities = [ExtractedEntity(n, "PERSON", f"{n} appears here.") for n in names]
    if title:
        entities.append(ExtractedEntity(title, "title", ""))
    return ChunkExtraction(entities, [ExtractedRelation(names[0], names[1], "met")] if len(names) > 1 else [])


def make_graph(generation: int = 2) -> KnowledgeGraph:
    graph = KnowledgeGraph(GraphConfig(synonym_threshold=0.9))
    graph.apply([], [(10, extraction("Ada Lovelace", "Charles Babbage", title="Engines")),
                     (11, extraction("Ada Lovelace", "Mary Somerville")), (12, extraction("Alan Turing"))],
                embed, generation)  # fmt: skip
    members = sorted(graph.entities)
    graph.communities = {
        0: Community(0, 0, -1, members[:2], "Engines", "About engines.", [10, 11], embed(["c0"])[0]),
        1: Community(1, 1, 0, members[:1], "Ada", "About Ada.", [10], None),
    }
    graph.member_of = {m: [c.id for c in graph.communities.values() if m in c.members] for m in members}
    graph.next_community = 2
    return graph


def snapshot(graph: KnowledgeGraph) -> dict[str, Any]:
    """Everything a repository must keep, in comparable form."""
    return {
        "entities": {
            i: (
                e.key,
                e.name,
                e.label,
                e.description,
                dict(e.rows),
                dict(e.sentences),
                None if e.vector is None else np.round(e.vector, 2).tolist(),
            )
            for i, e in graph.entities.items()
        },
        "relations": {i: (r.source, r.target, r.label, r.row, r.weight) for i, r in graph.relations.items()},
        "row_entities": {r: sorted(v) for r, v in graph.row_entities.items() if v},
        "row_relations": {r: sorted(v) for r, v in graph.row_relations.items() if v},
        "row_title": dict(graph.row_title),
        "synonyms": {a: dict(b) for a, b in graph.synonyms.items() if b},
        "communities": {
            i: (
                c.level,
                c.parent,
                c.members,
                c.title,
                c.report,
                c.rows,
                None if c.vector is None else np.round(c.vector, 2).tolist(),
            )
            for i, c in graph.communities.items()
        },
        "counters": (
            graph.generation,
            graph.next_entity,
            graph.next_relation,
            graph.next_community,
            graph.entities_at_leiden,
            graph.changed_since_leiden,
        ),
    }


class GraphRepositoryConformance:
    @pytest.fixture
    def graphs(self) -> GraphRepository:  # pragma: no cover - overridden
        raise NotImplementedError

    def load(self, graphs: GraphRepository, collection: str) -> KnowledgeGraph:
        found = graphs.load(collection)
        assert found is not None
        return found[0]

    def test_a_new_graph_reads_back_whole(self, graphs: GraphRepository) -> None:
        assert graphs.record("c") is None and graphs.load("c") is None
        graph = make_graph()
        graphs.save_new("c", graph, "uid-g2-abc", "spacy:x", "extractive", {"seconds": {"extract": 1.5}})
        assert graph.build_id
        found = graphs.load("c")
        assert found is not None
        back, record = found
        assert (record.collection, record.generation, record.version) == ("c", 2, "uid-g2-abc")
        assert (record.extractor, record.reporter, record.config) == ("spacy:x", "extractive", graph.config)
        assert record.stats == {"seconds": {"extract": 1.5}}
        assert back.build_id == graph.build_id
        assert snapshot(back) == snapshot(graph)
        assert back.entity_named("ada lovelace") is not None  # the name index is rebuilt on load
        counts = graphs.counts("c")
        assert counts["entities"] == len(graph.entities) and counts["relations"] == len(graph.relations)
        assert counts["communities"] == 2 and graphs.size_bytes("c") > 0
        graphs.set_stats("c", {"seconds": {"leiden": 0.5}})
        record2 = graphs.record("c")
        assert record2 is not None and record2.stats == {"seconds": {"leiden": 0.5}}

    def test_an_update_writes_what_it_touched(self, graphs: GraphRepository) -> None:
        graph = make_graph()
        graphs.save_new("c", graph, "v", "e", "r", {})
        touched = graph.apply([11], [(13, extraction("Mary Somerville", "Alan Turing"))], embed, 3)
        dropped = {1}
        del graph.communities[1]
        assert graphs.save_changes("c", graph, 2, touched, {0}, dropped, False)
        back = self.load(graphs, "c")
        assert snapshot(back) == snapshot(graph)
        touched = graph.apply([10], [], embed, 4)  # removes the title's row too
        graph.communities = {5: Community(5, 0, -1, sorted(graph.entities)[:1], "New", "", [12], None)}
        graph.next_community = 6
        assert graphs.save_changes("c", graph, 3, touched, set(), set(), True)
        assert snapshot(self.load(graphs, "c")) == snapshot(graph)

    def test_a_stale_update_writes_nothing(self, graphs: GraphRepository) -> None:
        graph = make_graph()
        graphs.save_new("c", graph, "v", "e", "r", {})
        before = snapshot(self.load(graphs, "c"))
        touched = graph.apply([10], [], embed, 3)
        assert not graphs.save_changes("c", graph, 1, touched, set(), set(), False)  # stored at 2
        other = make_graph()
        graphs.save_new("c", other, "v", "e", "r", {})  # another build replaced it
        assert not graphs.save_changes("c", graph, 2, touched, set(), set(), False)
        assert not graphs.save_changes("missing", graph, 2, touched, set(), set(), False)
        assert snapshot(self.load(graphs, "c")) == before

    def test_collections_are_isolated_and_drop_is_exact(self, graphs: GraphRepository) -> None:
        names = ["c", "c1", "c%", "c_", "C", "xc"]
        for i, collection in enumerate(names):
            graphs.save_new(collection, make_graph(generation=i + 1), f"v{i}", "e", "r", {})
        graphs.drop("c")
        assert graphs.record("c") is None and graphs.load("c") is None
        assert set(graphs.counts("c").values()) == {0} and graphs.size_bytes("c") == 0
        for i, collection in enumerate(names[1:], start=1):
            record = graphs.record(collection)
            assert record is not None and record.generation == i + 1
            assert snapshot(self.load(graphs, collection)) == snapshot(make_graph(generation=i + 1))
        graphs.drop("never-there")
