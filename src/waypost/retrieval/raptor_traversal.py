"""RAPTOR tree traversal: the best top-level nodes, then the best of their children, layer by layer down
to the leaves, which are returned best first within a token budget."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from waypost.context import SearchContext, Timer
from waypost.filters.model import Filter
from waypost.retrieval.fusion import FusionConfig
from waypost.retrieval.tree_support import leaves_by_score, materialize, node_ref, score_tree
from waypost.types import NodeRef, RetrievalResult


@dataclass(frozen=True)
class TraversalParams:
    alpha: float | None = None  # dense share of the dense/lexical blend (None: hybrid's fusion alpha)
    budget: int = 2000  # tokens of leaf text to return
    top_k: int = 3  # nodes kept per layer
    depth: int | None = None  # layers descended before expanding into leaves (None: to the bottom)

    def check(self) -> str:
        if self.alpha is not None and not 0.0 <= self.alpha <= 1.0:
            return "alpha must be between 0 and 1"
        if self.budget < 1 or self.top_k < 1:
            return "budget and top_k must be positive"
        return "depth must be at least 1" if self.depth is not None and self.depth < 1 else ""


class RaptorTraversalRetriever:
    name = "raptor-traversal"

    def __init__(self, ctx: SearchContext, fusion: FusionConfig, params: TraversalParams | None = None) -> None:
        self.ctx = ctx
        self.fusion = fusion
        self.params = params or TraversalParams()

    def retrieve(self, query: str, k: int = 10, filters: Filter | None = None) -> RetrievalResult:
        timer = Timer()
        p = self.params
        tq = score_tree(self.ctx, query, filters, self.fusion, timer, p.alpha)
        a, scores, ok = tq.arrays, tq.scored.node, tq.node_mask
        with timer.stage("traverse"):
            # start from the highest eligible nodes: a filter may exclude a root but admit its subtrees
            has_ok_parent = np.zeros(len(a), dtype=bool)
            for parent in np.flatnonzero(ok).tolist():
                for c in a.children[parent]:
                    has_ok_parent[c] = True
            start = np.flatnonzero(ok & ~has_ok_parent)
            frontier = self._best(start, scores, p.top_k)
            path: list[list[int]] = []
            reached: dict[int, int] = {}  # leaf position -> node it was reached through
            step = 0
            while frontier:
                path.append([int(a.ids[j]) for j in frontier])
                step += 1
                below: list[int] = []
                for j in frontier:
                    kids = [c for c in a.children[j] if ok[c]]
                    if not kids or (p.depth is not None and step >= p.depth):
                        for leaf in leaves_by_score(tq, j, set(reached)):
                            reached[leaf] = j
                    else:
                        below.extend(kids)
                frontier = self._best(np.unique(np.asarray(below, dtype=np.int64)), scores, p.top_k)
            ranked = sorted(reached, key=lambda pos: -tq.scored.leaf[pos])
            picks: list[tuple[int, float, NodeRef | None]] = []
            used = 0
            refs: dict[int, NodeRef] = {}
            for leaf in ranked:
                if used >= p.budget or len(picks) >= k:
                    break
                j = reached[leaf]
                ref = refs.setdefault(j, node_ref(tq, j))
                picks.append((leaf, float(tq.scored.leaf[leaf]), ref))
                used += int(a.tokens[leaf])
        with timer.stage("fetch"):
            hits = materialize(self.ctx, picks, self.name, tq)
        explanation = self.ctx.explain(self.name, query, query, filters, None, timer)
        explanation.notes.append(f"path (node ids per layer, top {p.top_k}): {path}; {used} of {p.budget} tokens")
        return RetrievalResult(hits, explanation)

    @staticmethod
    def _best(candidates: np.ndarray, scores: np.ndarray, top_k: int) -> list[int]:
        if len(candidates) == 0:
            return []
        order = candidates[np.argsort(-scores[candidates], kind="stable")]
        return [int(j) for j in order[:top_k] if np.isfinite(scores[j])]
