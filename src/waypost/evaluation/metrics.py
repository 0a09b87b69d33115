"""Ranking metrics over document ids: nDCG@k, Recall@k, MRR, P@k. Definitions follow BEIR/pytrec_eval."""

from __future__ import annotations

import math


def ndcg_at(ranked: list[str], gold: dict[str, int], k: int) -> float:
    """trec_eval's ndcg_cut: the gain is the relevance grade itself (linear), as BEIR reports it."""
    dcg = sum(max(gold.get(d, 0), 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted((g for g in gold.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at(ranked: list[str], gold: dict[str, int], k: int) -> float:
    relevant = {d for d, g in gold.items() if g > 0}
    return len(relevant.intersection(ranked[:k])) / len(relevant) if relevant else 0.0


def precision_at(ranked: list[str], gold: dict[str, int], k: int) -> float:
    return sum(1 for d in ranked[:k] if gold.get(d, 0) > 0) / k


def reciprocal_rank(ranked: list[str], gold: dict[str, int]) -> float:
    """1/rank of the first relevant document anywhere in the ranking (trec_eval's recip_rank)."""
    for i, d in enumerate(ranked, start=1):
        if gold.get(d, 0) > 0:
            return 1.0 / i
    return 0.0


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)
