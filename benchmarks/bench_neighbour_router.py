"""Routing by the nearest training queries: does a query's pipeline follow its neighbours' best one?

For each training query of a set, the k nearest other training queries of the same set (cosine of the
collection's embeddings) vote: each pipeline's mean metric over them, optionally shrunk toward its mean over
the whole set (``shrink`` s weighs the set mean as s * k extra neighbours), and the best estimate is chosen.
Scored leave-one-out on the training split against the set's best single pipeline there; the test split
(each test query voted on by the training queries) is printed beside it, to read after. Reads the outcome
table of ``waypost bench mixed``'s store and runs nothing.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/bench_neighbour_router.py

Measured 2026-11-28 (967 training and 1,277 test queries, k in 5, 10, 20, 40, shrink 0 or 1): leave-one-out
on the training split, no setting beats the set's best single pipeline by more than a point (qmsum, k=40, no
shrink: 0.5717 against raptor-collapsed's 0.5621; the same setting scores 0.5052 on test against 0.5088)
and most lose (scifact 0.712 to 0.734 against hybrid's 0.742). A query's neighbours do not share its winning
pipeline, as the query features do not (README, "Why the router does not do better").
"""

from __future__ import annotations

import argparse
import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

from waypost.engine import Engine
from waypost.evaluation.mixed import MixedQuery, default_store, default_workload
from waypost.evaluation.outcomes import Outcome, OutcomeCache, score

Array = np.ndarray[Any, Any]


def values(queries: list[MixedQuery], table: dict[str, dict[str, Outcome]], pipelines: list[str]) -> Array:
    return np.array([[score(q, table[q.id][p].hits) if p in table[q.id] else 0.0 for p in pipelines] for q in queries])


def vote(similar: Array, outcomes: Array, k: int, shrink: float) -> Array:
    """Each row's choice: the pipeline with the best shrunk mean over its k most similar training rows."""
    nearest = np.argsort(-similar, axis=1)[:, :k]
    estimate = (k * outcomes[nearest].mean(1) + shrink * k * outcomes.mean(0)) / (k + shrink * k)
    return np.asarray(estimate.argmax(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=default_store())
    parser.add_argument("--data", type=Path, default=None, help="the shared sets (default ../shared/data)")
    args = parser.parse_args()
    workload = default_workload(args.data)
    engine = Engine(args.store)
    try:
        generations = {s.name: engine.store.generation(s.name) for s in workload.sets}
        table: dict[str, dict[str, Outcome]] = defaultdict(dict)
        for (pipeline, query_id, generation), outcome in OutcomeCache.under(args.store).rows.items():
            if generation == generations.get(outcome.collection):
                table[query_id][pipeline] = outcome
        train = [q for q in workload.queries("train") if q.id in table]
        test = [q for q in workload.queries("test") if q.id in table]
        model = engine.store.collection(workload.sets[0].name).embed_model
        texts = sorted({q.text for q in train + test})
        vectors = dict(zip(texts, np.asarray(engine.embedder(model).embed_documents(texts), np.float32), strict=True))
    finally:
        engine.close()
    pipelines = sorted({p for row in table.values() for p in row})
    report: dict[str, Any] = {}
    for s in workload.sets:
        tr = [q for q in train if q.set == s.name]
        te = [q for q in test if q.set == s.name]
        y, y_test = values(tr, table, pipelines), values(te, table, pipelines)
        x, x_test = np.stack([vectors[q.text] for q in tr]), np.stack([vectors[q.text] for q in te])
        best = int(y.mean(0).argmax())
        own = x @ x.T
        np.fill_diagonal(own, -np.inf)  # leave one out
        across = x_test @ x.T
        row: dict[str, Any] = {
            "best_single": {"pipeline": pipelines[best], "train": round(float(y[:, best].mean()), 4),
                            "test": round(float(y_test[:, best].mean()), 4)},
        }  # fmt: skip
        for k in (5, 10, 20, 40):
            for shrink in (0.0, 1.0):
                loo = y[np.arange(len(tr)), vote(own, y, k, shrink)].mean()
                held = y_test[np.arange(len(te)), vote(across, y, k, shrink)].mean()
                row[f"k={k},shrink={shrink:g}"] = {"train_loo": round(float(loo), 4), "test": round(float(held), 4)}
        report[s.name] = row
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
