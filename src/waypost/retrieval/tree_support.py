"""What the tree strategies share: scoring nodes and leaves for a query, and turning picks into hits."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from waypost.context import SearchContext, Timer
from waypost.filters.model import Filter
from waypost.hierarchy.search import Scored, TreeArrays, score
from waypost.retrieval.fusion import FusionConfig, follow_references
from waypost.types import Hit, NodeRef


@dataclass
class TreeQuery:
    arrays: TreeArrays
    scored: Scored
    leaf_mask: np.ndarray
    node_mask: np.ndarray


def score_tree(
    ctx: SearchContext,
    query: str,
    filters: Filter | None,
    fusion: FusionConfig,
    timer: Timer,
    alpha: float | None = None,
) -> TreeQuery:
    """``alpha``: the dense share of the blend (None: hybrid's fusion alpha)."""
    arrays = ctx.tree_arrays(timer)
    mask = ctx.prefilter(filters, timer)
    leaf_mask = np.ones(len(ctx.indexes), dtype=bool) if mask is None else mask
    with timer.stage("embed_query"):
        qvec = ctx.query_vector(query)
    with timer.stage("leaf_scores"):
        dense = ctx.dense_scores(query).astype(np.float64)
        lexical = ctx.lexical_scores(query)
    with timer.stage("language"):
        _language, weight, note = ctx.dense_weight(query)
    timer.notes.append(note)
    with timer.stage("node_scores"):
        node_mask = arrays.eligible(leaf_mask)
        dense_share = fusion.alpha if alpha is None else alpha
        scored = score(arrays, dense, lexical, qvec, leaf_mask, node_mask, dense_share * weight)
    if fusion.reference_weight > 0:
        with timer.stage("references"):
            _follow_references(ctx, scored, leaf_mask, fusion)
    return TreeQuery(arrays, scored, leaf_mask, node_mask)


def _follow_references(ctx: SearchContext, scored: Scored, leaf_mask: np.ndarray, fusion: FusionConfig) -> None:
    """Raise the leaves of documents the best leaves mention by title, as flat hybrid does."""
    seeds_at = min(fusion.reference_seeds, len(scored.leaf))
    if seeds_at == 0:
        return
    seeds = np.argpartition(-scored.leaf, seeds_at - 1)[:seeds_at]
    seeds = seeds[np.argsort(-scored.leaf[seeds], kind="stable")]
    seeds = seeds[np.isfinite(scored.leaf[seeds])]
    _positions, _scores, boosted = follow_references(
        seeds.astype(np.int64), scored.leaf[seeds].astype(np.float32), ctx.reference_links, fusion, leaf_mask
    )
    for target, (_rank, extra) in boosted.items():
        scored.leaf[target] += extra


def node_ref(tq: TreeQuery, node: int) -> NodeRef:
    a = tq.arrays
    return NodeRef(
        int(a.ids[node]), int(a.layers[node]), a.kinds[node], a.texts[node], int(a.counts[node]),
        round(float(tq.scored.node[node]), 6),
    )  # fmt: skip


def leaves_by_score(tq: TreeQuery, node: int, exclude: set[int]) -> list[int]:
    """The node's leaves that pass the filters and are not taken yet, best first."""
    leaves = [int(p) for p in tq.arrays.leaves(node) if tq.leaf_mask[p] and int(p) not in exclude]
    return sorted(leaves, key=lambda p: -tq.scored.leaf[p])


def materialize(
    ctx: SearchContext, picks: list[tuple[int, float, NodeRef | None]], strategy: str, tq: TreeQuery
) -> list[Hit]:
    positions = np.array([p for p, _s, _n in picks], dtype=np.int64)
    scores = np.array([s for _p, s, _n in picks], dtype=np.float32)
    sc = tq.scored
    stages = {
        "dense": {p: (0, float(sc.dense_leaf[p])) for p, _s, _n in picks},
        "bm25": {p: (0, float(sc.lexical_leaf[p])) for p, _s, _n in picks},
    }
    return ctx.hits(positions, scores, strategy, stages, [n for _p, _s, n in picks])
