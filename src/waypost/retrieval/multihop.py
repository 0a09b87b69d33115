"""Iterative multi-hop retrieval: retrieve with hybrid, read bridge entities off the best hits (entities
the graph records for those chunks that the query does not name yet: the titles of other documents
first, then other named entities, each by how specific it is and how much the sentence naming it shares
with the query), retrieve again with the query plus each bridge's name, and fuse every list by rank.
``rounds`` bounds how often this repeats, ``bridges`` how many entities each round follows."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from waypost.context import SearchContext, Timer, ranked_table
from waypost.errors import WaypostError
from waypost.filters.model import Filter
from waypost.graph.graph import NAMED, Entity, KnowledgeGraph
from waypost.graph.model import entity_key
from waypost.index.topk import Positions, Scores
from waypost.retrieval.fusion import FusionConfig
from waypost.retrieval.graph_local import specificity
from waypost.retrieval.hybrid import hybrid_search
from waypost.types import RetrievalResult

_WORD = re.compile(r"\w+")
# Named-entity labels that name a time rather than a thing: weak bridges (searching for "1986" finds anything).
WEAK_LABELS = frozenset({"DATE", "TIME"})


@dataclass(frozen=True)
class MultihopParams:
    rounds: int = 2  # bridge rounds after the first retrieval
    bridges: int = 3  # bridge entities followed per round
    hits: int = 5  # best hits of the fused list bridges are read from
    depth: int = 50  # hits taken from each retrieval into the fusion
    bridge_weight: float = 1.0  # weight of a bridge retrieval's list against the query's own (1)
    rrf_k: int = 60
    phrases: bool = False  # noun phrases may bridge too (else only titles and other named entities)

    def check(self) -> str:
        if not 0 <= self.rounds <= 5:
            return "rounds must be between 0 and 5"
        if self.bridges < 1 or self.hits < 1 or self.depth < 1:
            return "bridges, hits and depth must be positive"
        if self.bridge_weight < 0:
            return "bridge_weight must not be negative"
        return "" if self.rrf_k >= 1 else "rrf_k must be positive"


@dataclass
class Bridge:
    entity: int
    name: str
    score: float
    title: bool  # it is the title of a document
    found: list[str] = field(default_factory=list)  # documents its retrieval brought into the top hits


class MultihopRetriever:
    name = "multihop"

    def __init__(self, ctx: SearchContext, fusion: FusionConfig, params: MultihopParams | None = None) -> None:
        self.ctx = ctx
        self.fusion = fusion
        self.params = params or MultihopParams()

    def retrieve(self, query: str, k: int = 10, filters: Filter | None = None) -> RetrievalResult:
        timer = Timer()
        p = self.params
        ctx = self.ctx
        if ctx.graph is None:
            raise WaypostError("this search context has no graph: multihop needs an engine's collection")
        mask = ctx.prefilter(filters, timer)
        live = ctx.graph
        with timer.stage("graph"):
            graph = live.get()
            assert graph is not None
            titled: frozenset[int] = live.derived("titled", lambda g: frozenset(g.row_title.values()))
        depth = max(k, p.depth)
        positions, _scores, stages = hybrid_search(ctx, query, depth, mask, self.fusion, timer)
        lists: list[tuple[Positions, float]] = [(positions, 1.0)]
        fused, fused_scores = _rrf(lists, p.rrf_k)
        with timer.stage("bridges"):
            analyzer = ctx.indexes.analyzers(ctx.indexes.query_language(query))
            query_terms = set(analyzer.terms(query))
            query_words = f" {' '.join(_WORD.findall(entity_key(query)))} "
        used: set[int] = set()
        notes: list[str] = []
        any_entities = False
        for round_no in range(1, p.rounds + 1):
            with timer.stage("bridges"):
                top_rows = [int(ctx.indexes.row_ids[pos]) for pos in fused[: p.hits].tolist()]
                any_entities = any_entities or any(graph.row_entities.get(r) for r in top_rows)
                chosen = _bridges(graph, titled, top_rows, used, query_words, query_terms, analyzer.terms, p)
            if not chosen:
                break
            before = set(_documents(ctx, fused[:k]))
            for b in chosen:
                used.add(b.entity)
                sub = SearchContext(ctx.collection, ctx.indexes, ctx.embedder, ctx.store, ctx.coverage, ctx.tree,
                                    ctx.graph)  # fmt: skip
                b_pos, _b_scores, _ = hybrid_search(sub, f"{query} {b.name}", depth, mask, self.fusion, timer)
                lists.append((b_pos, p.bridge_weight))
                b.found = [d for d in _documents(ctx, b_pos[:3]) if d not in before]
            with timer.stage("fusion"):
                fused, fused_scores = _rrf(lists, p.rrf_k)
            notes.append(f"round {round_no} bridges: " + ", ".join(_describe(b) for b in chosen))
        if p.rounds == 0:
            notes.append("rounds=0: hybrid results")
        elif not notes:
            if not any_entities:
                notes.append("the graph records no entity for the top hits: no bridge extracted, hybrid results")
            else:
                notes.append("no bridge entity in the top hits that the query does not already name: hybrid results")
        out_pos, out_scores = fused[:k], fused_scores[:k]
        stages["multihop"] = ranked_table(out_pos, out_scores)
        with timer.stage("fetch"):
            hits = ctx.hits(out_pos, out_scores, self.name, stages)
        timer.notes = list(dict.fromkeys(timer.notes))  # each retrieval notes its language
        explanation = ctx.explain(self.name, query, query, filters, mask, timer)
        explanation.notes.extend(notes)
        explanation.notes.append(
            f"rounds={p.rounds} bridges={p.bridges} retrievals={len(lists)} rrf_k={p.rrf_k} "
            f"bridge_weight={p.bridge_weight}"
        )
        return RetrievalResult(hits, explanation)


def _bridges(
    graph: KnowledgeGraph,
    titled: frozenset[int],
    rows: list[int],
    used: set[int],
    query_words: str,
    query_terms: set[str],
    terms: Callable[[str], list[str]],
    p: MultihopParams,
) -> list[Bridge]:
    """The best ``p.bridges`` entities of the chunks ``rows`` (best first) that the query does not name."""
    found: dict[int, Bridge] = {}
    for rank, row in enumerate(rows):
        own = graph.row_title.get(row)  # the hit's own document: not a bridge to another
        for eid in graph.row_entities.get(row, []):
            if eid == own or eid in used:
                continue
            e = graph.entities.get(eid)
            if e is None or _named_in(e, query_words):
                continue
            is_title = eid in titled
            if not is_title and e.kind != NAMED and not p.phrases:
                continue
            prior = 1.0 if is_title else 0.5 if e.kind == NAMED else 0.25
            if e.label in WEAK_LABELS:
                prior *= 0.2
            sentence = e.sentences.get(row, "")
            overlap = 0.0
            if sentence and query_terms:
                words = set(terms(sentence))
                overlap = len(words & query_terms) / len(query_terms)
            score = prior * specificity(e) * (0.5 + overlap) / (1.0 + 0.5 * rank)
            if eid not in found or score > found[eid].score:
                found[eid] = Bridge(eid, e.name, score, is_title)
    return sorted(found.values(), key=lambda b: (-b.score, b.entity))[: p.bridges]


def _named_in(e: Entity, query_words: str) -> bool:
    words = _WORD.findall(e.key)
    return bool(words) and f" {' '.join(words)} " in query_words


def _rrf(lists: list[tuple[Positions, float]], rrf_k: int) -> tuple[Positions, Scores]:
    total: dict[int, float] = {}
    for positions, weight in lists:
        for rank, pos in enumerate(positions.tolist(), start=1):
            total[int(pos)] = total.get(int(pos), 0.0) + weight / (rrf_k + rank)
    ordered = sorted(total.items(), key=lambda kv: (-kv[1], kv[0]))
    out_pos = np.asarray([pos for pos, _s in ordered], dtype=np.int64)
    out_scores = np.asarray([s for _p, s in ordered], dtype=np.float32)
    return out_pos, out_scores


def _documents(ctx: SearchContext, positions: Positions) -> list[str]:
    return list(dict.fromkeys(ctx.indexes.document_of(int(pos)) for pos in positions.tolist()))


def _describe(b: Bridge) -> str:
    kind = "title" if b.title else "entity"
    found = f" -> {', '.join(b.found)}" if b.found else ""
    return f"{b.name} ({kind} {b.score:.2f}){found}"


__all__ = ["MultihopParams", "MultihopRetriever"]
