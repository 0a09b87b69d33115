"""How several collections' results become one when stage 1 fuses them, a stress test on the mixed
workload's TRAIN split: each query's own collection and its runner-up are fused as if stage 1 had found them
close (both orders; fusion happens when the second is at least half as likely as the first). Reciprocal rank
fusion weighted by the two probabilities, against the merge ``Engine.search`` uses under one embedding
model (``route.execute.merge_by_similarity``: each result keeps its order; the next hit comes from the
result whose next hit is most similar to the query). Scores beside the own collection alone; qmsum's
questions carry their meeting and have one collection. Run after ``waypost bench mixed``; it reads a copy of
that store (``/tmp/waypost-bench-collections/store``, made by ``bench_collections.py``).

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/bench_fusion_merge.py --limit 40
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
from waypost.route.execute import fuse_results, merge_by_similarity
from waypost.route.search import choose_collections, hit_similarities
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
        mine, theirs = engine.collection(q.collection), engine.collection(others[0])
        own = mine.retrieve(q.text, args.strategy, k)
        other = theirs.retrieve(q.text, args.strategy, k)
        vector = np.asarray(mine.embedder.embed_query(q.text), dtype=np.float32).reshape(-1)
        sims = [hit_similarities(mine, vector, own.hits), hit_similarities(theirs, vector, other.hits)]
        row = rows[q.set]

        def scored(result: RetrievalResult, q: MixedQuery = q) -> float:
            return float(score(q, scored_rows(result, q.collection)))

        row["own alone"].append(scored(own))
        for label, weights in (("tie", (1.0, 1.0)), ("half", (1.0, 0.5)), ("half, runner-up first", (0.5, 1.0))):
            row[f"rank fusion, {label}"].append(scored(fuse_results(q.text, [own, other], k, list(weights))))
        row["similarity merge"].append(scored(merge_by_similarity(q.text, [own, other], sims, k)))
        row["similarity merge, runner-up first"].append(
            scored(merge_by_similarity(q.text, [other, own], sims[::-1], k))
        )
    engine.close()
    sets = sorted(rows)
    print(f"{'':36}" + "".join(f"{s[:12]:>13}" for s in sets) + f"{'mean':>9}")
    for key in next(iter(rows.values())):
        values = [float(np.mean(rows[s][key])) for s in sets]
        print(f"{key:36}" + "".join(f"{v:13.4f}" for v in values) + f"{np.mean(values):9.4f}")
    print("queries:", {s: len(rows[s]["own alone"]) for s in sets})


if __name__ == "__main__":
    main()
