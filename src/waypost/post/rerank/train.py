"""Learned rerank weights: a pairwise linear ranker fitted to training queries, feedback, or both.

For every training query the base strategy's best ``depth`` chunks are retrieved (by the caller,
``evaluation/rerank_training.py``) and their features computed exactly as the reranker will at query time.
A chunk's label comes from the gold spans of its document where it has them (the share of the chunk they
cover), else from the qrels (its document's grade), or from recorded feedback (the label of a judgement
whose span it overlaps). Pairs of candidates with different labels train a logistic regression on feature
differences (scikit-learn), so the weights say which features order relevant chunks first; the
regularisation is chosen by grouped cross-validation over the training queries."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from waypost.base import Feedback
from waypost.context import SearchContext
from waypost.errors import WaypostError
from waypost.filters.model import Filter
from waypost.post.rerank.features import FEATURES, compute_features
from waypost.post.rerank.profile import RerankProfile
from waypost.types import Hit

logger = logging.getLogger("waypost.rerank")

FloatArray = npt.NDArray[np.float64]
C_GRID = (0.01, 0.1, 1.0, 10.0)


@dataclass
class TrainingQuery:
    text: str
    filters: Filter | None = None
    documents: dict[str, float] = field(default_factory=dict)  # graded relevance per document id
    spans: list[tuple[str, int, int]] = field(default_factory=list)  # gold evidence (document, start, end)
    feedback: list[Feedback] = field(default_factory=list)


@dataclass
class TrainingGroup:
    query: str
    features: FloatArray  # candidates x FEATURES
    labels: FloatArray


def label_hits(q: TrainingQuery, hits: Sequence[Hit]) -> FloatArray:
    labels = np.zeros(len(hits), dtype=np.float64)
    for i, hit in enumerate(hits):
        c = hit.chunk
        spans = [(s, e) for d, s, e in q.spans if d == c.document_id]
        if spans:  # gold evidence says which part of a relevant document is relevant
            covered = sum(max(0, min(c.end, e) - max(c.start, s)) for s, e in spans)
            value = min(1.0, covered / max(1, c.end - c.start))
        elif q.spans and c.document_id in q.documents:  # relevant, but its evidence is not marked: unknown
            value = 0.5
        else:
            value = float(q.documents.get(c.document_id, 0.0))
        for f in q.feedback:
            if f.document_id == c.document_id and min(c.end, f.end) > max(c.start, f.start):
                value = max(value, f.label) if f.label > 0 else min(value, f.label)
        labels[i] = value
    return labels


def feedback_queries(entries: Iterable[Feedback]) -> list[TrainingQuery]:
    by_query: dict[str, TrainingQuery] = {}
    for e in entries:
        by_query.setdefault(e.query, TrainingQuery(e.query)).feedback.append(e)
    return list(by_query.values())


def training_group(ctx: SearchContext, q: TrainingQuery, hits: list[Hit]) -> TrainingGroup | None:
    """The features and labels of one query's candidates (retrieved by the caller with ``ctx``), or None when
    they have no relevant and less relevant candidate to tell apart."""
    if not hits:
        return None
    rows = compute_features(ctx, ctx.evidence(), q.text, hits)
    labels = label_hits(q, hits)
    return TrainingGroup(q.text, rows.values, labels) if labels.max() > labels.min() else None


def _pairs(groups: Sequence[TrainingGroup], mean: FloatArray, scale: FloatArray, seed: int = 0) -> tuple[Any, Any]:
    rng = np.random.default_rng(seed)
    diffs: list[FloatArray] = []
    for g in groups:
        x = (g.features - mean) / scale
        better, worse = np.nonzero(g.labels[:, None] > g.labels[None, :])
        if better.size > 300:
            keep = rng.choice(better.size, 300, replace=False)
            better, worse = better[keep], worse[keep]
        diffs.append(x[better] - x[worse])
    d = np.concatenate(diffs) if diffs else np.zeros((0, len(FEATURES)))
    flip = np.asarray(rng.random(d.shape[0]) < 0.5, dtype=np.bool_)
    d[flip] *= -1
    return d, np.where(flip, 0, 1).astype(np.int64)


def _ndcg10(scores: FloatArray, labels: FloatArray) -> float:
    order = np.argsort(-scores, kind="stable")[:10]
    gains = labels[order]
    dcg = float((gains / np.log2(np.arange(2, gains.size + 2))).sum())
    ideal = np.sort(labels)[::-1][:10]
    idcg = float((ideal / np.log2(np.arange(2, ideal.size + 2))).sum())
    return dcg / idcg if idcg > 0 else 0.0


def _fit(groups: Sequence[TrainingGroup], mean: FloatArray, scale: FloatArray, c: float) -> FloatArray:
    from sklearn.linear_model import LogisticRegression

    x, y = _pairs(groups, mean, scale)
    if x.shape[0] < 2 or len(set(y.tolist())) < 2 or not np.abs(x).max() > 1e-9:
        raise WaypostError("not enough labelled pairs to train a reranker (need queries with better and worse hits)")
    model = LogisticRegression(C=c, fit_intercept=False, max_iter=2000)
    model.fit(x, y)
    weights: FloatArray = model.coef_.ravel().astype(np.float64)
    return weights


def fit_profile(groups: Sequence[TrainingGroup], name: str, source: str, folds: int = 5) -> RerankProfile:
    """A linear profile fitted to ``groups``, its regularisation chosen by cross-validated nDCG@10."""
    if not groups:
        raise WaypostError("no training query had both a relevant and a less relevant candidate")
    stacked = np.concatenate([g.features for g in groups])
    mean = stacked.mean(axis=0)
    scale = stacked.std(axis=0)
    scale[scale < 1e-9] = 1.0
    base = float(np.mean([_ndcg10(-np.arange(g.labels.size, dtype=np.float64), g.labels) for g in groups]))
    cv: dict[str, float] = {}
    folds = max(2, min(folds, len(groups)))
    for c in C_GRID if len(groups) >= 2 * folds else ():  # too few queries to hold any out: C=1
        scores: list[float] = []
        for fold in range(folds):
            train = [g for i, g in enumerate(groups) if i % folds != fold]
            held = [g for i, g in enumerate(groups) if i % folds == fold]
            try:
                w = _fit(train, mean, scale, c)
            except WaypostError as exc:  # this fold's training queries give no pairs: the others still score
                logger.debug("rerank training: fold %d skipped at C=%s: %s", fold, c, exc)
                continue
            scores += [_ndcg10(((g.features - mean) / scale) @ w, g.labels) for g in held]
        if scores:
            cv[str(c)] = round(float(np.mean(scores)), 4)
    best = max(cv, key=lambda c: cv[c]) if cv else "1.0"
    weights = _fit(groups, mean, scale, float(best))
    return RerankProfile(
        name,
        {f: round(float(w), 6) for f, w in zip(FEATURES, weights, strict=True)},
        {f: round(float(m), 6) for f, m in zip(FEATURES, mean, strict=True)},
        {f: round(float(s), 6) for f, s in zip(FEATURES, scale, strict=True)},
        source,
        {
            "queries": len(groups),
            "candidates": int(stacked.shape[0]),
            "c": float(best),
            "cv_ndcg@10": cv,
            "base_order_ndcg@10": round(base, 4),
        },
    )
