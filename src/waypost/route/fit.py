"""Fit a ``GainModel`` from training rows: features per query and each pipeline's metric per query.
Cross-validation runs on the training rows only: out-of-fold predictions calibrate the confidence and
pick the low-confidence threshold and policy ("default" or "fuse") that score best."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from waypost.errors import WaypostError
from waypost.route.base import Pipeline
from waypost.route.model import FAMILIAR_WITHIN, Array, Forest, FuseValue, GainModel

SEED = 26
FOLDS = 5
SHRINKS = (0.0, 0.25, 0.5, 1.0)  # weights of the query forest over the collection prior, chosen by CV
RESIDUAL_LEAF = 10  # the residual forest's smallest leaf: query-level gains are noisy
PLAIN = "plain"


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


def _sk_forest(x: Array, y: Array, w: Array, seed: int, leaf: int = 4, max_features: float = 0.5) -> Any:
    from sklearn.ensemble import RandomForestRegressor

    model = RandomForestRegressor(
        n_estimators=min(60, max(10, len(x) // 4)),  # few rows need few trees
        max_depth=7,
        min_samples_leaf=leaf,
        max_features=max_features,
        random_state=seed,
        n_jobs=1,
    )
    model.fit(x, y if y.shape[1] > 1 else y.ravel(), sample_weight=w)  # one output: sklearn wants a vector
    return model


def _forest(x: Array, y: Array, w: Array, seed: int) -> Forest:
    return Forest.from_sklearn(_sk_forest(x, y, w, seed).estimators_)


@dataclass
class _Parts:
    """The forests of one variant: the plain query forest, or a collection prior plus a residual forest."""

    plain: Forest | None = None
    prior: Forest | None = None
    residual: Forest | None = None


def _fit_parts(x: Array, y: Array, w: Array, seed: int, prior_mask: Array | None, plain: bool = True) -> _Parts:
    """The plain forest (unless ``plain`` is False), and (``prior_mask`` given: the columns the prior may
    read) the prior fitted on the collection's features alone and a residual forest on every feature, with
    larger leaves."""
    parts = _Parts(plain=_forest(x, y, w, seed) if plain else None)
    if prior_mask is not None:
        prior = _sk_forest(x * prior_mask, y, w, seed, max_features=1.0)
        expected = prior.predict(x * prior_mask).reshape(len(x), -1)
        residual = _sk_forest(x, y - expected, w, seed, leaf=RESIDUAL_LEAF)
        parts.prior = Forest.from_sklearn(prior.estimators_)
        parts.residual = Forest.from_sklearn(residual.estimators_)
    return parts


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
    prior_features: Sequence[str] = (),
) -> GainModel:
    """The model on all rows, with its calibration, threshold and low-confidence policy chosen from
    ``folds``-fold out-of-fold predictions. ``fuse_value`` scores the RRF of two pipelines on a
    training row (without it only the "default" policy is considered). ``prior_features``: the
    collection's features; when some are among the rows' features, a collection prior plus the query
    forest scaled by each of ``SHRINKS`` compete with the plain forest, and the out-of-fold score picks."""
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
    mask = np.asarray([1.0 if name in prior_features else 0.0 for name in rows.feature_names])
    prior_mask = mask if mask.any() else None

    def model_of(parts: _Parts, variant: str) -> GainModel:
        if variant == PLAIN or parts.residual is None:
            forest = parts.plain if parts.plain is not None else Forest.empty(y.shape[1])
            return GainModel(rows.feature_names, rows.pipelines, default, forest, costs, ([0.0, 1.0], [0.5, 0.5]))
        return GainModel(
            rows.feature_names,
            rows.pipelines,
            default,
            parts.residual,
            costs,
            ([0.0, 1.0], [0.5, 0.5]),
            prior=parts.prior,
            shrink=float(variant),
        )

    variants = [PLAIN] + ([str(s) for s in SHRINKS] if prior_mask is not None else [])
    # out-of-fold predictions of every variant
    order = np.random.default_rng(seed).permutation(n)
    oof: dict[str, list[dict[str, float]]] = {v: [{} for _ in range(n)] for v in variants}
    for f in range(folds):
        test = order[f::folds]
        train = np.setdiff1d(order, test)
        parts = _fit_parts(x[train], y[train], w[train], seed + f, prior_mask)
        for v in variants:
            fold_model = model_of(parts, v)
            for i in test:
                oof[v][i] = fold_model.predict(dict(zip(rows.feature_names, x[i], strict=True)))
    labels = [p.label for p in rows.pipelines]
    probe = model_of(_Parts(), PLAIN)  # its ranking and margin (costs, ties) judge predictions

    def picked_of(predictions: list[dict[str, float]]) -> tuple[list[str], Array]:
        chosen = [probe.ranking(g)[0][0] for g in predictions]
        return chosen, np.asarray([rows.values[i, labels.index(c)] for i, c in enumerate(chosen)])

    variant_scores = {
        v: round(float(np.average(np.nan_to_num(picked_of(oof[v])[1], nan=0.0), weights=w)), 4) for v in variants
    }
    variant = max(variants, key=lambda v: (variant_scores[v], v == PLAIN))  # a tie keeps the plain forest
    chosen, picked = picked_of(oof[variant])
    margins = np.asarray([probe.margin(g) for g in oof[variant]])
    best = np.nanmax(rows.values, axis=1)
    correct = (np.nan_to_num(picked, nan=-1.0) >= best - 1e-9).astype(float)
    xs, ys = _isotonic(margins, correct, w)

    # threshold and policy, on the same out-of-fold predictions (sets weighted equally)
    conf = np.interp(margins, xs, ys)
    default_values = rows.values[:, d]
    policies: dict[str, Array] = {"default": default_values}
    if fuse_value is not None:
        seconds = [probe.ranking(g)[1][0] for g in oof[variant]]
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
    final = (
        _fit_parts(x, y, w, seed, None, plain=True)
        if variant == PLAIN
        else _fit_parts(x, y, w, seed, prior_mask, plain=False)
    )
    model = model_of(final, variant)
    model.calibration = (xs, ys)
    model.familiar = _collections(rows, prior_features)
    model.threshold = threshold
    model.low_confidence = policy
    model.info = {
        "queries": n,
        "sets": sorted(set(rows.groups)),
        "folds": folds,
        "variant": variant if variant == PLAIN else f"prior+{variant}*query",
        "oof_variant_scores": variant_scores,
        "oof_accuracy": round(float(np.average(correct, weights=w)), 4),
        "oof_score": round(best_score, 4),
        "oof_default_score": round(float(np.average(np.nan_to_num(default_values), weights=w)), 4),
        "oof_oracle_score": round(float(np.average(np.nan_to_num(best), weights=w)), 4),
    }
    return model


def _collections(rows: TrainingRows, prior_features: Sequence[str]) -> dict[str, dict[str, float]]:
    """Each training set's collection features (their mean over its rows, a missing value read as 0), for
    ``GainModel.unfamiliar``: those ``FAMILIAR_WITHIN`` knows how to compare."""
    columns = [
        (i, name) for i, name in enumerate(rows.feature_names) if name in prior_features and name in FAMILIAR_WITHIN
    ]
    if not columns:
        return {}
    groups = np.asarray(rows.groups)
    x = np.nan_to_num(rows.features)
    return {
        g: {name: round(float(x[groups == g, i].mean()), 6) for i, name in columns} for g in sorted(set(rows.groups))
    }


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
