"""HippoRAG 2: personalized PageRank over a graph of passage and entity nodes, seeded from the query's
entities and from the passages' own hybrid scores; passages are ranked by the mass they receive."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from waypost.context import SearchContext, Timer, ranked_table
from waypost.filters.model import Filter
from waypost.index.topk import top_k
from waypost.retrieval.fusion import FusionConfig
from waypost.retrieval.graph_support import GraphView, allowed_chunks, describe_seeds, graph_view, link_query
from waypost.retrieval.hybrid import hybrid_search
from waypost.types import RetrievalResult


@dataclass(frozen=True)
class HippoParams:
    damping: float = 0.5  # PageRank's damping (HippoRAG 2 uses 0.5)
    passages: int = 30  # best hybrid passages seeded
    passage_share: float = 0.2  # share of the reset mass on passage seeds (the rest on entity seeds)
    vector_k: int = 5  # named entities linked by name vector
    vector_threshold: float = 0.7
    relation_weight: float = 1.0  # entity-entity edges against mention edges (1)
    title_weight: float = 3.0  # a chunk's edge to its document's title entity
    phrases: bool = True  # noun phrases the query names seed too (else named entities only)
    path_bonus: float = 0.3  # reward for a pair of top passages that one links to the other's title entity
    blend: float = 0.5  # share of the hybrid score in the final one (0: PageRank mass alone)

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
            best, best_scores = top_k(chunk_scores.astype(np.float32), max(k, 20), None)
            keep = np.isfinite(best_scores)
            best, best_scores = best[keep], best_scores[keep]
            if p.path_bonus > 0 and best.size > 2:
                named = {int(a.entity_ids[sd.node]) for sd in seeds if sd.how == "name"}
                best, best_scores, note = self._best_path(view, best, best_scores, p.path_bonus, named)
                if note:
                    explanation_notes.append(note)
            best, best_scores = best[:k], best_scores[:k]
            out_pos = view.chunk_positions[best]
            out_scores = best_scores
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

    @staticmethod
    def _best_path(
        view: GraphView, nodes: np.ndarray, scores: np.ndarray, bonus: float, named: set[int]
    ) -> tuple[np.ndarray, np.ndarray, str]:
        """Put first the pair of candidates with the best joint score, where a pair whose one passage names
        the other's title entity (a bridge) earns ``bonus`` times the title's rarity (a hub's title, which
        many chunks name, links little). A title the query itself names (``named``) is no bridge: the
        bridge of a two-hop question is the entity the question leaves out."""
        g = view.graph
        a = view.arrays
        rows = [int(a.chunk_rows[j]) for j in nodes.tolist()]
        top = float(scores[0]) if scores[0] > 0 else 1.0
        s = scores.astype(np.float64) / top
        mentions = [set(g.row_entities.get(r, [])) for r in rows]
        names = [{t} if (t := g.row_title.get(r)) is not None and t not in named else set() for r in rows]
        total = max(2, int(a.chunk_rows.size))

        def rarity(entity: int) -> float:
            """1 for a title one chunk mentions, 0 for one every chunk does: a hub links everything."""
            return math.log(total / max(1, len(g.entities[entity].rows))) / math.log(total)

        def link(x: int, y: int) -> float:
            shared = (names[y] & mentions[x]) | (names[x] & mentions[y])
            return bonus * max(rarity(t) for t in shared) if shared else 0.0

        best_pair, best_value, linked = (0, 1), s[0] + s[1], False
        m = min(len(rows), 10)
        for i in range(m):
            for j in range(i + 1, len(rows)):
                gain = link(i, j)
                value = s[i] + s[j] + gain
                if value > best_value + 1e-12:
                    best_pair, best_value, linked = (i, j), value, gain > 0
        i, j = best_pair
        rest = [x for x in range(len(rows)) if x not in (i, j)]
        rest.sort(key=lambda x: -(s[x] + max(link(x, i), link(x, j))))
        order = [i, j, *rest]
        note = ""
        if linked and (i, j) != (0, 1):
            title_i, title_j = g.row_title.get(rows[i]), g.row_title.get(rows[j])
            titles = [g.entities[t].name for t in (title_i, title_j) if t is not None]
            note = f"bridge: the best pair of passages is linked by a title ({' / '.join(titles)})"
        return nodes[order], scores[order], note
