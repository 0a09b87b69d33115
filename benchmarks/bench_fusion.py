"""Stage-1 fusion rules on the mixed workload's store, end to end, on one split (``train`` by default: the
split to tune on). For every query the embedding selector's probabilities are computed once; each candidate
rule then decides which collections are searched and with what weights, and ``Engine.search(query,
strategy="auto")`` runs with that choice (a choice already run for the same query is reused). Reports per
candidate and set: the mean metric over all the set's queries, how many queries stage 1 fused, how many it
sent elsewhere alone, and the best fixed pipeline of the outcome table for comparison.

A candidate is ``ratio=R[,below=C][,power=P]``: collections within R of the best probability are fused
(R > 1: never), only when the best probability is below C (default 1: always), with fusion weights
``p ** P`` (default 1, the probabilities). Run after ``waypost bench mixed`` (it reads the store's outcomes).

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/bench_fusion.py --split train \
        --candidate ratio=0.5 --candidate ratio=0.7 --candidate ratio=0.85 --candidate ratio=1.01

Measured 2026-11-26 on the train split (967 queries, 464 s on 2 shared cores) with those four and
``ratio=0.5,below=0.8``, ``ratio=0.5,below=0.6``, ``ratio=0.5,power=2``, ``ratio=0.5,power=4``: every candidate
scored the same on every set (mean over the sets 0.8544; 9, 4, 2 and 0 queries fused for ratios 0.5, 0.7, 0.85
and never). Under probability weights a fused query's score matched never fusing on all 9. The default stays
0.5, which searches the query's own collection for all but 1 query (the others: all but 2).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from waypost.engine import Engine
from waypost.evaluation.mixed import EVIDENCE1000, default_store, default_workload, with_sets
from waypost.evaluation.outcomes import DOC_DEPTH, SPAN_K, OutcomeCache, outcome_table, score
from waypost.filters.model import Filter
from waypost.route.base import CollectionChoice
from waypost.route.collections import MAX_FUSED, EmbeddingCollectionSelector
from waypost.route.model import DEFAULT_PROFILE, GainModel
from waypost.route.router import Router
from waypost.route.selectors.learned import LearnedSelector


@dataclass(frozen=True)
class Rule:
    ratio: float
    below: float = 1.0
    power: float = 1.0

    @classmethod
    def parse(cls, text: str) -> Rule:
        raw = dict(part.split("=", 1) for part in text.split(","))
        return cls(float(raw["ratio"]), float(raw.get("below", 1.0)), float(raw.get("power", 1.0)))

    def label(self) -> str:
        return f"ratio={self.ratio},below={self.below},power={self.power}"

    def choose(self, scores: dict[str, float]) -> CollectionChoice:
        order = sorted(scores, key=lambda n: -scores[n])
        best = scores[order[0]]
        fuse = best < self.below
        chosen = order[:1] + [n for n in order[1:MAX_FUSED] if fuse and scores[n] >= self.ratio * best]
        weights = {n: scores[n] ** self.power for n in chosen} if len(chosen) > 1 else dict(scores)
        return CollectionChoice(chosen, sum(scores[n] for n in chosen), "bench_fusion", "embedding", weights)


class Fixed:
    """A collection selector answering a prepared choice."""

    name = "embedding"

    def __init__(self) -> None:
        self.choice: CollectionChoice | None = None

    def select(self, query: str, collections: Sequence[str], filters: Filter | None = None) -> CollectionChoice:
        assert self.choice is not None
        return self.choice


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=default_store())
    parser.add_argument("--data", type=Path, default=None, help="the shared sets (default ../shared/data)")
    parser.add_argument("--split", choices=("train", "test"), default="train")
    parser.add_argument("--set", action="append", default=[], help="only these sets (repeat)")
    parser.add_argument("--limit", type=int, default=None, help="at most N queries per set")
    parser.add_argument("--profile", type=Path, default=DEFAULT_PROFILE)
    parser.add_argument("--candidate", action="append", default=[], help="ratio=R[,below=C][,power=P] (repeat)")
    args = parser.parse_args()
    rules = [Rule.parse(c) for c in args.candidate] or [Rule(0.5)]

    workload = default_workload(args.data)
    if args.set:
        workload = with_sets(workload, args.set)
    engine = Engine(args.store)
    router = Router.from_engine(engine)
    router.use_selector(LearnedSelector(GainModel.load(args.profile)))
    engine.use_router(router)
    table = outcome_table(list(OutcomeCache.under(args.store).rows.values()))
    selector = EmbeddingCollectionSelector(engine, fuse_ratio=0.0)
    fixed = Fixed()
    names = [info.name for info in engine.collections() if info.chunks > 0]
    sums: dict[Rule, dict[str, Counter[str]]] = {r: defaultdict(Counter) for r in rules}
    values: dict[Rule, dict[str, list[float]]] = {r: defaultdict(list) for r in rules}
    best_fixed: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    queries = workload.queries(args.split, args.limit)
    started = time.perf_counter()
    try:
        for q in queries:
            for label, outcome in table.get(q.id, {}).items():
                best_fixed[q.set][label] += outcome.value
            k = SPAN_K if q.metric == EVIDENCE1000 else DOC_DEPTH * 3
            full = selector.select(q.text, names, q.filters)
            scores = dict(full.scores)  # every allowed collection's probability
            memo: dict[tuple[Any, ...], float] = {}
            for rule in rules:
                choice = rule.choose(scores)
                key = (tuple(choice.collections), tuple(round(choice.scores[n], 6) for n in choice.collections))
                if key not in memo:
                    fixed.choice = choice
                    engine.use_collection_selector(fixed)
                    result = engine.search(q.text, k, strategy="auto", filters=q.filters)
                    hits = [
                        (h.chunk.document_id, h.chunk.start, h.chunk.end, max(1, h.chunk.token_count))
                        for h in result.hits
                    ]
                    memo[key] = score(q, hits)
                values[rule][q.set].append(memo[key])
                stats = sums[rule][q.set]
                stats["queries"] += 1
                if len(choice.collections) > 1:
                    stats["fused"] += 1
                    stats["fused_with_own" if q.collection in choice.collections else "fused_without_own"] += 1
                elif choice.collections != [q.collection]:
                    stats["elsewhere_alone"] += 1
    finally:
        engine.close()
    out: dict[str, Any] = {}
    for rule in rules:
        per_set: dict[str, dict[str, Any]] = {}
        for s, vals in values[rule].items():
            n = len(vals)
            best_label = max(best_fixed[s], key=lambda lbl: best_fixed[s][lbl])
            best = best_fixed[s][best_label] / n
            per_set[s] = {
                "auto": round(sum(vals) / n, 4),
                "best_fixed": round(best, 4),
                "best_fixed_label": best_label,
                "gap_points": round(100 * (sum(vals) / n - best), 2),
                **dict(sums[rule][s]),
            }
        mean = sum(v["auto"] for v in per_set.values()) / max(1, len(per_set))
        out[rule.label()] = {
            "mean_over_sets": round(mean, 4),
            "fused": sum(v.get("fused", 0) for v in per_set.values()),
            "sets": per_set,
        }
    summary = {"split": args.split, "queries": len(queries), "seconds": round(time.perf_counter() - started, 1)}
    print(json.dumps({**summary, "candidates": out}, indent=1))


if __name__ == "__main__":
    main()
