"""RAPTOR collapsed-tree retrieval: leaves and summaries of every layer compete in one ranking, and the
best are taken until a token budget is filled. A summary is paid for by the leaves it covers: it expands
into its best leaves not yet taken, so the budget buys text, never the same text twice."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from waypost.context import SearchContext, Timer
from waypost.filters.model import Filter
from waypost.retrieval.fusion import FusionConfig
from waypost.retrieval.tree_support import leaves_by_score, materialize, node_ref, score_tree
from waypost.types import NodeRef, RetrievalResult


@dataclass(frozen=True)
class CollapsedParams:
    alpha: float | None = None  # dense share of the dense/lexical blend (None: hybrid's fusion alpha)
    budget: int = 2000  # tokens of leaf text to return
    max_layer: int | None = None  # search summaries up to this layer only (None: all)
    candidates: int = 400  # best-scored leaves and nodes considered

    def check(self) -> str:
        if self.alpha is not None and not 0.0 <= self.alpha <= 1.0:
            return "alpha must be between 0 and 1"
        if self.candidates < 1:
            return "candidates must be positive"
        if self.max_layer is not None and self.max_layer < 1:
            return "max_layer must be at least 1"
        return "budget must be positive" if self.budget < 1 else ""


class RaptorCollapsedRetriever:
    name = "raptor-collapsed"

    def __init__(self, ctx: SearchContext, fusion: FusionConfig, params: CollapsedParams | None = None) -> None:
        self.ctx = ctx
        self.fusion = fusion
        self.params = params or CollapsedParams()

    def retrieve(self, query: str, k: int = 10, filters: Filter | None = None) -> RetrievalResult:
        timer = Timer()
        p = self.params
        tq = score_tree(self.ctx, query, filters, self.fusion, timer, p.alpha)
        with timer.stage("collapse"):
            nodes = tq.scored.node.copy()
            nodes[tq.arrays.single] = -np.inf  # a one-chunk document's node is its chunk again
            if p.max_layer is not None:
                nodes[tq.arrays.layers > p.max_layer] = -np.inf
            combined = np.concatenate([tq.scored.leaf, nodes])
            depth = min(len(combined), p.candidates)
            top = np.argpartition(-combined, depth - 1)[:depth] if depth else np.zeros(0, np.int64)
            top = top[np.argsort(-combined[top], kind="stable")]
            n_leaves = len(tq.scored.leaf)
            taken: set[int] = set()
            picks: list[tuple[int, float, NodeRef | None]] = []
            used = 0
            summaries = 0
            for c in top.tolist():
                if used >= p.budget or len(picks) >= k or not np.isfinite(combined[c]):
                    break
                if c < n_leaves:
                    if c in taken:
                        continue
                    taken.add(c)
                    picks.append((c, float(combined[c]), None))
                    used += int(tq.arrays.tokens[c])
                    continue
                node = c - n_leaves
                leaves = leaves_by_score(tq, node, taken)
                if not leaves:
                    continue
                ref = node_ref(tq, node)
                summaries += 1
                for leaf in leaves:
                    if used >= p.budget or len(picks) >= k:
                        break
                    taken.add(leaf)
                    picks.append((leaf, float(combined[c]), ref))
                    used += int(tq.arrays.tokens[leaf])
        with timer.stage("fetch"):
            hits = materialize(self.ctx, picks, self.name, tq)
        explanation = self.ctx.explain(self.name, query, query, filters, None, timer)
        layers = sorted({h.node.layer for h in hits if h.node is not None})
        explanation.notes.append(
            f"tree: {len(tq.arrays)} nodes; {summaries} summaries expanded (layers {layers or '-'}); "
            f"{used} of {p.budget} budget tokens; alpha={self.fusion.alpha if p.alpha is None else p.alpha}"
        )
        return RetrievalResult(hits, explanation)
