"""Structure-aware features of retrieved chunks, and the reranker that scores them with a profile.

Every feature is computed for the best ``depth`` hits of any strategy's result, from the index set (dense
and BM25 scores of every chunk, shared with the strategy through the search context), the evidence graph
(section, neighbours, document, successors) and the hit itself. Values are logged on each hit
(``hit.features``) and a profile (hand-set or learned) turns them into the new order."""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from waypost.context import SearchContext
from waypost.post.evidence import EvidenceGraph, Succession, version_key
from waypost.post.passages import relevance
from waypost.post.rerank.profile import RerankProfile
from waypost.types import Hit, RetrievalResult

FEATURES: tuple[str, ...] = (
    "retriever",  # the strategy's own score, relative to its best hit
    "rank",  # 1 / log2(rank + 1) in the strategy's order
    "dense",  # cosine of the chunk with the query
    "lexical",  # BM25 of the chunk, relative to the best chunk in the collection
    "document",  # the best relevance of any chunk of the same document
    "section",  # the mean relevance of the chunks of the same section
    "adjacent",  # the best relevance of the chunks just before and after (same section)
    "linked",  # 1 when one of the best 10 candidates names this chunk's document (a reference edge), else 0
    "heading",  # share of the query's terms found in the title and section headings
    "doc_type",  # 1 when one of the hit's text metadata values is named in the query
    "recency",  # the document's date among the candidates' dates (1 newest, 0.5 undated)
    "is_latest",  # 0 when a live document supersedes this one, else 1
    "position",  # 1 for a document's first chunk, falling towards 0 for its last
    "boundary",  # how cleanly the chunk starts and ends (sentence or heading boundaries)
)

LINK_SOURCES = 10  # candidates whose references are followed (as hybrid follows its best hits' links)
_SENTENCE_END = re.compile(r"""[.!?:;)\]"'»”]\s*$""")
_SENTENCE_START = re.compile(r"""^\s*[\(\["'«“]?[\d\p{Lu}]|^\s*[-*#•]""".replace(r"\p{Lu}", "A-ZÀ-ÖØ-Þ"))


@dataclass(frozen=True)
class FeatureRows:
    """Feature values of a result's candidates (rows in hit order) and what the graph found about them."""

    values: npt.NDArray[np.float64]  # candidates x FEATURES
    successions: list[Succession]  # supersedes edges found from the candidates


def boundary_confidence(text: str) -> float:
    """1 when the chunk starts at a sentence or heading and ends at a sentence end; 0.5 for one of the two."""
    start = 1.0 if _SENTENCE_START.search(text[:8]) else 0.0
    end = 1.0 if _SENTENCE_END.search(text[-4:]) or text.endswith("\n") else 0.0
    return (start + end) / 2


def _mentioned_values(hit: Hit, query_folded: str) -> bool:
    for value in hit.metadata.values():
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, str) and 2 < len(v) < 60 and not v.isdigit():
                if re.search(r"(?<!\w)" + re.escape(v.casefold()) + r"(?!\w)", query_folded):
                    return True
    return False


def compute_features(
    ctx: SearchContext, graph: EvidenceGraph, query: str, hits: list[Hit], alpha: float = 0.4
) -> FeatureRows:
    """Feature rows for ``hits`` (all of them; the caller cuts to its depth first)."""
    n = len(hits)
    values = np.zeros((n, len(FEATURES)), dtype=np.float64)
    if n == 0:
        return FeatureRows(values, [])
    col = {name: i for i, name in enumerate(FEATURES)}
    rel = relevance(ctx, query, alpha)
    dense = ctx.dense(query)
    lexical = ctx.lexical_scores(query)
    top_lexical = float(lexical.max()) if lexical.size else 0.0
    at = graph.positions(hits)
    graph.preload([p for p in at if p is not None])
    language = ctx.indexes.query_language(query)
    analyzer = ctx.indexes.analyzers(language)
    query_terms = set(analyzer.terms(query))
    folded = query.casefold()
    top_score = max((h.score for h in hits), default=0.0)
    successions: list[Succession] = []
    date_fields = graph.date_fields()
    dates: list[float | None] = []
    for i, (hit, pos) in enumerate(zip(hits, at, strict=True)):
        row = values[i]
        row[col["retriever"]] = hit.score / top_score if top_score > 0 else 0.0
        row[col["rank"]] = 1.0 / math.log2(i + 2)
        row[col["boundary"]] = boundary_confidence(hit.chunk.text)
        row[col["doc_type"]] = 1.0 if _mentioned_values(hit, folded) else 0.0
        heading_terms = set(analyzer.terms(" ".join([hit.provenance.document_title, *hit.chunk.section])))
        row[col["heading"]] = len(query_terms & heading_terms) / len(query_terms) if query_terms else 0.0
        row[col["is_latest"]] = 1.0
        dates.append(version_key(hit.metadata, date_fields)[0])
        if pos is None:
            continue
        row[col["dense"]] = float(dense[pos])
        row[col["lexical"]] = float(lexical[pos]) / top_lexical if top_lexical > 0 else 0.0
        document = ctx.indexes.document_positions(pos)
        row[col["document"]] = float(rel[document].max()) if document.size else float(rel[pos])
        order = [int(p) for p in document]
        row[col["position"]] = 1.0 - order.index(pos) / len(order) if pos in order else 0.0
        section = graph.get_parent(pos)
        if section is not None:
            row[col["section"]] = float(rel[list(section.positions)].mean())
        neighbours = graph.get_adjacent(pos)
        row[col["adjacent"]] = float(rel[neighbours].max()) if neighbours else 0.0
        successors = graph.get_successors(pos)
        if successors:
            row[col["is_latest"]] = 0.0
            successions.extend(successors)
    slot_of = {p: j for j, p in enumerate(at) if p is not None}
    for i, pos in enumerate(at[:LINK_SOURCES]):
        if pos is not None:
            for target in graph.get_references(pos):
                j = slot_of.get(target)
                if j is not None and j != i:
                    values[j, col["linked"]] = 1.0
    known = [d for d in dates if d is not None]
    if known:
        lo, hi = min(known), max(known)
        for i, d in enumerate(dates):
            values[i, col["recency"]] = 0.5 if d is None else (1.0 if hi == lo else (d - lo) / (hi - lo))
    else:
        values[:, col["recency"]] = 0.5
    return FeatureRows(values, successions)


def below_successors(order: list[int], hits: list[Hit], successions: list[Succession]) -> list[int]:
    """``order`` with every hit of a superseded document placed after the first hit of each of its
    successors among the candidates, and otherwise as it was (whatever the weights, an old version never
    outranks its successor): at each step the earliest hit whose document waits on no successor not yet
    placed. A cycle of supersedes edges is broken by taking the earliest hit."""
    present = {hits[i].document_id for i in order}
    newer: dict[str, set[str]] = {}
    for s in successions:
        if s.newer in present and s.newer != s.older:
            newer.setdefault(s.older, set()).add(s.newer)
    placed: set[str] = set()
    rest = list(order)
    out: list[int] = []
    while rest:
        ready = next((n for n, i in enumerate(rest) if newer.get(hits[i].document_id, set()) <= placed), 0)
        i = rest.pop(ready)
        out.append(i)
        placed.add(hits[i].document_id)
    return out


class FeatureReranker:
    """Reorders the best ``depth`` hits by a profile over their structure-aware features."""

    def __init__(self, ctx: SearchContext, profile: RerankProfile, depth: int = 30) -> None:
        self.ctx = ctx
        self.profile = profile
        self.depth = depth
        self.name = f"features:{profile.name}"

    def rerank(self, query: str, result: RetrievalResult) -> RetrievalResult:
        t0 = time.perf_counter()
        head, tail = result.hits[: self.depth], result.hits[self.depth :]
        graph = self.ctx.evidence()
        rows = compute_features(self.ctx, graph, query, head)
        scores = self.profile.score(rows.values, FEATURES)
        order = below_successors(sorted(range(len(head)), key=lambda i: (-scores[i], i)), head, rows.successions)
        reranked = []
        for i in order:
            hit = head[i]
            stage_scores = {**hit.provenance.stage_scores, "retrieved": round(hit.score, 6)}
            reranked.append(
                replace(
                    hit,
                    score=float(scores[i]),
                    provenance=replace(hit.provenance, stage_scores=stage_scores),
                    features={name: round(float(v), 4) for name, v in zip(FEATURES, rows.values[i], strict=True)},
                )
            )
        explanation = result.explanation
        explanation.timings_ms["rerank"] = (time.perf_counter() - t0) * 1000
        moved = sum(1 for new, i in enumerate(order) if new != i)
        explanation.notes.append(
            f"rerank: {self.name} ({self.profile.source}), {len(head)} candidates, {moved} moved; "
            f"weights {self.profile.describe(FEATURES)}"
        )
        reasons = dict.fromkeys(s.reason for s in rows.successions)
        explanation.notes.extend(f"rerank: superseded: {reason}" for reason in reasons)
        return RetrievalResult([*reranked, *tail], explanation)
