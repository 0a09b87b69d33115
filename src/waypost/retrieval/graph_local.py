"""GraphRAG local search: the query's entities (named in it, or close to it by name vector), their
neighbourhood up to ``hops`` relations away (ranked by how well the relation that reaches a neighbour
matches the query, BM25 over relation texts, and by the neighbour's closeness to the query; capped), the
relations among them, and the chunks they come from. A chunk scores by the selected entities it
mentions (each by its weight and specificity, more in the document it titles) and the relations among
them it states; that graph score boosts the chunk's own hybrid relevance.

The helpers at the end are what every graph strategy here shares (graph-global, lightrag, multihop):
a chunk's relevance to the query over the whole graph, an entity's specificity and closeness to the
query, a small BM25 over graph texts (reports, relations, names), and per-chunk scores made into hits."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from waypost.context import SearchContext, Timer, ranked_table
from waypost.filters.model import Filter
from waypost.graph.graph import Entity, KnowledgeGraph, Relation
from waypost.index.topk import Mask, Positions, Scores, top_k
from waypost.retrieval.fusion import FusionConfig
from waypost.retrieval.graph_support import GraphView, allowed_chunks, describe_seeds, graph_view, link_query
from waypost.retrieval.hybrid import hybrid_search
from waypost.types import RetrievalResult

F64 = npt.NDArray[np.float64]
Stages = dict[str, dict[int, tuple[int, float]]]


@dataclass(frozen=True)
class LocalParams:
    hops: int = 1  # relations followed out from the query's entities
    neighbours: int = 12  # neighbours kept per hop (the best by relation match and closeness to the query)
    vector_k: int = 5  # named entities linked by name vector
    vector_threshold: float = 0.5
    decay: float = 0.25  # a neighbour's weight against the entity it was reached from (times its match)
    relation_weight: float = 0.5  # a chunk stating a relation between two selected entities, per relation
    title_weight: float = 3.0  # an entity counts this much more in the chunks of the document it titles
    boost: float = 0.5  # final score: relevance x (1 + boost x graph score over the best graph score)
    depth: int = 100  # hybrid candidates behind the relevance scale

    def check(self) -> str:
        if not 0 <= self.hops <= 3:
            return "hops must be between 0 and 3"
        if self.neighbours < 0 or self.vector_k < 0:
            return "neighbours and vector_k must not be negative"
        if not 0.0 <= self.decay <= 1.0:
            return "decay must be between 0 and 1"
        if self.boost < 0:
            return "boost must not be negative"
        if self.relation_weight < 0 or self.title_weight < 0:
            return "relation_weight and title_weight must not be negative"
        return "" if self.depth >= 1 else "depth must be positive"


@dataclass
class Selected:
    weight: float
    hop: int
    via: int  # the entity it was reached from (-1 for a seed)


class GraphLocalRetriever:
    name = "graph-local"

    def __init__(self, ctx: SearchContext, fusion: FusionConfig, params: LocalParams | None = None) -> None:
        self.ctx = ctx
        self.fusion = fusion
        self.params = params or LocalParams()

    def retrieve(self, query: str, k: int = 10, filters: Filter | None = None) -> RetrievalResult:
        timer = Timer()
        p = self.params
        ctx = self.ctx
        mask = ctx.prefilter(filters, timer)
        view = shared_view(ctx, timer)
        graph, a = view.graph, view.arrays
        rel = chunk_relevance(ctx, view, query, mask, self.fusion, timer, max(k, p.depth))
        with timer.stage("link"):
            seeds = link_query(graph, a, query, ctx.query_vector(query), p.vector_k, p.vector_threshold)
        notes = [f"seeds: {describe_seeds(view, seeds)}"]
        if not seeds:
            notes.append("no query entity found in the graph: hybrid results")
            return rel.fallback(ctx, self.name, query, filters, mask, timer, k, notes)
        with timer.stage("relation_index"):
            relations = text_index(ctx, RELATION_INDEX, relation_texts)
        with timer.stage("neighbourhood"):
            closeness = Closeness(ctx, graph, query)
            match = relations.normalised(query)
            selected: dict[int, Selected] = {}
            for seed in seeds:
                selected[int(a.entity_ids[seed.node])] = Selected(seed.weight, 0, -1)
            frontier = list(selected)
            for hop in range(1, p.hops + 1):
                found: dict[int, tuple[float, float, int]] = {}  # entity -> (rank score, weight, via)
                for eid in frontier:
                    parent = selected[eid]
                    links: dict[int, float] = {}  # neighbour -> how well the best relation to it matches the query
                    for r in graph.relations_of(eid):
                        other = r.target if r.source == eid else r.source
                        links[other] = max(links.get(other, 0.0), match.get(r.id, 0.0))
                    for other, sim in graph.synonyms.get(eid, {}).items():
                        links[other] = max(links.get(other, 0.0), sim)
                    for other, via_match in links.items():
                        if via_match <= 0 or other in selected:
                            continue
                        e = graph.entities.get(other)
                        if e is None:
                            continue
                        weight = p.decay * parent.weight * via_match * (0.5 + 0.5 * closeness.of(e))
                        score = weight * specificity(e)
                        if score > found.get(other, (0.0, 0.0, -1))[0]:
                            found[other] = (score, weight, eid)
                best = sorted(found.items(), key=lambda kv: (-kv[1][0], kv[0]))[: p.neighbours]
                frontier = []
                for other, (_score, weight, via) in best:
                    selected[other] = Selected(weight, hop, via)
                    frontier.append(other)
        with timer.stage("score"):
            scores = np.zeros(rel.chunk.size, dtype=np.float64)
            for eid, s in selected.items():
                e = graph.entities[eid]
                value = s.weight * specificity(e)
                for row in e.rows:
                    node = a.node_of_row.get(row)
                    if node is not None:
                        about = graph.row_title.get(row) == eid
                        scores[node - a.entities] += value * (p.title_weight if about else 1.0)
            used: list[tuple[float, Relation]] = []
            if p.relation_weight > 0:
                for r in relations_among(graph, selected):
                    node = a.node_of_row.get(r.row)
                    if node is None:
                        continue
                    ends = min(selected[r.source].weight, selected[r.target].weight)
                    value = ends * r.weight * (0.5 + match.get(r.id, 0.0))
                    scores[node - a.entities] += p.relation_weight * value
                    used.append((value, r))
            final = boost_scores(scores, rel, p.boost)
            out_pos, out_scores = top_chunks(view, final, rel.allowed, k)
        rel.stages["graph"] = ranked_table(out_pos, out_scores)
        with timer.stage("fetch"):
            hits = ctx.hits(out_pos, out_scores, self.name, rel.stages)
        explanation = ctx.explain(self.name, query, query, filters, mask, timer)
        neighbours = sorted(((s.weight, eid) for eid, s in selected.items() if s.hop > 0), reverse=True)
        names = [
            f"{graph.entities[eid].name} ({w:.2f} via {graph.entities[selected[eid].via].name})"
            for w, eid in neighbours[:8]
        ]
        explanation.notes.extend(notes)
        explanation.notes.append(f"neighbours ({len(neighbours)} within {p.hops} hops): {', '.join(names) or 'none'}")
        explanation.notes.append(f"relations ({len(used)}): {describe_relations(graph, used)}")
        explanation.notes.append(
            f"hops={p.hops} decay={p.decay} boost={p.boost} title_weight={p.title_weight}; "
            f"chunks reached: {int((scores > 0).sum())}"
        )
        return RetrievalResult(hits, explanation)


def relations_among(graph: KnowledgeGraph, selected: dict[int, Selected] | set[int]) -> list[Relation]:
    """Relations with both ends among ``selected``, each once."""
    out: dict[int, Relation] = {}
    for eid in selected:
        for r in graph.relations_of(eid):
            if r.source in selected and r.target in selected:
                out[r.id] = r
    return list(out.values())


def describe_relations(graph: KnowledgeGraph, weighted: Sequence[tuple[float, Relation]], limit: int = 5) -> str:
    lines: list[str] = []
    seen: set[tuple[int, int]] = set()
    for _w, r in sorted(weighted, key=lambda wr: (-wr[0], wr[1].id)):
        pair = (min(r.source, r.target), max(r.source, r.target))
        if pair in seen:
            continue
        seen.add(pair)
        lines.append(f"{graph.entities[r.source].name} — {r.label} — {graph.entities[r.target].name}")
        if len(lines) >= limit:
            break
    return "; ".join(lines) or "none"


# -- shared by the graph strategies ---------------------------------------------------------------------


def shared_view(ctx: SearchContext, timer: Timer) -> GraphView:
    """The graph view with hipporag's default edge weights. These strategies read no edge weight; asking
    for the same ones as hipporag keeps one cached array set (``graph_view`` caches one) for all of them."""
    from waypost.retrieval.hipporag import HippoParams

    defaults = HippoParams()
    return graph_view(ctx, timer, defaults.relation_weight, defaults.title_weight)


def specificity(entity: Entity) -> float:
    """1 for an entity one chunk mentions, falling with the log of how many do (a hub says little)."""
    return 1.0 / (1.0 + math.log(max(1, len(entity.rows))))


class Closeness:
    """How close an entity is to the query, 0-1: its name vector's cosine with the query's (named
    entities), or the share of its name's terms the query has (noun phrases)."""

    def __init__(self, ctx: SearchContext, graph: KnowledgeGraph, query: str) -> None:
        self.vector = np.asarray(ctx.query_vector(query), dtype=np.float32).reshape(-1)
        self.analyzer = ctx.indexes.analyzers(ctx.indexes.query_language(query))
        self.terms = set(self.analyzer.terms(query))

    def of(self, e: Entity) -> float:
        if e.vector is not None:
            return max(0.0, float(e.vector @ self.vector))
        terms = self.analyzer.terms(e.name)
        return sum(t in self.terms for t in terms) / len(terms) if terms else 0.0


@dataclass
class Relevance:
    """The query's hybrid results, and every chunk node's relevance to it (0-1; 0 where not allowed)."""

    chunk: F64
    allowed: npt.NDArray[np.bool_]
    positions: Positions
    scores: Scores
    stages: Stages
    node_of_position: dict[int, int]

    def fallback(
        self,
        ctx: SearchContext,
        name: str,
        query: str,
        filters: Filter | None,
        mask: Mask | None,
        timer: Timer,
        k: int,
        notes: list[str],
    ) -> RetrievalResult:
        """The hybrid results themselves."""
        with timer.stage("fetch"):
            hits = ctx.hits(self.positions[:k], self.scores[:k], name, self.stages)
        explanation = ctx.explain(name, query, query, filters, mask, timer)
        explanation.notes.extend(notes)
        return RetrievalResult(hits, explanation)


def chunk_relevance(
    ctx: SearchContext, view: GraphView, query: str, mask: Mask | None, fusion: FusionConfig, timer: Timer, depth: int
) -> Relevance:
    """Hybrid search for the query, and each chunk node's relevance: the weighted dense/lexical blend
    hybrid fusion would give it (scaled by the top-``depth`` lists, so chunks outside them are scored too),
    raised to its hybrid score where it has one (reference boosts), over the best, 0-1."""
    positions, scores, stages = hybrid_search(ctx, query, depth, mask, fusion, timer)
    with timer.stage("relevance"):
        allowed = allowed_chunks(view, mask)
        at = np.maximum(view.chunk_positions, 0)
        dense = _scaled(ctx.dense(query).at(at).astype(np.float64), stages["dense"])
        lexical = _scaled(ctx.lexical_scores(query)[at].astype(np.float64), stages["bm25"])
        _language, weight, _note = ctx.dense_weight(query)
        alpha = fusion.alpha * weight
        chunk = alpha * dense + (1.0 - alpha) * lexical
        chunk = np.where(allowed, chunk, 0.0)
        top = float(chunk.max()) if chunk.size else 0.0
        if top > 0:
            chunk /= top
        node_of_position = {int(pos): j for j, pos in enumerate(view.chunk_positions.tolist()) if pos >= 0}
        best = float(scores.max()) if scores.size else 0.0
        if best > 0:
            for pos, sc in zip(positions.tolist(), scores.tolist(), strict=True):
                j = node_of_position.get(int(pos))
                if j is not None and allowed[j]:
                    chunk[j] = max(chunk[j], sc / best)
    return Relevance(chunk, allowed, positions, scores, stages, node_of_position)


def _scaled(values: F64, table: dict[int, tuple[int, float]]) -> F64:
    """``values`` scaled by the range of a ranked list's scores (as weighted fusion scales them), 0-1."""
    if not table:
        return np.zeros(values.size, dtype=np.float64)
    listed = [s for _r, s in table.values()]
    hi, lo = max(listed), min(listed)
    if hi <= lo:
        return (values >= hi).astype(np.float64)
    return np.clip((values - lo) / (hi - lo), 0.0, 1.0)


def boost_scores(graph_scores: F64, rel: Relevance, boost: float) -> F64:
    """Relevance x (1 + boost x graph score over its best); chunks the graph reached without relevance
    follow, by graph score; ``-inf`` for chunks neither reached nor relevant, and for chunks not allowed."""
    top = float(graph_scores.max()) if graph_scores.size else 0.0
    norm = graph_scores / top if top > 0 else graph_scores
    final = rel.chunk * (1.0 + boost * norm) + 1e-3 * norm
    candidate = (graph_scores > 0) | (rel.chunk > 0)
    return np.where(candidate & rel.allowed, final, -np.inf)


def top_chunks(view: GraphView, node_scores: F64, allowed: npt.NDArray[np.bool_], k: int) -> tuple[Positions, Scores]:
    """The ``k`` best allowed chunk nodes (finite scores only), as index positions and scores."""
    scores = np.where(allowed, node_scores, -np.inf).astype(np.float32)
    best, best_scores = top_k(scores, k, None)
    keep = np.isfinite(best_scores)
    return view.chunk_positions[best[keep]], best_scores[keep]


def collection_language(ctx: SearchContext) -> str:
    """The language most of the collection's live chunks are in ("en" when there are none)."""
    counts = {lang: n for lang, n in ctx.indexes.languages.items() if lang != "und"}
    return max(counts, key=lambda lang: (counts[lang], lang)) if counts else "en"


class TextIndex:
    """BM25 over a fixed list of short texts (community reports, relations, entity names), each under an
    id (``ids``, default its index): built once per graph version (``LiveGraph.derived``), scored in numpy."""

    def __init__(
        self,
        texts: Sequence[str],
        terms: Callable[[str], list[str]],
        ids: Sequence[int] | None = None,
        k1: float = 1.2,
        b: float = 0.75,
    ) -> None:
        from scipy import sparse

        self.ids = np.asarray(range(len(texts)) if ids is None else ids, dtype=np.int64)
        self.terms = terms
        self.k1, self.b = k1, b
        self.vocab: dict[str, int] = {}
        rows: list[int] = []
        cols: list[int] = []
        tfs: list[float] = []
        lengths = np.zeros(len(texts), dtype=np.float64)
        for i, text in enumerate(texts):
            counts = Counter(terms(text))
            lengths[i] = sum(counts.values())
            for term, n in counts.items():
                rows.append(i)
                cols.append(self.vocab.setdefault(term, len(self.vocab)))
                tfs.append(float(n))
        shape = (len(texts), max(1, len(self.vocab)))
        self.matrix = sparse.csc_matrix((tfs, (rows, cols)), shape=shape, dtype=np.float64)
        self.lengths = lengths
        self.size = len(texts)
        average = float(lengths.mean()) if len(texts) else 0.0
        self.norm = k1 * ((1.0 - b) + b * lengths / max(average, 1e-9))
        df = np.diff(self.matrix.indptr).astype(np.float64)
        self.idf = np.log(1.0 + (self.size - df + 0.5) / (df + 0.5))

    def scores(self, query: str) -> F64:
        out = np.zeros(self.size, dtype=np.float64)
        m = self.matrix
        for term in set(self.terms(query)):
            col = self.vocab.get(term)
            if col is None:
                continue
            start, end = int(m.indptr[col]), int(m.indptr[col + 1])
            rows = m.indices[start:end]
            tf = m.data[start:end]
            out[rows] += self.idf[col] * tf * (self.k1 + 1.0) / (tf + self.norm[rows])
        return out

    def normalised(self, query: str) -> dict[int, float]:
        """Id -> BM25 over the best BM25, for the texts that share a term with ``query``."""
        scores = self.scores(query)
        hit = np.flatnonzero(scores > 0)
        if not hit.size:
            return {}
        top = float(scores[hit].max())
        return dict(zip(self.ids[hit].tolist(), (scores[hit] / top).tolist(), strict=True))

    def top(self, query: str, n: int) -> tuple[npt.NDArray[np.int64], F64]:
        """The ids and scores of the ``n`` best texts for ``query`` that share a term with it."""
        scores = self.scores(query)
        hit = np.flatnonzero(scores > 0)
        if hit.size > n:
            hit = hit[np.argpartition(-scores[hit], n - 1)[:n]]
        hit = hit[np.argsort(-scores[hit], kind="stable")]
        return self.ids[hit], scores[hit]


RELATION_INDEX = "relation-text"  # the derived BM25 over relations, shared by graph-local and lightrag


def relation_texts(graph: KnowledgeGraph) -> list[tuple[int, str]]:
    """Each relation as "source label target" (what BM25 over relations reads)."""
    out: list[tuple[int, str]] = []
    for rid in sorted(graph.relations):
        r = graph.relations[rid]
        out.append((rid, f"{graph.entities[r.source].name} {r.label} {graph.entities[r.target].name}"))
    return out


def text_index(ctx: SearchContext, name: str, items: Callable[[KnowledgeGraph], list[tuple[int, str]]]) -> TextIndex:
    """A ``TextIndex`` over ``items(graph)`` (id, text) in the collection's language, cached until the
    graph changes."""
    assert ctx.graph is not None
    language = collection_language(ctx)
    terms = ctx.indexes.analyzers(language).terms

    def make(graph: KnowledgeGraph) -> TextIndex:
        pairs = items(graph)
        return TextIndex([t for _i, t in pairs], terms, [i for i, _t in pairs])

    index: TextIndex = ctx.graph.derived(name, make, key=language)
    return index
