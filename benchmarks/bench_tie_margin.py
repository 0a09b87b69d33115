"""The router's tie margin against strategy accuracy, on the mixed workload's TRAIN split: predicted gains
within the margin count as a tie, broken toward the cheaper pipeline. Each margin is refitted and scored
out of fold (5 folds, sets weighted equally), as ``route/fit.py`` scores its variants. Run after
``waypost bench mixed`` (it reads that store and its cached outcomes).

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/bench_tie_margin.py

Measured 2026-11-28 (967 training queries): margin 0.005 (shipped) scores 0.8347 at accuracy 0.8085;
0.01 0.8321 / 0.810; 0.015 0.8308 / 0.821; 0.02 0.8301 / 0.848; 0.03 0.8271 / 0.834; 0.05 0.8249 / 0.842;
0.08 0.8184 / 0.828. A wider margin sends qmsum's near-ties to hybrid+passages (cheaper than the tree,
and the more often best: 60% of qmsum's training questions against the tree's 29%, though the tree's mean
is higher, 0.562 against 0.548), which buys accuracy with quality. Quality comes first: the margin stays.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

import waypost.route.model as gain_model
from waypost.engine import Engine, EngineConfig
from waypost.evaluation.mixed import default_store, default_workload, mixed_pool
from waypost.route.train import fit_rows, train

MARGINS = (0.005, 0.01, 0.015, 0.02, 0.03, 0.05, 0.08)


def main() -> None:
    engine = Engine(default_store(), EngineConfig(background_index_work=False))
    trained = train(engine, default_workload(None), mixed_pool())
    rows = trained.rows
    values = np.nan_to_num(rows.values, nan=-1.0)
    best = values.max(axis=1, keepdims=True)
    groups = np.asarray(rows.groups)
    for group in sorted(set(rows.groups)):
        mine = groups == group
        means = np.nanmean(rows.values[mine], axis=0)
        wins = np.mean(values[mine] >= best[mine] - 1e-9, axis=0)
        listed = zip(rows.pipelines, means, wins, strict=True)
        shares = ", ".join(f"{p.label} {m:.3f} (best {w:.0%})" for p, m, w in listed)
        print(f"{group}: mean (share of questions where it is best, ties count): {shares}")
    shipped = gain_model.TIE
    print(f"{'margin':>8} {'variant':>18} {'oof score':>10} {'oof accuracy':>13}")
    try:
        for margin in MARGINS:
            gain_model.TIE = margin  # ``GainModel.ranking`` reads the module's margin
            info = fit_rows(trained.rows, trained.queries, trained.outcomes).info
            scores = f"{info['oof_score']:10.4f} {info['oof_accuracy']:13.4f}"
            print(f"{margin:8.3f} {info['variant']:>18} {scores}", flush=True)
    finally:
        gain_model.TIE = shipped
        engine.close()


if __name__ == "__main__":
    main()
