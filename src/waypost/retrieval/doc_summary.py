"""Document summary index: one summary per document is searched first, then the best chunks of the best
documents are returned, document by document."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from waypost.context import SearchContext, Timer
from waypost.filters.model import Filter
from waypost.hierarchy.tree import DOCUMENT
from waypost.retrieval.fusion import FusionConfig
from waypost.retrieval.tree_support import leaves_by_score, materialize, node_ref, score_tree
from waypost.types import NodeRef, RetrievalResult


@dataclass(frozen=True)
class DocSummaryParams:
    alpha: float | None = None  # dense share of the dense/lexical blend (None: hybrid's fusion alpha)
    documents: int = 10  # documents drilled into
    chunks_per_document: int = 3
    budget: int = 2000  # tokens of chunk text to return

    def check(self) -> str:
        if self.alpha is not None and not 0.0 <= self.alpha <= 1.0:
            return "alpha must be between 0 and 1"
        return "" if min(self.documents, self.chunks_per_document, self.budget) >= 1 else "values must be positive"


class DocSummaryRetriever:
    name = "doc-summary"

    def __init__(self, ctx: SearchContext, fusion: FusionConfig, params: DocSummaryParams | None = None) -> None:
        self.ctx = ctx
        self.fusion = fusion
        self.params = params or DocSummaryParams()

    def retrieve(self, query: str, k: int = 10, filters: Filter | None = None) -> RetrievalResult:
        timer = Timer()
        p = self.params
        tq = score_tree(self.ctx, query, filters, self.fusion, timer, p.alpha)
        a = tq.arrays
        with timer.stage("documents"):
            is_doc = np.array([kind == DOCUMENT for kind in a.kinds], dtype=bool)
            candidates = np.flatnonzero(is_doc & tq.node_mask)
            order = candidates[np.argsort(-tq.scored.node[candidates], kind="stable")][: max(p.documents, 1)]
            picks: list[tuple[int, float, NodeRef | None]] = []
            used = 0
            for j in order.tolist():
                ref = node_ref(tq, j)
                for leaf in leaves_by_score(tq, j, set())[: p.chunks_per_document]:
                    if used >= p.budget or len(picks) >= k:
                        break
                    picks.append((leaf, float(tq.scored.node[j]), ref))
                    used += int(a.tokens[leaf])
        with timer.stage("fetch"):
            hits = materialize(self.ctx, picks, self.name, tq)
        explanation = self.ctx.explain(self.name, query, query, filters, None, timer)
        explanation.notes.append(f"{len(order)} document summaries drilled into; {used} of {p.budget} tokens")
        return RetrievalResult(hits, explanation)
