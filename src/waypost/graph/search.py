"""What graph strategies search: the knowledge graph as arrays and an igraph graph of entity and chunk
nodes (cached until the graph changes), and the link from a query to its entities."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from waypost.graph.graph import NAMED, KnowledgeGraph
from waypost.graph.model import entity_key

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float32]
_QUERY_WORD = re.compile(r"[\w'’&.-]+")
MAX_NGRAM = 6


@dataclass
class GraphArrays:
    """Node ``i < entities`` is entity ``entity_ids[i]``; node ``entities + j`` is chunk row ``chunk_rows[j]``."""

    entity_ids: IntArray
    node_of_entity: dict[int, int]
    chunk_rows: IntArray
    node_of_row: dict[int, int]
    chunks_per_entity: FloatArray  # how many chunks mention each entity node
    named_nodes: IntArray  # entity nodes with a name vector
    named_vectors: FloatArray  # their vectors, row-aligned
    graph: object  # igraph.Graph, undirected and weighted: mentions, relations and synonyms

    @property
    def entities(self) -> int:
        return int(self.entity_ids.size)


def graph_arrays(graph: KnowledgeGraph, relation_weight: float = 1.0, title_weight: float = 1.0) -> GraphArrays:
    """``relation_weight`` scales entity-entity edges; a chunk's edge to the entity its document's title
    names weighs ``title_weight`` (the chunk is about it), other mention edges 1."""
    import igraph

    entity_ids = np.asarray(sorted(graph.entities), dtype=np.int64)
    node_of_entity = {int(e): i for i, e in enumerate(entity_ids.tolist())}
    rows = np.asarray(sorted(graph.row_entities), dtype=np.int64)
    n_entities = int(entity_ids.size)
    node_of_row = {int(r): n_entities + j for j, r in enumerate(rows.tolist())}
    weights: dict[tuple[int, int], float] = {}
    for row, members in graph.row_entities.items():
        c = node_of_row[row]
        title = graph.row_title.get(row)
        for eid in members:
            weights[(node_of_entity[eid], c)] = title_weight if eid == title else 1.0
    for r in graph.relations.values() if relation_weight > 0 else ():
        a, b = node_of_entity[r.source], node_of_entity[r.target]
        pair = (min(a, b), max(a, b))
        weights[pair] = weights.get(pair, 0.0) + relation_weight * r.weight
    for e, others in graph.synonyms.items():
        for o, sim in others.items():
            a, b = node_of_entity[e], node_of_entity[o]
            if a < b:
                weights[(a, b)] = weights.get((a, b), 0.0) + sim
    g = igraph.Graph(n=n_entities + int(rows.size), edges=list(weights))
    g.es["weight"] = list(weights.values())
    counts = np.asarray([len(graph.entities[int(e)].rows) for e in entity_ids], dtype=np.float32)
    named = [i for i, e in enumerate(entity_ids.tolist()) if graph.entities[e].vector is not None]
    vectors = (
        np.stack([graph.entities[int(entity_ids[i])].vector for i in named]).astype(np.float32)  # type: ignore[misc]
        if named
        else np.zeros((0, 1), dtype=np.float32)
    )
    return GraphArrays(
        entity_ids, node_of_entity, rows, node_of_row, counts, np.asarray(named, dtype=np.int64), vectors, g
    )


@dataclass(frozen=True)
class Seed:
    node: int
    weight: float
    how: str  # "name" (the query names it) or "vector" (its name is close to the query's)


def link_query(
    graph: KnowledgeGraph,
    arrays: GraphArrays,
    query: str,
    query_vector: FloatArray | None,
    vector_k: int = 5,
    vector_threshold: float = 0.5,
    phrases: bool = True,
) -> list[Seed]:
    """The query's entities: names it contains (word n-grams, longest first, matched by key) and the named
    entities whose name vectors are closest to the query's vector."""
    words = _QUERY_WORD.findall(query)
    seeds: dict[int, Seed] = {}
    covered: set[int] = set()
    for n in range(min(MAX_NGRAM, len(words)), 0, -1):
        for i in range(len(words) - n + 1):
            if any(j in covered for j in range(i, i + n)):
                continue
            eid = graph.by_key.get(entity_key(" ".join(words[i : i + n])))
            if eid is None:
                continue
            e = graph.entities[eid]
            if not phrases and e.kind != NAMED:
                continue
            if n == 1 and e.kind != NAMED and len(e.rows) > 1 and not words[i][:1].isupper():
                continue  # a common word on its own is not the query's entity
            node = arrays.node_of_entity[eid]
            seeds[node] = Seed(node, 1.0, "name")
            covered.update(range(i, i + n))
    if query_vector is not None and arrays.named_nodes.size and vector_k > 0:
        sims = arrays.named_vectors @ np.asarray(query_vector, dtype=np.float32).reshape(-1)
        top = np.argsort(-sims)[:vector_k]
        for j in top.tolist():
            if sims[j] < vector_threshold:
                break
            node = int(arrays.named_nodes[j])
            if node not in seeds:
                seeds[node] = Seed(node, float(sims[j]), "vector")
    return list(seeds.values())
