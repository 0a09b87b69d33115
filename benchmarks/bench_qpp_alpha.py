"""Per-query hybrid weighting from query performance prediction (MoR-style), on a split of the mixed workload.

For each query: the dense and BM25 top 100 (as ``hybrid`` takes them), then the weighted fusion at fixed
dense weights, and at a per-query weight moved away from the default 0.4 by how much sharper one side's
scores are than the other's (a sigmoid of the log ratio of a QPP measure, centred on the split's median
ratio, slope ``b``; each per-query weight is scored at the nearest of the eight fixed weights). Prints each
set's mean metric per fixed weight, the per-query best weight (the oracle of this family) and, per QPP
measure and slope, the mean with the per-query weight. In-sample: a slope chosen here would be tuned on
the split it is scored on, so read it on ``--split train`` only.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/bench_qpp_alpha.py --set scifact --split train
"""

from __future__ import annotations

import argparse
import json
import math
import os
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import numpy.typing as npt

from waypost.context import Timer
from waypost.engine import Engine
from waypost.evaluation.mixed import EVIDENCE1000, default_store, default_workload, with_sets
from waypost.evaluation.outcomes import DOC_DEPTH, SPAN_K, score
from waypost.index.topk import top_k
from waypost.retrieval.fusion import FusionConfig, RankedList, follow_references, fuse

ALPHAS = (0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0)
SLOPES = (-1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0)
DEFAULT_ALPHA = 0.4


def qpp(scores: npt.NDArray[np.float32]) -> dict[str, float]:
    """Scale-free sharpness of one retriever's top 100: top-5 lift over the mean, top-1 gap, top-10 spread."""
    s = np.asarray(scores, dtype=np.float64)
    if s.size < 2:
        return {"lift5": 0.0, "gap12": 0.0, "spread10": 0.0}
    top = abs(s[0]) + 1e-9
    return {
        "lift5": float((s[:5].mean() - s.mean()) / (abs(s.mean()) + 1e-9)),
        "gap12": float((s[0] - s[1]) / top),
        "spread10": float(s[:10].std() / top),
    }


def run(engine: Engine, sets: list[str], split: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for q in with_sets(default_workload(), sets).queries(split):
        ctx = engine.collection(q.collection).context()
        mask = ctx.prefilter(q.filters, Timer())
        dense_all = ctx.dense(q.text)
        d_pos, d_scores = dense_all.top(100, mask)
        sparse_all = ctx.lexical_scores(q.text).astype(np.float32)
        s_pos, s_scores = top_k(sparse_all, 100, mask)
        keep = s_scores > 0
        s_pos, s_scores = s_pos[keep], s_scores[keep]
        _language, weight, _note = ctx.dense_weight(q.text)
        k = SPAN_K if q.metric == EVIDENCE1000 else DOC_DEPTH * 3
        values = {}
        for alpha in ALPHAS:
            config = FusionConfig(alpha=alpha)
            dense, sparse = RankedList(d_pos, d_scores, dense_all), RankedList(s_pos, s_scores, sparse_all)
            positions, scores = fuse(dense, sparse, config, weight)
            positions, scores, _ = follow_references(positions, scores, ctx.reference_links, config, mask)
            hits = ctx.hits(positions[:k], scores[:k], "hybrid", {})
            rows_hits = [(h.chunk.document_id, h.chunk.start, h.chunk.end, max(1, h.chunk.token_count)) for h in hits]
            values[alpha] = score(q, rows_hits)
        rows.append({"set": q.set, "dense": qpp(d_scores), "bm25": qpp(s_scores), "values": values})
    return rows


def nearest(values: dict[float, float], alpha: float) -> float:
    return values[min(ALPHAS, key=lambda a: abs(a - alpha))]


def report(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in sorted({r["set"] for r in rows}):
        group = [r for r in rows if r["set"] == name]
        entry: dict[str, Any] = {
            "queries": len(group),
            "fixed": {str(a): round(float(np.mean([r["values"][a] for r in group])), 4) for a in ALPHAS},
            "per_query_best": round(float(np.mean([max(r["values"].values()) for r in group])), 4),
        }
        for measure in ("lift5", "gap12", "spread10"):
            ratio = [math.log((r["dense"][measure] + 1e-6) / (r["bm25"][measure] + 1e-6)) for r in group]
            centre = float(np.median(ratio))
            base = math.log(DEFAULT_ALPHA / (1 - DEFAULT_ALPHA))
            entry[measure] = {
                str(b): round(
                    float(
                        np.mean(
                            [
                                nearest(r["values"], 1 / (1 + math.exp(-(base + b * (x - centre)))))
                                for r, x in zip(group, ratio, strict=True)
                            ]
                        )
                    ),
                    4,
                )
                for b in SLOPES
            }
        out[name] = entry
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=default_store())
    parser.add_argument("--set", action="append", default=[], help="sets of the mixed workload (repeat)")
    parser.add_argument("--split", choices=("train", "test"), default="train")
    args = parser.parse_args()
    engine = Engine(args.store)
    try:
        rows = run(engine, args.set or ["scifact", "xquad-th", "hotpotqa-100", "fiction-multihop"], args.split)
    finally:
        engine.close()
    print(json.dumps({"split": args.split, "sets": report(rows)}, indent=1))


if __name__ == "__main__":
    main()
