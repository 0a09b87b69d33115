"""How several collections' results become one when stage 1 fuses them, a stress test on the mixed
workload's TRAIN split: each query's own collection and its runner-up are fused as if stage 1 had found them
close (both orders). Reciprocal rank fusion weighted by the two probabilities (fusion happens when the second
is at least half as likely as the first), against what ``Engine.search`` does (``route.search.
fuse_collections``: under one embedding model that covers the query's language, each result keeps its order
and the next hit comes from the result whose next hit is most similar to the query; otherwise rank fusion).
"merged by similarity" is the share of queries merged so. Scores beside the own collection alone; qmsum's
questions carry their meeting and have one collection. Run after ``waypost bench mixed``; it reads a copy of
that store (``/tmp/waypost-bench-collections/store``, made by ``bench_collections.py``).

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/bench_fusion_merge.py --limit 40

Measured 2026-11-28 (188 training queries; means over fiction-multihop, hotpotqa-100, netflix, scifact and
xquad-th): own collection alone 0.907; rank fusion at a tie 0.822; fuse_collections at a tie 0.852 with the
own collection first and 0.785 with the runner-up first (the Thai questions fall back to rank fusion; on the
other four sets the merge does not depend on the order: 0.982, 0.913, 0.692, 0.737). At half the
probability, rank fusion is the leading collection alone: 0.907 when it is the right one, 0.068 when not.
Heads against the best cosine left in each list (no low hit holds its list back): 0.814, netflix 0.478
against 0.692, so heads it is.
"""

from __future__ import annotations

import argparse
import os
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

from waypost.engine import Engine, EngineConfig
from waypost.evaluation.mixed import EVIDENCE1000, MixedQuery, default_workload
from waypost.evaluation.mixed_bench import scored_rows
from waypost.evaluation.outcomes import DOC_DEPTH, SPAN_K, score
from waypost.route.base import CollectionChoice
from waypost.route.execute import fuse_results, merge_by_similarity
from waypost.route.search import choose_collections, fuse_collections, hit_similarities
from waypost.types import RetrievalResult

COPY = Path("/tmp/waypost-bench-collections/store")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=40, help="queries per set")
    ap.add_argument("--strategy", default="auto")
    args = ap.parse_args()
    engine = Engine(COPY, EngineConfig(background_index_work=False))
    rows: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for q in default_workload(None).queries("train", limit=args.limit):
        if q.filters is not None:
            continue
        choice = choose_collections(engine, q.text, q.filters)
        others = sorted((c for c in choice.scores if c != q.collection), key=lambda c: -choice.scores[c])
        if not others:
            continue
        k = SPAN_K if q.metric == EVIDENCE1000 else DOC_DEPTH * 3
        own = engine.collection(q.collection).retrieve(q.text, args.strategy, k)
        other = engine.collection(others[0]).retrieve(q.text, args.strategy, k)
        row = rows[q.set]

        def scored(result: RetrievalResult, q: MixedQuery = q) -> float:
            return float(score(q, scored_rows(result, q.collection)))

        def tied(first: str, second: str) -> CollectionChoice:
            return CollectionChoice([first, second], 0.5, "forced tie", "bench", {first: 0.5, second: 0.5})

        row["own alone"].append(scored(own))
        for label, weights in (("tie", (1.0, 1.0)), ("half", (1.0, 0.5)), ("half, runner-up first", (0.5, 1.0))):
            row[f"rank fusion, {label}"].append(scored(fuse_results(q.text, [own, other], k, list(weights))))
        shipped = fuse_collections(engine, q.text, tied(q.collection, others[0]), [own, other], k)
        row["fuse_collections, tie"].append(scored(shipped))
        swapped = fuse_collections(engine, q.text, tied(others[0], q.collection), [other, own], k)
        row["fuse_collections, tie, runner-up first"].append(scored(swapped))
        row["merged by similarity"].append(float("similarity" in shipped.explanation.notes[-1]))
        # the alternative to heads: each list led by the best cosine left in it (no low hit holds a list back)
        vector = np.asarray(engine.collection(q.collection).embedder.embed_query(q.text), np.float32).reshape(-1)
        sims = [
            hit_similarities(engine.collection(name), vector, r.hits)
            for name, r in ((q.collection, own), (others[0], other))
        ]
        rest = [np.maximum.accumulate(np.asarray(s[::-1]))[::-1].tolist() for s in sims]
        row["merged by the best cosine left"].append(scored(merge_by_similarity(q.text, [own, other], rest, k)))
    engine.close()
    sets = sorted(rows)
    print(f"{'':40}" + "".join(f"{s[:12]:>13}" for s in sets) + f"{'mean':>9}")
    for key in next(iter(rows.values())):
        values = [float(np.mean(rows[s][key])) for s in sets]
        print(f"{key:40}" + "".join(f"{v:13.4f}" for v in values) + f"{np.mean(values):9.4f}")
    print("queries:", {s: len(rows[s]["own alone"]) for s in sets})


if __name__ == "__main__":
    main()
