"""Rank fusion: reciprocal rank (RRF), weighted score blending (alpha) and Borda count."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from waypost.index.topk import Positions, Scores


class FusionMethod(StrEnum):
    RRF = "rrf"
    WEIGHTED = "weighted"
    BORDA = "borda"


@dataclass(frozen=True)
class FusionConfig:
    method: FusionMethod = FusionMethod.WEIGHTED
    alpha: float = 0.5  # weight of the dense list in weighted fusion
    rrf_k: int = 60
    depth: int = 100  # candidates taken from each list


@dataclass(frozen=True)
class RankedList:
    """One retriever's ranking, plus its full score array so missing candidates can still be scored."""

    positions: Positions
    scores: Scores
    all_scores: Scores


def fuse(dense: RankedList, sparse: RankedList, config: FusionConfig) -> tuple[Positions, Scores]:
    candidates = np.union1d(dense.positions, sparse.positions)
    if candidates.size == 0:
        return candidates.astype(np.int64), np.zeros(0, dtype=np.float32)
    if config.method is FusionMethod.WEIGHTED:
        fused = config.alpha * _minmax(dense, candidates) + (1 - config.alpha) * _minmax(sparse, candidates)
    elif config.method is FusionMethod.RRF:
        fused = _rank_points(dense, candidates, lambda r: 1.0 / (config.rrf_k + r))
        fused += _rank_points(sparse, candidates, lambda r: 1.0 / (config.rrf_k + r))
    else:
        depth = max(len(dense.positions), len(sparse.positions))
        fused = _rank_points(dense, candidates, lambda r: float(depth - r + 1))
        fused += _rank_points(sparse, candidates, lambda r: float(depth - r + 1))
    order = np.argsort(-fused, kind="stable")
    return candidates[order].astype(np.int64), fused[order].astype(np.float32)


def _minmax(ranked: RankedList, candidates: Positions) -> Scores:
    """Scores scaled to [0, 1] by the list's own top-k range; candidates it missed keep their true score."""
    if ranked.positions.size == 0:
        return np.zeros(candidates.size, dtype=np.float32)
    hi = float(ranked.scores.max())
    lo = float(ranked.scores.min())
    span = hi - lo if hi > lo else 1.0
    scaled: Scores = np.clip((ranked.all_scores[candidates] - lo) / span, 0.0, None).astype(np.float32)
    return scaled


def _rank_points(ranked: RankedList, candidates: Positions, points: object) -> Scores:
    out = np.zeros(candidates.size, dtype=np.float64)
    where = {int(p): i for i, p in enumerate(candidates)}
    for rank, pos in enumerate(ranked.positions, start=1):
        out[where[int(pos)]] += points(rank)  # type: ignore[operator]
    return out.astype(np.float32)
