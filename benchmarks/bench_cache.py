"""Query cache hit rate on a replayed workload, and what a hit and a put cost.

The workload: the TEST queries of the six mixed sets (as ``bench_collections.py`` loads them), each given a
popularity rank by a seeded shuffle, replayed as a stream of ``--n`` queries: with probability
``--unique`` the next query is one never asked before (the long tail of one-off queries; about half of a
search log's queries are one-offs), else one drawn with probability proportional to ``1 / rank**s``
(Zipf; ``s`` about 1 is typical of search logs). A share of repeats is
retyped (other case, doubled spaces) as users do; normalization must still hit. Queries arrive every
``--gap`` seconds on an injected clock, so the TTL (1,800 s) matters; every ``--write-every`` queries one
collection (drawn at random) takes a write, which moves its version and so invalidates its entries. Each
query's key is built exactly as ``cache_key`` builds it (pipeline "auto", k 10, the qmsum meeting filter).

    PYTHONPATH=src python benchmarks/bench_cache.py --json
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_collections import SETS, load_queries

from waypost.route.cache import CacheKey, QueryCache, normalize_query
from waypost.types import Chunk, Explanation, Hit, Provenance, RetrievalResult


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def retype(text: str, rng: random.Random) -> str:
    """What a user retyping the query might send: other case, extra spaces."""
    choice = rng.random()
    if choice < 0.3:
        return text.lower()
    if choice < 0.6:
        return "  " + text.replace(" ", "  ") + " "
    return text


def replay(
    queries: list[Any], n: int, s: float, gap: float, write_every: int, unique: float, seed: int = 0
) -> dict[str, Any]:
    rng = random.Random(seed)
    order = list(range(len(queries)))
    rng.shuffle(order)
    head = len(order) // 2  # popular queries come from one half; one-offs from the other, never repeated
    weights = np.array([1.0 / (rank + 1) ** s for rank in range(head)])
    weights /= weights.sum()
    zipf = np.random.default_rng(seed).choice(head, size=n, p=weights)
    tail = iter(range(head, len(order)))
    picks = [next(tail, int(z)) if rng.random() < unique else int(z) for z in zipf]
    clock = Clock()
    cache = QueryCache(clock=clock)
    versions = {name: 0 for name in SETS}
    seen: set[int] = set()
    writes = 0
    for step, rank in enumerate(picks):
        clock.now = step * gap
        if write_every and step and step % write_every == 0:
            versions[rng.choice(SETS)] += 1
            writes += 1
        q = queries[order[int(rank)]]
        text = retype(q.text, rng) if int(rank) in seen else q.text
        seen.add(int(rank))
        key = CacheKey(
            normalize_query(text),
            "auto",
            10,
            q.set,
            "" if q.filters is None else str(q.filters),
            "all-MiniLM-L6-v2",
            f"v{versions[q.set]}",
        )
        if cache.get(key) is None:
            cache.put(key, RetrievalResult([], Explanation("auto", text, text)))
    stats = cache.stats()
    distinct = len(set(int(r) for r in picks))
    return {
        "zipf_s": s,
        "stream": n,
        "distinct_queries": distinct,
        "repeat_ceiling": round(1 - distinct / n, 4),  # the hit rate of an unbounded cache without writes or TTL
        "writes": writes,
        "hit_rate": round(stats["hit_rate"], 4),
        "evictions": stats["evictions"],
        "expirations": stats["expirations"],
    }


def hit_cost(repeat: int = 2000) -> dict[str, float]:
    """Microseconds per get (a hit) and per put of a 10-hit result."""
    hits = [
        Hit(
            Chunk(f"doc{i}", 0, "word " * 150, 0, 750, 150),
            1.0 / (i + 1),
            "hybrid",
            Provenance("c", f"title {i}", f"src/{i}", {"dense": 0.5}, {"dense": i}),
            {"year": 2020},
        )
        for i in range(10)
    ]
    result = RetrievalResult(hits, Explanation("hybrid", "q", "q", timings_ms={"dense": 1.0, "bm25": 2.0}))
    cache = QueryCache()
    key = CacheKey("q", "auto", 10, "c", "", "m", "v")
    started = time.perf_counter()
    for _ in range(repeat):
        cache.put(key, result)
    put_us = (time.perf_counter() - started) / repeat * 1e6
    started = time.perf_counter()
    for _ in range(repeat):
        cache.get(key)
    get_us = (time.perf_counter() - started) / repeat * 1e6
    return {"get_hit_us": round(get_us, 1), "put_us": round(put_us, 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1500)
    ap.add_argument("--gap", type=float, default=2.0, help="seconds between queries (simulated)")
    ap.add_argument("--write-every", type=int, default=500)
    ap.add_argument("--unique", type=float, default=0.5, help="share of one-off queries in the stream")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    queries = [q for q in load_queries(SETS) if q.split == "test"]
    runs = [replay(queries, args.n, s, args.gap, args.write_every, args.unique) for s in (0.8, 1.0, 1.2)]
    runs.append({**replay(queries, args.n, 1.0, args.gap, 0, args.unique), "note": "no writes"})
    runs.append({**replay(queries, args.n, 1.0, args.gap, args.write_every, 0.0), "note": "no one-off queries"})
    report = {
        "test_queries": len(queries),
        "gap_s": args.gap,
        "unique": args.unique,
        "write_every": args.write_every,
        "runs": runs,
        "cost": hit_cost(),
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for run in runs:
            print(run)
        print(report["cost"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
