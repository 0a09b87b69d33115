"""Outcome tables: every pipeline of a pool run on every query of a workload split, one row per (query,
pipeline) with the set's metric and the latency. Rows are cached as JSONL under the store directory,
keyed by pipeline label, query id and the collection's generation, so a re-run computes only what is
missing. Each row keeps its ranked hits, so fusions of pipelines are scored offline exactly as
``route.execute.fuse_results`` would rank them."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from waypost.engine import Engine
from waypost.evaluation.metrics import evidence_at_budget, ndcg_at, recall_at
from waypost.evaluation.mixed import EVIDENCE1000, NDCG10, RECALL5, MixedQuery, Workload, runnable
from waypost.index.state_files import atomic_write
from waypost.progress import track
from waypost.route.base import Pipeline
from waypost.route.execute import RRF_K, run_pipeline

log = logging.getLogger("waypost.evaluation.outcomes")

DOC_DEPTH = 10  # distinct documents a document-level metric reads
SPAN_K = 20  # chunks (or passages) an evidence metric reads: more than 1,000 tokens
HitRow = tuple[str, int, int, int]  # document id, start, end, token count


@dataclass
class Outcome:
    query_id: str
    set: str
    collection: str
    pipeline: str  # label
    value: float  # the set's metric
    latency_ms: float
    generation: int
    hits: list[HitRow] = field(default_factory=list)

    def key(self) -> tuple[str, str, int]:
        return (self.pipeline, self.query_id, self.generation)

    def row(self) -> dict[str, Any]:
        """What the issue calls a per-query row (without the hits)."""
        return {k: v for k, v in asdict(self).items() if k not in ("hits", "generation")}


def ranked_docs(hits: Sequence[HitRow], depth: int = DOC_DEPTH) -> list[str]:
    out: list[str] = []
    for doc, *_ in hits:
        if doc not in out:
            out.append(doc)
            if len(out) == depth:
                break
    return out


def score(query: MixedQuery, hits: Sequence[HitRow]) -> float:
    """The query's set metric on a ranked list of hits."""
    if query.metric == EVIDENCE1000:
        return evidence_at_budget(list(hits), list(query.spans), 1000)[0]
    ranked = ranked_docs(hits)
    if query.metric == NDCG10:
        return ndcg_at(ranked, query.gold, 10)
    if query.metric == RECALL5:
        return recall_at(ranked, query.gold, 5)
    raise ValueError(f"unknown metric {query.metric!r}")


def fuse_hits(lists: Sequence[Sequence[HitRow]], k: int) -> list[HitRow]:
    """Reciprocal rank fusion of ranked hit lists, by chunk span (``route.execute.fuse_results``)."""
    scores: dict[tuple[str, int, int], float] = {}
    first: dict[tuple[str, int, int], HitRow] = {}
    for hits in lists:
        for rank, hit in enumerate(hits[:k], start=1):
            key = (hit[0], hit[1], hit[2])
            scores[key] = scores.get(key, 0.0) + 1.0 / (RRF_K + rank)
            first.setdefault(key, hit)
    return [first[key] for key in sorted(scores, key=lambda key: -scores[key])[:k]]


def interleave_hits(lists: Sequence[Sequence[HitRow]], k: int) -> list[HitRow]:
    """Round-robin over ranked hit lists, the first leading each round, each chunk span once
    (``route.execute.interleave_results``, the planner's fusion of sub-queries)."""
    seen: set[tuple[str, int, int]] = set()
    out: list[HitRow] = []
    for rank in range(max((len(h) for h in lists), default=0)):
        for hits in lists:
            if rank < len(hits) and len(out) < k and (key := hits[rank][:3]) not in seen:
                seen.add(key)
                out.append(hits[rank])
    return out


def retrieve_hits(engine: Engine, query: MixedQuery, pipeline: Pipeline) -> list[HitRow]:
    """The hits a metric reads: enough chunks for ``DOC_DEPTH`` distinct documents, or ``SPAN_K`` chunks."""
    col = engine.collection(query.collection)
    k = SPAN_K if query.metric == EVIDENCE1000 else DOC_DEPTH * 3
    while True:
        result = run_pipeline(col, pipeline, query.text, k, query.filters)
        hits = [(h.chunk.document_id, h.chunk.start, h.chunk.end, max(1, h.chunk.token_count)) for h in result.hits]
        if query.metric == EVIDENCE1000 or len(ranked_docs(hits)) >= DOC_DEPTH or len(hits) < k or k >= 240:
            return hits
        k *= 2


class OutcomeCache:
    """The JSONL file of outcome rows under a store (``<store>/outcomes/outcomes.jsonl``); appended as rows
    are computed, so an interrupted pass keeps what it did."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows: dict[tuple[str, str, int], Outcome] = {}
        if path.exists():
            with path.open(encoding="utf-8") as fh:
                for line in fh:
                    if not line.strip():
                        continue
                    try:
                        raw = json.loads(line)
                    except json.JSONDecodeError:  # a line cut short by an interrupted run: computed again
                        log.warning("skipping an unreadable outcome row in %s", path)
                        continue
                    raw["hits"] = [tuple(h) for h in raw.get("hits", [])]
                    outcome = Outcome(**raw)
                    self.rows[outcome.key()] = outcome

    @classmethod
    def under(cls, store: Path) -> OutcomeCache:
        return cls(store / "outcomes" / "outcomes.jsonl")

    def get(self, pipeline: str, query_id: str, generation: int) -> Outcome | None:
        return self.rows.get((pipeline, query_id, generation))

    def prune(self, generations: dict[str, int]) -> int:
        """Drop the rows of ``generations``' collections computed at another generation (their hits may name
        deleted documents, and they are never read again); the file is rewritten atomically. Returns how
        many rows went."""
        stale = [
            key
            for key, o in self.rows.items()
            if o.collection in generations and o.generation != generations[o.collection]
        ]
        if not stale:
            return 0
        for key in stale:
            del self.rows[key]
        atomic_write(self.path, "".join(json.dumps(asdict(o)) + "\n" for o in self.rows.values()))
        return len(stale)

    def add(self, outcomes: list[Outcome]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as fh:
            for outcome in outcomes:
                self.rows[outcome.key()] = outcome
                fh.write(json.dumps(asdict(outcome)) + "\n")


def run_outcomes(
    engine: Engine,
    workload: Workload,
    pipelines: Sequence[Pipeline],
    split: str,
    limit: int | None = None,
    show_progress: bool = False,
    cache: OutcomeCache | None = None,
) -> list[Outcome]:
    """One row per (query, pipeline) for every pipeline runnable on the query's collection (a pipeline
    whose tree or graph is missing is left out, never built here). Cached rows' hits are reused and scored
    against the query's gold as it is now (feedback adds relevant documents without a new generation)."""
    cache = cache or OutcomeCache.under(engine.path)
    queries = workload.queries(split, limit)
    generations = {s.name: engine.store.generation(s.name) for s in workload.sets}
    can_run = {(s.name, p): runnable(engine, s.name, p) for s in workload.sets for p in pipelines}
    out: list[Outcome] = []
    todo: list[tuple[MixedQuery, Pipeline]] = []
    for q in queries:
        for p in pipelines:
            if not can_run[(q.collection, p)]:
                continue
            found = cache.get(p.label, q.id, generations[q.collection])
            if found is not None:  # rescored: the hits hold at one generation, the gold may have grown since
                out.append(replace(found, value=score(q, found.hits)))
            else:
                todo.append((q, p))
    if todo:
        log.info("%d outcomes cached, %d to run", len(out), len(todo))
    pending: list[Outcome] = []
    for q, p in track(todo, show_progress, f"{split} outcomes"):
        t0 = time.perf_counter()
        hits = retrieve_hits(engine, q, p)
        ms = (time.perf_counter() - t0) * 1000.0
        outcome = Outcome(
            q.id, q.set, q.collection, p.label, score(q, hits), round(ms, 2), generations[q.collection], hits
        )
        out.append(outcome)
        pending.append(outcome)
        if len(pending) >= 50:
            cache.add(pending)
            pending = []
    cache.add(pending)
    return out


def outcome_table(outcomes: Sequence[Outcome]) -> dict[str, dict[str, Outcome]]:
    """query id -> pipeline label -> outcome."""
    table: dict[str, dict[str, Outcome]] = {}
    for o in outcomes:
        table.setdefault(o.query_id, {})[o.pipeline] = o
    return table
