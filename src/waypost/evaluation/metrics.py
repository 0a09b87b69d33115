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


def _union(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(i for i in intervals if i[1] > i[0]):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _overlap(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> int:
    total, i, j = 0, 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0, hi - lo)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def evidence_at_budget(
    returned: list[tuple[str, int, int, int]], gold: list[tuple[str, int, int]], budget: int
) -> tuple[float, float]:
    """Evidence recall and precision of ``returned`` (document id, start, end, token cost; in rank order)
    read until ``budget`` tokens are used: the share of gold evidence characters covered, and the share
    of returned characters that are evidence. A result that crosses the budget counts as its first
    part, in proportion to the tokens left. Overlapping results count their characters once."""
    used = 0
    covered: dict[str, list[tuple[int, int]]] = {}
    for doc, start, end, tokens in returned:
        if used >= budget:
            break
        if tokens > budget - used and tokens > 0:
            end = start + int((end - start) * (budget - used) / tokens)
        used += min(tokens, budget - used)
        covered.setdefault(doc, []).append((start, end))
    gold_by_doc: dict[str, list[tuple[int, int]]] = {}
    for doc, start, end in gold:
        gold_by_doc.setdefault(doc, []).append((start, end))
    gold_u = {d: _union(v) for d, v in gold_by_doc.items()}
    got_u = {d: _union(v) for d, v in covered.items()}
    gold_chars = sum(e - s for v in gold_u.values() for s, e in v)
    got_chars = sum(e - s for v in got_u.values() for s, e in v)
    hit = sum(_overlap(got_u[d], gold_u[d]) for d in got_u if d in gold_u)
    recall = hit / gold_chars if gold_chars else 0.0
    precision = hit / got_chars if got_chars else 0.0
    return recall, precision
