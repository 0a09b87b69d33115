"""GraphRAG global search without an LLM: community reports ranked against the query (the cosine of the
community's vector with the query's, blended with BM25 over the report text), the best ``reports`` taken,
and their supporting chunks returned: the chunks a report cites and the chunks that mention its members
(the more of them, and the more specific, the better), ranked by relevance to the query and by the
support of the best report behind them. Chunks no chosen report supports fill the list after them, by
hybrid relevance, so a query the reports do not cover still gets results (the notes say so)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, Field

from waypost.context import SearchContext, Timer, ranked_table
from waypost.filters.model import Filter
from waypost.graph.graph import Community, KnowledgeGraph
from waypost.graph.search import GraphArrays
from waypost.llm.accounting import PriceTable, QueryMetadata
from waypost.llm.base import GenerationParams, LLMProvider, Message
from waypost.llm.cache import derived_from
from waypost.llm.structured import complete_structured
from waypost.retrieval.fusion import FusionConfig
from waypost.retrieval.graph_local import (
    F64,
    Relevance,
    TextIndex,
    chunk_relevance,
    collection_language,
    shared_view,
    specificity,
    top_chunks,
)
from waypost.types import RetrievalResult


@dataclass(frozen=True)
class GlobalParams:
    reports: int = 5  # community reports whose chunks are returned
    level: int = -1  # only communities of this level (0: top, 1: sub-communities; -1: both)
    lexical: float = 0.5  # share of the report text's BM25 in its text score (the rest: vector cosine)
    evidence: float = 0.25  # share of the report's evidence (its chunks' relevance) in its score
    boost: float = 1.0  # a supported chunk scores relevance x (1 + boost x support)
    supported_first: bool = True  # the chosen reports' chunks before any other (else: all by score)
    cited: float = 1.0  # support of a chunk the report cites (a member-mentioning chunk: up to 1 by density)
    depth: int = 100  # hybrid candidates behind the relevance scale
    rate: int = 8  # with an LLM: the best reports it rates (0: no LLM call)

    def check(self) -> str:
        if self.rate < 0:
            return "rate must not be negative"
        if self.reports < 1 or self.depth < 1:
            return "reports and depth must be positive"
        if self.level not in (-1, 0, 1):
            return "level must be -1 (both), 0 or 1"
        if not 0.0 <= self.lexical <= 1.0 or not 0.0 <= self.evidence <= 1.0:
            return "lexical and evidence must be between 0 and 1"
        return "" if self.cited >= 0 and self.boost >= 0 else "cited and boost must not be negative"


@dataclass
class Reports:
    """Every community with a report, in id order: its level, vector (zeros where it has none), a BM25
    index over title and report text, and how well each chunk node supports it (see ``_support``)."""

    ids: list[int]
    levels: npt.NDArray[np.int64]
    vectors: npt.NDArray[np.float32]
    lexical: TextIndex
    support: Any  # scipy CSR: report x chunk node


def _reports(graph: KnowledgeGraph, arrays: GraphArrays, terms: Callable[[str], list[str]], cited: float) -> Reports:
    from scipy import sparse

    ids = sorted(c.id for c in graph.communities.values() if c.report)
    dim = next((c.vector.size for c in graph.communities.values() if c.vector is not None), 1)
    vectors = np.zeros((len(ids), dim), dtype=np.float32)
    rows: list[int] = []
    cols: list[int] = []
    values: list[float] = []
    for i, cid in enumerate(ids):
        c = graph.communities[cid]
        if c.vector is not None and c.vector.size == dim:
            vectors[i] = c.vector
        for row, value in _support(graph, c, cited).items():
            node = arrays.node_of_row.get(row)
            if node is not None:
                rows.append(i)
                cols.append(node - arrays.entities)
                values.append(value)
    levels = np.asarray([graph.communities[cid].level for cid in ids], dtype=np.int64)
    texts = [f"{graph.communities[cid].title}\n{graph.communities[cid].report}" for cid in ids]
    support = sparse.csr_matrix((values, (rows, cols)), shape=(len(ids), int(arrays.chunk_rows.size)))
    return Reports(ids, levels, vectors, TextIndex(texts, terms), support)


class ReportRating(BaseModel):
    report: int
    score: int = Field(ge=0, le=100)


class RatingsReply(BaseModel):
    ratings: list[ReportRating] = Field(default_factory=list)


MAP_PROMPT = (
    "You rate reports about communities of a knowledge graph by how much each helps answer a question. "
    'Reply with only JSON: {"ratings": [{"report": <number>, "score": <0 to 100>}, ...]}, one entry per '
    "report; 0 means it does not help at all."
)
REPORT_CHARS = 700  # of each report shown to the LLM


class GraphGlobalRetriever:
    """Without ``llm``, reports are chosen by their score alone; with one, the best ``rate`` reports are rated
    by it in one call (GraphRAG's map step, without the answer-writing reduce: the hits are the output),
    reports it rates 0 are dropped and the rest ordered by its rating."""

    name = "graph-global"

    def __init__(
        self,
        ctx: SearchContext,
        fusion: FusionConfig,
        params: GlobalParams | None = None,
        llm: LLMProvider | None = None,
        prices: PriceTable | None = None,
    ) -> None:
        self.ctx = ctx
        self.fusion = fusion
        self.params = params or GlobalParams()
        self.llm = llm
        self.prices = prices or PriceTable()

    def retrieve(self, query: str, k: int = 10, filters: Filter | None = None) -> RetrievalResult:
        timer = Timer()
        p = self.params
        ctx = self.ctx
        mask = ctx.prefilter(filters, timer)
        view = shared_view(ctx, timer)
        graph, a = view.graph, view.arrays
        assert ctx.graph is not None
        with timer.stage("reports_index"):
            language = collection_language(ctx)
            terms = ctx.indexes.analyzers(language).terms
            reports: Reports = ctx.graph.derived(
                "global-reports", lambda g: _reports(g, a, terms, p.cited), key=(language, id(a), p.cited)
            )
        rel = chunk_relevance(ctx, view, query, mask, self.fusion, timer, max(k, p.depth))
        with timer.stage("rank_reports"):
            scores = _report_scores(reports, np.asarray(ctx.query_vector(query)), query, rel, p)
            order = [i for i in np.argsort(-scores, kind="stable").tolist() if np.isfinite(scores[i])]
            picked = order[: p.reports]
            chosen = [(graph.communities[reports.ids[i]], float(scores[i])) for i in picked]
        notes: list[str] = []
        used_llm: QueryMetadata | None = None
        if self.llm is not None and p.rate > 0 and order:
            used_llm = QueryMetadata(self.name)
            with timer.stage("map"):
                candidates = order[: max(p.rate, p.reports)]
                rated, note = self._rate(query, [graph.communities[reports.ids[i]] for i in candidates], used_llm)
            notes.append(note)
            if rated:
                picked = [candidates[j] for j, _r in rated[: p.reports]]
                chosen = [(graph.communities[reports.ids[candidates[j]]], r / 100.0) for j, r in rated[: p.reports]]
        if not chosen:
            notes.append("no community report to rank (the graph has no communities): hybrid results")
            return rel.fallback(ctx, self.name, query, filters, mask, timer, k, notes)
        with timer.stage("rank"):
            top = max(chosen[0][1], 1e-9)
            support = np.zeros(rel.chunk.size, dtype=np.float64)
            for i, (_c, score) in zip(picked, chosen, strict=True):
                line = reports.support.getrow(i)
                np.maximum.at(support, line.indices, max(score, 0.0) / top * line.data)
            supported = (support > 0) & rel.allowed
            final: F64 = rel.chunk * (1.0 + p.boost * support)
            if p.supported_first:
                final = np.where(supported, 1.0 + final, final)
            final = np.where(supported | (rel.chunk > 0), final, -np.inf)
            out_pos, out_scores = top_chunks(view, final, rel.allowed, k)
        rel.stages["reports"] = ranked_table(out_pos, out_scores)
        with timer.stage("fetch"):
            hits = ctx.hits(out_pos, out_scores, self.name, rel.stages)
        explanation = ctx.explain(self.name, query, query, filters, mask, timer)
        explanation.llm = used_llm
        explanation.notes.extend(notes)
        explanation.notes.append("reports: " + "; ".join(_describe(c, s) for c, s in chosen))
        returned = int(supported[np.isin(view.chunk_positions, out_pos)].sum()) if out_pos.size else 0
        if returned < len(hits):
            explanation.notes.append(
                f"{len(hits) - returned} of {len(hits)} hits are hybrid results the chosen reports do not support"
            )
        explanation.notes.append(
            f"reports={p.reports} level={'both' if p.level < 0 else p.level} lexical={p.lexical} "
            f"evidence={p.evidence} boost={p.boost}; "
            f"{len(reports.ids)} reports ranked, {int(supported.sum())} chunks supported"
        )
        return RetrievalResult(hits, explanation)

    def _rate(self, query: str, candidates: list[Community], used: QueryMetadata) -> tuple[list[tuple[int, int]], str]:
        """(candidate index, rating) of the reports the LLM rates above 0, best first; empty when it failed."""
        assert self.llm is not None
        listed = "\n\n".join(
            f"Report {n}: {c.title}\n{c.report[:REPORT_CHARS]}" for n, c in enumerate(candidates, start=1)
        )
        messages: list[Message] = [
            {"role": "system", "content": MAP_PROMPT},
            {"role": "user", "content": f"Question: {query}\n\n{listed}"},
        ]
        params = GenerationParams(max_tokens=32 + 16 * len(candidates))
        with derived_from(rows={row for c in candidates for row in c.rows}):  # purged with the cited chunks
            result = complete_structured(self.llm, messages, RatingsReply, used, self.prices, params, "global map")
        if result.value is None:
            return [], "LLM rating failed: reports in their retrieval order"
        ratings: dict[int, int] = {}
        for r in result.value.ratings:
            if 1 <= r.report <= len(candidates):
                ratings.setdefault(r.report - 1, r.score)
        rated = sorted(((j, s) for j, s in ratings.items() if s > 0), key=lambda js: (-js[1], js[0]))
        if not rated:
            return [], f"the LLM rated none of {len(candidates)} reports above 0: reports in their retrieval order"
        return rated, f"LLM rated {len(candidates)} reports, {len(rated)} above 0"


def _report_scores(reports: Reports, query_vector: F64, query: str, rel: Relevance, p: GlobalParams) -> F64:
    """Each report's score: its text's (cosine of its vector, BM25 of its text, each over the best) and
    its evidence (the support-weighted mean relevance of its chunks, over the best)."""
    qv = np.asarray(query_vector, dtype=np.float32).reshape(-1)
    n = len(reports.ids)
    fits = reports.vectors.shape[1] == qv.size
    cosine = np.clip((reports.vectors @ qv).astype(np.float64), 0.0, None) if fits else np.zeros(n)
    bm25 = reports.lexical.scores(query)
    text = (1.0 - p.lexical) * _over_best(cosine) + p.lexical * _over_best(bm25)
    mass = np.asarray(reports.support.sum(axis=1)).reshape(-1)
    evidence = np.asarray(reports.support @ rel.chunk).reshape(-1) / np.maximum(mass, 1e-9)
    scores = (1.0 - p.evidence) * text + p.evidence * _over_best(evidence)
    if p.level >= 0:
        scores = np.where(reports.levels == p.level, scores, -np.inf)
    return scores


def _over_best(values: F64) -> F64:
    top = float(values.max()) if values.size else 0.0
    return values / top if top > 0 else values


def _support(graph: KnowledgeGraph, c: Community, cited: float) -> dict[int, float]:
    """Chunk row -> how well it supports the community's report, 0-1: ``cited`` for the rows the report
    cites, else the specificity-weighted count of members it mentions over the best such count."""
    density: dict[int, float] = {}
    for m in c.members:
        e = graph.entities.get(m)
        if e is None:
            continue
        value = specificity(e)
        for row in e.rows:
            density[row] = density.get(row, 0.0) + value
    best = max(density.values(), default=0.0)
    out = {row: v / best for row, v in density.items()} if best > 0 else {}
    for row in c.rows:
        out[row] = max(out.get(row, 0.0), cited)
    return out


def _describe(c: Community, score: float) -> str:
    return f"{c.title or c.id} (level {c.level}, {len(c.members)} members, score {score:.2f})"


__all__ = ["GlobalParams", "GraphGlobalRetriever"]
