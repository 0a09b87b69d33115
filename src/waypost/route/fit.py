"""Fit a ``GainModel`` from training rows: features per query and each pipeline's metric per query.
Cross-validation runs on the training rows only: out-of-fold predictions calibrate the confidence and
pick the low-confidence threshold and policy ("default" or "fuse") that score best."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from waypost.errors import WaypostError
from waypost.route.base import Pipeline
from waypost.route.model import Array, Forest, FuseValue, GainModel

SEED = 26
FOLDS = 5


@dataclass
class TrainingRows:
    """``values[i, j]``: the metric of ``pipelines[j]`` on query ``i`` (NaN: it could not run there);
    ``groups[i]``: the set the query came from (its weight balances the sets)."""

    feature_names: list[str]
    features: Array  # (queries, features)
    pipelines: list[Pipeline]
    values: Array  # (queries, pipelines)
    groups: list[str]
    ids: list[str] = field(default_factory=list)  # query ids, row by row

    def weights(self) -> Array:
        counts: dict[str, int] = {}
        for g in self.groups:
            counts[g] = counts.get(g, 0) + 1
        w = np.asarray([1.0 / counts[g] for g in self.groups])
        out: Array = w * len(w) / w.sum()
        return out


def _forest(x: Array, y: Array, w: Array, seed: int) -> Forest:
    from sklearn.ensemble import RandomForestRegressor

    model = RandomForestRegressor(
        n_estimators=min(60, max(10, len(x) // 4)),  # few rows need few trees
        max_depth=7,
        min_samples_leaf=4,
        max_features=0.5,
        random_state=seed,
        n_jobs=1,
    )
    model.fit(x, y, sample_weight=w)
    return Forest.from_sklearn(model.estimators_)


def _gains(rows: TrainingRows, default: int) -> Array:
    """Each non-default pipeline's gain over the default; a pipeline that could not run gains nothing."""
    base = rows.values[:, default : default + 1]
    gains: Array = np.nan_to_num(rows.values - base, nan=0.0)
    return np.delete(gains, default, axis=1)


def fit_gain_model(
    rows: TrainingRows,
    default: Pipeline,
    costs: dict[str, float],
    fuse_value: FuseValue | None = None,
    seed: int = SEED,
    folds: int = FOLDS,
) -> GainModel:
    """The model on all rows, with its calibration, threshold and low-confidence policy chosen from
    ``folds``-fold out-of-fold predictions. ``fuse_value`` scores the RRF of two pipelines on a
    training row (without it only the "default" policy is considered)."""
    if default not in rows.pipelines:
        raise WaypostError(f"the default pipeline {default.label} has no outcomes in the training rows")
    n = len(rows.groups)
    folds = max(2, min(folds, n // 10))  # a fold holds ten queries at least
    if n < 4:
        raise WaypostError(f"too few training queries to fit a router ({n})")
    d = rows.pipelines.index(default)
    x = np.nan_to_num(rows.features)
    y = _gains(rows, d)
    w = rows.weights()

    def model_of(forest: Forest) -> GainModel:
        return GainModel(rows.feature_names, rows.pipelines, default, forest, costs, ([0.0, 1.0], [0.5, 0.5]))

    # out-of-fold predictions
    order = np.random.default_rng(seed).permutation(n)
    oof: list[dict[str, float]] = [{} for _ in range(n)]
    probe = model_of(Forest.empty(y.shape[1]))  # its ranking and margin (costs, ties) judge predictions
    for f in range(folds):
        test = order[f::folds]
        train = np.setdiff1d(order, test)
        fold_model = model_of(_forest(x[train], y[train], w[train], seed + f))
        for i in test:
            oof[i] = fold_model.predict(dict(zip(rows.feature_names, x[i], strict=True)))
    labels = [p.label for p in rows.pipelines]
    chosen = [probe.ranking(g)[0][0] for g in oof]
    margins = np.asarray([probe.margin(g) for g in oof])
    best = np.nanmax(rows.values, axis=1)
    picked = np.asarray([rows.values[i, labels.index(c)] for i, c in enumerate(chosen)])
    correct = (np.nan_to_num(picked, nan=-1.0) >= best - 1e-9).astype(float)
    xs, ys = _isotonic(margins, correct, w)

    # threshold and policy, on the same out-of-fold predictions (sets weighted equally)
    conf = np.interp(margins, xs, ys)
    default_values = rows.values[:, d]
    policies: dict[str, Array] = {"default": default_values}
    if fuse_value is not None:
        seconds = [probe.ranking(g)[1][0] for g in oof]
        policies["fuse"] = np.asarray(
            [fuse_value(i, c, s) if c != s else picked[i] for i, (c, s) in enumerate(zip(chosen, seconds, strict=True))]
        )
    picked_safe = np.nan_to_num(picked, nan=0.0)
    candidates = sorted({0.0, *np.quantile(conf, np.linspace(0, 0.9, 19)).tolist()})  # exact: no plateau lost
    best_score, threshold, policy = -np.inf, 0.0, "default"
    for name, fallback in policies.items():
        for t in candidates:
            score = float(np.average(np.where(conf >= t, picked_safe, np.nan_to_num(fallback)), weights=w))
            if score > best_score + 1e-9:
                best_score, threshold, policy = score, float(t), name
    model = model_of(_forest(x, y, w, seed))
    model.calibration = (xs, ys)
    model.threshold = threshold
    model.low_confidence = policy
    model.info = {
        "queries": n,
        "sets": sorted(set(rows.groups)),
        "folds": folds,
        "oof_accuracy": round(float(np.average(correct, weights=w)), 4),
        "oof_score": round(best_score, 4),
        "oof_default_score": round(float(np.average(np.nan_to_num(default_values), weights=w)), 4),
        "oof_oracle_score": round(float(np.average(np.nan_to_num(best), weights=w)), 4),
    }
    return model


def _isotonic(margins: Array, correct: Array, weights: Array) -> tuple[list[float], list[float]]:
    """An increasing map from margin to P(correct), as interpolation knots."""
    from sklearn.isotonic import IsotonicRegression

    if len(set(margins.tolist())) < 2:
        p = float(np.average(correct, weights=weights))
        return [0.0, 1.0], [p, p]
    iso = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True, out_of_bounds="clip")
    iso.fit(margins, correct, sample_weight=weights)
    return [round(float(v), 6) for v in iso.X_thresholds_], [round(float(v), 6) for v in iso.y_thresholds_]


def shuffled(rows: TrainingRows, seed: int = SEED) -> tuple[TrainingRows, Sequence[int]]:
    """The control: outcome rows permuted across queries (features stay). Returns the permutation:
    row ``i`` now carries the outcomes of query ``perm[i]``."""
    perm = np.random.default_rng(seed + 1).permutation(len(rows.groups))
    values = rows.values[perm]
    return TrainingRows(rows.feature_names, rows.features, rows.pipelines, values, rows.groups, rows.ids), perm.tolist()
