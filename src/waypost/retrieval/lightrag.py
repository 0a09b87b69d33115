"""LightRAG's dual-level retrieval. Low level, the query's entities: named entities by name vector, any
entity (noun phrases too) by the words of its name (BM25 over names) or by being named in the query.
High level, relations and themes: relations whose text ("source label target") matches the query (BM25:
embedding tens of thousands of relations would cost more than the graph), and communities by vector.
Each level ranks chunks (the chunks its entities, relations and communities come from), the two rankings
are fused by reciprocal rank, and the fused score boosts each chunk's own hybrid relevance."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from waypost.context import SearchContext, Timer, ranked_table
from waypost.filters.model import Filter
from waypost.graph.graph import KnowledgeGraph
from waypost.index.topk import Positions
from waypost.retrieval.fusion import FusionConfig
from waypost.retrieval.graph_local import (
    F64,
    RELATION_INDEX,
    Relevance,
    boost_scores,
    chunk_relevance,
    describe_relations,
    relation_texts,
    shared_view,
    specificity,
    text_index,
    top_chunks,
)
from waypost.retrieval.graph_support import GraphView, link_query
from waypost.types import RetrievalResult


@dataclass(frozen=True)
class LightParams:
    entities: int = 20  # low level: entities kept after fusing name, vector and word matches
    vector_threshold: float = 0.35  # named entities whose name vector is at least this close to the query's
    relations: int = 30  # high level: relations kept (BM25 over their text)
    communities: int = 3  # high level: communities kept (by vector)
    low_weight: float = 1.0  # weight of the low level's chunk ranking in the fusion of the two
    high_weight: float = 1.0  # weight of the high level's
    rrf_k: int = 60
    title_weight: float = 3.0  # an entity counts this much more in the chunks of the document it titles
    boost: float = 0.5  # final score: relevance x (1 + boost x fused level score over the best)
    depth: int = 100  # hybrid candidates behind the relevance scale

    def check(self) -> str:
        if self.entities < 0 or self.relations < 0 or self.communities < 0:
            return "entities, relations and communities must not be negative"
        if min(self.low_weight, self.high_weight, self.title_weight, self.boost) < 0:
            return "weights and boost must not be negative"
        if not -1.0 <= self.vector_threshold <= 1.0:
            return "vector_threshold must be between -1 and 1"
        return "" if self.rrf_k >= 1 and self.depth >= 1 else "rrf_k and depth must be positive"


def _entity_names(graph: KnowledgeGraph) -> list[tuple[int, str]]:
    return [(eid, graph.entities[eid].name) for eid in sorted(graph.entities)]


class LightRAGRetriever:
    name = "lightrag"

    def __init__(self, ctx: SearchContext, fusion: FusionConfig, params: LightParams | None = None) -> None:
        self.ctx = ctx
        self.fusion = fusion
        self.params = params or LightParams()

    def retrieve(self, query: str, k: int = 10, filters: Filter | None = None) -> RetrievalResult:
        timer = Timer()
        p = self.params
        ctx = self.ctx
        mask = ctx.prefilter(filters, timer)
        view = shared_view(ctx, timer)
        graph, a = view.graph, view.arrays
        with timer.stage("graph_index"):
            names = text_index(ctx, "light-entity-names", _entity_names)
            relation_text = text_index(ctx, RELATION_INDEX, relation_texts)
        rel = chunk_relevance(ctx, view, query, mask, self.fusion, timer, max(k, p.depth))
        qv = np.asarray(ctx.query_vector(query), dtype=np.float32).reshape(-1)
        # -- low level: entities -------------------------------------------------------------------------
        with timer.stage("low_level"):
            ranked: list[list[int]] = []
            named = link_query(graph, a, query, None, 0)
            ranked.append([int(a.entity_ids[s.node]) for s in named])
            if a.named_nodes.size and p.entities > 0:
                sims = a.named_vectors @ qv
                best = np.argsort(-sims)[: p.entities]
                ranked.append([int(a.entity_ids[a.named_nodes[j]]) for j in best if sims[j] >= p.vector_threshold])
            word_ids, _word_scores = names.top(query, p.entities)
            ranked.append([int(i) for i in word_ids])
            entity_score = _rrf_ids(ranked, p.rrf_k)
            entities = sorted(entity_score, key=lambda e: (-entity_score[e], e))[: p.entities]
            low = np.zeros(rel.chunk.size, dtype=np.float64)
            for eid in entities:
                e = graph.entities[eid]
                value = entity_score[eid] * specificity(e)
                for row in e.rows:
                    node = a.node_of_row.get(row)
                    if node is not None:
                        about = graph.row_title.get(row) == eid
                        low[node - a.entities] += value * (p.title_weight if about else 1.0)
        # -- high level: relations and communities ---------------------------------------------------------
        with timer.stage("high_level"):
            high = np.zeros(rel.chunk.size, dtype=np.float64)
            rel_ids, rel_scores = relation_text.top(query, p.relations)
            top_rel = float(rel_scores[0]) if rel_scores.size else 0.0
            used = []
            for rid, score in zip(rel_ids.tolist(), rel_scores.tolist(), strict=True):
                r = graph.relations.get(int(rid))
                if r is None:
                    continue
                node = a.node_of_row.get(r.row)
                if node is not None:
                    high[node - a.entities] += score / top_rel * r.weight
                used.append((score, r))
            themes = _communities(graph, qv, p.communities)
            for cid, cosine in themes:
                for row in graph.communities[cid].rows:
                    node = a.node_of_row.get(row)
                    if node is not None:
                        high[node - a.entities] += 0.5 * cosine
        with timer.stage("fusion"):
            levels = [(_ranking(view, low, rel), p.low_weight), (_ranking(view, high, rel), p.high_weight)]
            fused = np.zeros(rel.chunk.size, dtype=np.float64)
            for positions, weight in levels:
                for rank, pos in enumerate(positions.tolist(), start=1):
                    j = rel.node_of_position.get(int(pos))
                    if j is not None:
                        fused[j] += weight / (p.rrf_k + rank)
            out_pos, out_scores = top_chunks(view, boost_scores(fused, rel, p.boost), rel.allowed, k)
        rel.stages["lightrag"] = ranked_table(out_pos, out_scores)
        with timer.stage("fetch"):
            hits = ctx.hits(out_pos, out_scores, self.name, rel.stages)
        explanation = ctx.explain(self.name, query, query, filters, mask, timer)
        low_names = ", ".join(f"{graph.entities[e].name} ({entity_score[e] * p.rrf_k:.2f})" for e in entities[:8])
        explanation.notes.append(f"low level: {len(entities)} entities: {low_names or 'none'}")
        explanation.notes.append(f"high level: {len(used)} relations: {describe_relations(graph, used)}")
        theme_names = ", ".join(f"{graph.communities[c].title} ({s:.2f})" for c, s in themes)
        explanation.notes.append(f"high level: communities: {theme_names or 'none'}")
        if not entities and not used and not themes:
            explanation.notes.append("neither level found anything in the graph: hybrid results")
        explanation.notes.append(
            f"weights low={p.low_weight} high={p.high_weight} rrf_k={p.rrf_k} boost={p.boost} "
            f"title_weight={p.title_weight}; chunks reached: low {int((low > 0).sum())}, high {int((high > 0).sum())}"
        )
        return RetrievalResult(hits, explanation)


def _rrf_ids(ranked: list[list[int]], rrf_k: int) -> dict[int, float]:
    out: dict[int, float] = {}
    for ids in ranked:
        for rank, eid in enumerate(ids, start=1):
            out[eid] = out.get(eid, 0.0) + 1.0 / (rrf_k + rank)
    return out


def _communities(graph: KnowledgeGraph, qv: npt.NDArray[np.float32], n: int) -> list[tuple[int, float]]:
    scored = [
        (cid, float(c.vector @ qv))
        for cid, c in graph.communities.items()
        if c.vector is not None and c.vector.size == qv.size
    ]
    return sorted(scored, key=lambda cs: (-cs[1], cs[0]))[:n]


def _ranking(view: GraphView, scores: F64, rel: Relevance) -> Positions:
    """Allowed chunks with a positive score as index positions, best first (ties: the more relevant)."""
    nodes = np.flatnonzero((scores > 0) & rel.allowed)
    order = np.lexsort((-rel.chunk[nodes], -scores[nodes]))
    return view.chunk_positions[nodes[order]]


__all__ = ["LightParams", "LightRAGRetriever"]
