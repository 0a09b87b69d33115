"""Fitting the corrective loop on training queries: the quality model (a logistic model of the realized
metric from a result's signals) and the retry policy (thresholds chosen by replaying the loop)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from waypost.errors import WaypostError
from waypost.route.corrective import SIGNALS, QualityModel, Row

RETRY_COST = 0.002  # metric points one retry must earn, so ties go to the cheaper policy


@dataclass
class Episode:
    """One training query: the first result and the retries the loop would try, in order, each as
    (signals, realized metric)."""

    first: Row
    retries: list[Row]


RISING = frozenset({"coverage", "coverage_any", "agreement", "dense_top"})  # more of these never means worse


def fit_quality(rows: Sequence[Row], names: Sequence[str] = SIGNALS, c: float = 1.0) -> QualityModel:
    """A logistic model of the realized metric (in [0, 1], as a soft label) from standardized signals;
    thresholds at the 30% and 60% quantiles of the training scores until ``choose_policy`` sets them.
    A signal that can only mean better (``RISING``) and gets a negative weight (collinear with another)
    is left out and the model refit, so a result covering more of the query never grades lower."""
    names = list(names)
    while True:
        model = _fit(rows, names, c)
        wrong = [n for n, w in zip(model.names, model.coef, strict=True) if n in RISING and w < 0]
        if not wrong:
            return model
        names.remove(min(wrong, key=lambda n: model.coef[model.names.index(n)]))


def _fit(rows: Sequence[Row], names: Sequence[str], c: float) -> QualityModel:
    if len(rows) < 10:
        raise WaypostError(f"fitting the quality model needs at least 10 rows, got {len(rows)}")
    from sklearn.linear_model import LogisticRegression

    x = np.array([[_value(s, n) for n in names] for s, _m in rows], dtype=np.float64)
    y = np.clip(np.array([m for _s, m in rows], dtype=np.float64), 0.0, 1.0)
    mean = np.nanmean(x, axis=0)
    x = np.where(np.isnan(x), mean, x)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = (x - mean) / scale
    # soft labels: each row once as a positive weighted by its metric, once as a negative by the rest
    features = np.vstack([z, z])
    labels = np.concatenate([np.ones(len(y)), np.zeros(len(y))])
    weights = np.concatenate([y, 1.0 - y]) + 1e-6
    if labels[weights > 1e-3].min() == labels[weights > 1e-3].max():
        raise WaypostError("every training row has the same metric: nothing to learn")
    fit = LogisticRegression(C=c, max_iter=1000).fit(features, labels, sample_weight=weights)
    model = QualityModel(
        list(names),
        [float(v) for v in mean],
        [float(v) for v in scale],
        [float(v) for v in fit.coef_[0]],
        float(fit.intercept_[0]),
    )
    scores = np.array([model.score(s) for s, _m in rows])
    model.lower, model.upper = float(np.quantile(scores, 0.3)), float(np.quantile(scores, 0.6))
    model.info = {"rows": len(rows)}
    return model


def _value(signals: object, name: str) -> float:
    value = signals.get(name) if isinstance(signals, dict) else None
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else math.nan


Scored = list[tuple[float, float, list[tuple[float, float]]]]  # (score, metric) of the first and each retry


def _scored(model: QualityModel, episodes: Sequence[Episode]) -> Scored:
    return [(model.score(ep.first[0]), ep.first[1], [(model.score(s), m) for s, m in ep.retries]) for ep in episodes]


def replay(model: QualityModel, episodes: Sequence[Episode], max_retries: int = 2) -> dict[str, float]:
    """The loop on recorded episodes: mean metric without and with it, retry rate and retries per query."""
    return _replay(model, _scored(model, episodes), max_retries)


def _replay(model: QualityModel, scored: Scored, max_retries: int) -> dict[str, float]:
    plain = looped = 0.0
    retried = retries = 0
    for first_score, first_metric, options in scored:
        plain += first_metric
        best_score, best_metric = first_score, first_metric
        if model.wants_retry(model.verdict(first_score)):
            retried += 1
            for score, metric in options[:max_retries]:
                retries += 1
                if score > best_score + model.keep_margin:
                    best_score, best_metric = score, metric
                if model.verdict(best_score) == "correct":
                    break
        looped += best_metric
    n = max(1, len(scored))
    return {
        "without": plain / n,
        "with": looped / n,
        "gain": (looped - plain) / n,
        "retry_rate": retried / n,
        "retries_per_query": retries / n,
    }


def choose_policy(
    model: QualityModel, episodes: Sequence[Episode], max_retries: int = 2, folds: int = 4
) -> QualityModel:
    """Thresholds, ambiguous policy and keep margin by replaying the loop on ``folds`` parts of the
    episodes: a policy is worth its mean gain per part less one standard error (and a small cost per
    retry), so a gain that only some queries show does not count. If no policy's bound is above zero,
    the loop never retries (lower = 0): it must not lose on average."""
    scored = _scored(model, episodes)
    parts = [scored[i::folds] for i in range(folds)] if len(scored) >= 2 * folds else [scored]
    scores = np.array([first for first, _m, _r in scored])
    cuts = sorted({0.0, *(float(np.quantile(scores, q)) for q in np.linspace(0.05, 0.95, 19))})
    best = replace(model, lower=0.0, upper=max(model.upper, 0.0), retry_ambiguous=False, keep_margin=0.0)
    best_value = 0.0
    for lower in cuts:
        for upper in [u for u in cuts if u >= lower] + [1.0]:
            for ambiguous in (False, True):
                if not ambiguous and upper != lower and upper != 1.0:
                    continue  # without retries on ambiguous, the upper threshold changes nothing
                for margin in (0.0, 0.02, 0.05, 0.1):
                    trial = replace(model, lower=lower, upper=upper, retry_ambiguous=ambiguous, keep_margin=margin)
                    results = [_replay(trial, part, max_retries) for part in parts]
                    gains = [r["gain"] - RETRY_COST * r["retries_per_query"] for r in results]
                    spread = float(np.std(gains)) / math.sqrt(len(gains)) if len(gains) > 1 else 0.0
                    value = float(np.mean(gains)) - spread
                    if value > best_value + 1e-9:
                        best, best_value = trial, value
    if best.upper < best.lower:
        best = replace(best, upper=best.lower)
    return best
