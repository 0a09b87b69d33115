"""Stage-1 fusion weighted by the corrective loop's grade, a stress test on the mixed workload's TRAIN split:
each query's own collection and its runner-up are fused as if stage 1 had tied them (both orders), with
weights grade**g for several g, or the better-graded collection alone ("pick"). Scores beside the own
collection alone. Run after ``waypost bench mixed`` (it reads that store).

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/bench_fusion_grades.py --limit 60

Measured 2026-11-27 night (237 queries; qmsum's carry their meeting and have one collection): the grade
preferred the own collection for 71% of queries; means over the sets, own alone 0.909, equal weights 0.64
(runner-up first) and 0.82 (own first), grade weights 0.74-0.76, pick 0.65-0.73. Not adopted: result grades are not
comparable across collections, so stage 1's probabilities stay the fusion weights.
"""

from __future__ import annotations

import argparse
import os
from collections import defaultdict

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

from waypost.engine import Engine, EngineConfig
from waypost.evaluation.mixed import EVIDENCE1000, default_store, default_workload
from waypost.evaluation.mixed_bench import scored_rows
from waypost.evaluation.outcomes import DOC_DEPTH, SPAN_K, score
from waypost.route.corrective import QualityEvaluator
from waypost.route.execute import fuse_results
from waypost.route.search import choose_collections

EXPONENTS = (0, 1, 2, 4, 8)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=60, help="queries per set")
    args = ap.parse_args()
    engine = Engine(default_store(), EngineConfig())
    grader = QualityEvaluator()
    rows: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for q in default_workload(None).queries("train", limit=args.limit):
        if q.filters is not None:
            continue
        choice = choose_collections(engine, q.text, q.filters)
        others = sorted((c for c in choice.scores if c != q.collection), key=lambda c: -choice.scores[c])
        if not others:
            continue
        k = SPAN_K if q.metric == EVIDENCE1000 else DOC_DEPTH * 3
        own = engine.collection(q.collection).retrieve(q.text, "auto", k)
        other = engine.collection(others[0]).retrieve(q.text, "auto", k)
        g_own, g_other = grader.grade(q.text, own).score, grader.grade(q.text, other).score
        row = rows[q.set]
        row["own alone"].append(score(q, scored_rows(own, q.collection)))
        row["own graded higher"].append(float(g_own > g_other))
        orders = (("own first", [own, other], [g_own, g_other]), ("runner-up first", [other, own], [g_other, g_own]))
        for lead, pair, grades in orders:
            for g in EXPONENTS:
                fused = fuse_results(q.text, pair, k, [max(x, 1e-6) ** g for x in grades])
                row[f"{lead}, grade**{g}"].append(score(q, scored_rows(fused, q.collection)))
            row[f"{lead}, pick"].append(score(q, scored_rows(pair[int(np.argmax(grades))], q.collection)))
    engine.close()
    sets = sorted(rows)
    print(f"{'':28}" + "".join(f"{s[:12]:>13}" for s in sets) + f"{'mean':>9}")
    for key in next(iter(rows.values())):
        values = [float(np.mean(rows[s][key])) for s in sets]
        print(f"{key:28}" + "".join(f"{v:13.4f}" for v in values) + f"{np.mean(values):9.4f}")


if __name__ == "__main__":
    main()
