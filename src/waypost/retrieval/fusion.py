"""Rank fusion: reciprocal rank (RRF), weighted score blending (alpha) and Borda count."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from waypost.index.dense import QueryScores
from waypost.index.topk import Mask, Positions, Scores


class FusionMethod(StrEnum):
    RRF = "rrf"
    WEIGHTED = "weighted"
    BORDA = "borda"


@dataclass(frozen=True)
class FusionConfig:
    method: FusionMethod = FusionMethod.WEIGHTED
    alpha: float = 0.4  # weight of the dense list in weighted fusion (tuned on scifact train)
    rrf_k: int = 60
    depth: int = 100  # candidates taken from each list
    reference_weight: float = 0.3  # boost for documents the top hits mention by title; 0 turns it off
    reference_seeds: int = 3  # how many top hits' references are followed


@dataclass(frozen=True)
class RankedList:
    """One retriever's ranking, plus every position's score (an array, or the dense side's ``QueryScores``
    that scores positions on demand) so the other list's candidates can still be scored."""

    positions: Positions
    scores: Scores
    all_scores: Scores | QueryScores


def fuse(
    dense: RankedList, sparse: RankedList, config: FusionConfig, dense_weight: float = 1.0
) -> tuple[Positions, Scores]:
    """``dense_weight`` (0-1, the embedder's coverage of the query's language) scales the dense side."""
    candidates = np.union1d(dense.positions, sparse.positions)
    if candidates.size == 0:
        return candidates.astype(np.int64), np.zeros(0, dtype=np.float32)
    if config.method is FusionMethod.WEIGHTED:
        alpha = config.alpha * dense_weight
        fused = alpha * _minmax(dense, candidates) + (1 - alpha) * _minmax(sparse, candidates)
    elif config.method is FusionMethod.RRF:
        fused = dense_weight * _rank_points(dense, candidates, lambda r: 1.0 / (config.rrf_k + r))
        fused += _rank_points(sparse, candidates, lambda r: 1.0 / (config.rrf_k + r))
    else:
        depth = max(len(dense.positions), len(sparse.positions))
        fused = dense_weight * _rank_points(dense, candidates, lambda r: float(depth - r + 1))
        fused += _rank_points(sparse, candidates, lambda r: float(depth - r + 1))
    order = np.argsort(-fused, kind="stable")
    return candidates[order].astype(np.int64), fused[order].astype(np.float32)


def follow_references(
    positions: Positions,
    scores: Scores,
    links: Callable[[Positions], list[Positions]],
    config: FusionConfig,
    mask: Mask | None,
) -> tuple[Positions, Scores, dict[int, tuple[int, float]]]:
    """Add ``reference_weight`` x (seed score) to every chunk of a document a top seed mentions by title.

    ``links(seeds)`` gives each seed's target positions."""
    if config.reference_weight <= 0 or positions.size == 0:
        return positions, scores, {}
    boost: dict[int, float] = {}
    seeds = positions[: config.reference_seeds]
    for targets, seed_score in zip(links(seeds), scores, strict=False):
        for target in targets:
            t = int(target)
            if (mask is None or mask[t]) and config.reference_weight * float(seed_score) > boost.get(t, 0.0):
                boost[t] = config.reference_weight * float(seed_score)
    if not boost:
        return positions, scores, {}
    base = dict(zip(positions.tolist(), scores.tolist(), strict=True))
    for t, extra in boost.items():
        base[t] = base.get(t, 0.0) + extra
    merged = np.fromiter(base.keys(), dtype=np.int64, count=len(base))
    values = np.fromiter(base.values(), dtype=np.float32, count=len(base))
    order = np.argsort(-values, kind="stable")
    stage = {t: (rank, extra) for rank, (t, extra) in enumerate(sorted(boost.items(), key=lambda kv: -kv[1]), 1)}
    return merged[order], values[order], stage


def _minmax(ranked: RankedList, candidates: Positions) -> Scores:
    """Scores scaled to [0, 1] by the list's own top-k range; candidates it missed keep their true score."""
    if ranked.positions.size == 0:
        return np.zeros(candidates.size, dtype=np.float32)
    hi = float(ranked.scores.max())
    lo = float(ranked.scores.min())
    values = ranked.all_scores[candidates]
    if hi <= lo:  # one hit, or all tied: they are the list's best, not its worst
        tied: Scores = (values >= hi).astype(np.float32)
        return tied
    scaled: Scores = np.clip((values - lo) / (hi - lo), 0.0, None).astype(np.float32)
    return scaled


def _rank_points(ranked: RankedList, candidates: Positions, points: object) -> Scores:
    out = np.zeros(candidates.size, dtype=np.float64)
    where = {int(p): i for i, p in enumerate(candidates)}
    for rank, pos in enumerate(ranked.positions, start=1):
        out[where[int(pos)]] += points(rank)  # type: ignore[operator]
    return out.astype(np.float32)
