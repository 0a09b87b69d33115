"""HippoRAG 2: personalized PageRank over a graph of passage and entity nodes, seeded from the query's
entities and from the passages' own hybrid scores; passages are ranked by the mass they receive."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from waypost.filters.model import Filter
from waypost.index.topk import top_k
from waypost.retrieval.context import SearchContext, Timer, ranked_table
from waypost.retrieval.fusion import FusionConfig
from waypost.retrieval.graph_support import allowed_chunks, describe_seeds, graph_view, link_query
from waypost.retrieval.hybrid import hybrid_search
from waypost.types import RetrievalResult


@dataclass(frozen=True)
class HippoParams:
    damping: float = 0.5  # PageRank's damping (HippoRAG 2 uses 0.5)
    passages: int = 30  # best hybrid passages seeded
    passage_share: float = 0.5  # share of the reset mass on passage seeds (the rest on entity seeds)
    vector_k: int = 5  # named entities linked by name vector
    vector_threshold: float = 0.5
    relation_weight: float = 1.0  # entity-entity edges against mention edges (1)
    title_weight: float = 1.0  # a chunk's edge to its document's title entity
    phrases: bool = True  # noun phrases the query names seed too (else named entities only)
    blend: float = 0.0  # share of the hybrid score in the final one (0: PageRank mass alone)

    def check(self) -> str:
        if not 0.0 < self.damping < 1.0:
            return "damping must be between 0 and 1 (exclusive)"
        if not 0.0 <= self.passage_share <= 1.0:
            return "passage_share must be between 0 and 1"
        return "" if self.passages >= 1 and self.vector_k >= 0 else "passages must be positive"


class HippoRAGRetriever:
    name = "hipporag"

    def __init__(self, ctx: SearchContext, fusion: FusionConfig, params: HippoParams | None = None) -> None:
        self.ctx = ctx
        self.fusion = fusion
        self.params = params or HippoParams()

    def retrieve(self, query: str, k: int = 10, filters: Filter | None = None) -> RetrievalResult:
        timer = Timer()
        p = self.params
        mask = self.ctx.prefilter(filters, timer)
        view = graph_view(self.ctx, timer, p.relation_weight, p.title_weight)
        a = view.arrays
        positions, scores, stages = hybrid_search(self.ctx, query, max(k, p.passages), mask, self.fusion, timer)
        with timer.stage("link"):
            seeds = link_query(
                view.graph, a, query, self.ctx.query_vector(query), p.vector_k, p.vector_threshold, p.phrases
            )
        n_nodes = a.entities + int(a.chunk_rows.size)
        reset = np.zeros(n_nodes, dtype=np.float64)
        for s in seeds:
            reset[s.node] += s.weight / max(1.0, float(a.chunks_per_entity[s.node]))
        if reset.sum() > 0:
            reset *= (1.0 - p.passage_share) / reset.sum()
        node_of_position = {int(pos): j for j, pos in enumerate(view.chunk_positions.tolist()) if pos >= 0}
        top = [(int(pos), float(sc)) for pos, sc in zip(positions[: p.passages], scores[: p.passages], strict=True)]
        passage_reset = np.zeros(n_nodes, dtype=np.float64)
        hi = max((sc for _pos, sc in top), default=0.0)
        for pos, sc in top:
            j = node_of_position.get(pos)
            if j is not None and hi > 0:
                passage_reset[a.entities + j] = sc / hi
        if passage_reset.sum() > 0:
            passage_reset *= (p.passage_share if seeds else 1.0) / passage_reset.sum()
        reset += passage_reset
        explanation_notes = [f"seeds: {describe_seeds(view, seeds)}"]
        if not seeds:
            explanation_notes.append("no query entity found in the graph: PageRank from the hybrid passages alone")
        if reset.sum() <= 0:
            with timer.stage("fetch"):
                hits = self.ctx.hits(positions[:k], scores[:k], self.name, stages)
            explanation = self.ctx.explain(self.name, query, query, filters, mask, timer)
            explanation.notes.extend([*explanation_notes, "nothing to seed PageRank with: hybrid results"])
            return RetrievalResult(hits, explanation)
        with timer.stage("ppr"):
            mass = np.asarray(
                a.graph.personalized_pagerank(  # type: ignore[attr-defined]
                    damping=p.damping, reset=reset.tolist(), weights="weight", directed=False
                ),
                dtype=np.float64,
            )[a.entities :]
        with timer.stage("rank"):
            ok = allowed_chunks(view, mask)
            if p.blend > 0:
                hybrid_node = np.zeros(mass.size, dtype=np.float64)
                for pos, sc in zip(positions.tolist(), scores.tolist(), strict=True):
                    j = node_of_position.get(int(pos))
                    if j is not None:
                        hybrid_node[j] = sc
                top_mass = float(mass[ok].max()) if ok.any() else 0.0
                top_hybrid = float(hybrid_node.max())
                mass = (1 - p.blend) * mass / max(top_mass, 1e-12) + p.blend * hybrid_node / max(top_hybrid, 1e-12)
            chunk_scores = np.where(ok, mass, -np.inf)
            best, best_scores = top_k(chunk_scores.astype(np.float32), k, None)
            keep = np.isfinite(best_scores)
            out_pos = view.chunk_positions[best[keep]]
            out_scores = best_scores[keep]
        stages["ppr"] = ranked_table(out_pos, out_scores)
        with timer.stage("fetch"):
            hits = self.ctx.hits(out_pos, out_scores, self.name, stages)
        explanation = self.ctx.explain(self.name, query, query, filters, mask, timer)
        explanation.notes.extend(explanation_notes)
        explanation.notes.append(
            f"damping={p.damping} passages={p.passages} passage_share={p.passage_share} "
            f"graph: {a.entities} entities, {a.chunk_rows.size} chunks"
        )
        return RetrievalResult(hits, explanation)
