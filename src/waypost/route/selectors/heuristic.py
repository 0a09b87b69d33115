"""Readable rules over the router's features, written in capabilities (a pipeline that extracts
filters, needs a tree, needs a graph, assembles passages), never in strategy or dataset names. The
fallback when no trained profile loads, and a baseline for it."""

from __future__ import annotations

import math
from collections.abc import Sequence

from waypost.route.base import Choice, Features, Pipeline
from waypost.route.selectors.common import (
    assembles_passages,
    by_preference,
    cheapest,
    extracts_filters,
    fallback,
    needs_graph,
    needs_tree,
)

LONG_DOCUMENT_TOKENS = 2000.0  # documents longer than this on average count as long
STRONG_FILTER = 0.5  # an extracted filter that drops at least this share of the collection


class HeuristicSelector:
    name = "heuristic"

    def select(self, query: str, features: Features, candidates: Sequence[Pipeline]) -> Choice:
        chosen, confidence, reason = self._rule(features, candidates)
        ranking = by_preference(chosen, candidates)
        scores = [confidence] + [0.0] * (len(ranking) - 1)
        return Choice(chosen, confidence, reason, self.name, list(zip(ranking, scores, strict=True)))

    def _rule(self, f: Features, candidates: Sequence[Pipeline]) -> tuple[Pipeline, float, str]:
        long_docs = math.expm1(f.get("doc_tokens_log", 0.0)) >= LONG_DOCUMENT_TOKENS
        selectivity = f.get("filter_selectivity", 0.0)
        excludes = f.get("filter_exclusions", 0.0) >= 1  # unfiltered, "not Indian" finds the Indian dishes first
        if f.get("filter_conditions", 0.0) >= 1 and (selectivity >= STRONG_FILTER or excludes):
            found = cheapest(candidates, extracts_filters)
            if found is not None:
                what = "exclude values and keep" if excludes else "keep"
                reason = f"the query names metadata filters that {what} {1 - selectivity:.0%} of the collection"
                return found, 0.5 + selectivity / 2, reason
        if f.get("summary_cues", 0.0) >= 1 and long_docs:
            found = cheapest(candidates, needs_tree) or cheapest(candidates, assembles_passages)
            if found is not None:
                return found, 0.6, "a summary question over long documents: a summary tree or passages"
        multi_entity = f.get("entities", 0.0) >= 2 and (f.get("and_or", 0.0) >= 1 or f.get("comparison_cues", 0.0) >= 1)
        graph_signal = f.get("graph_entities", 0.0) >= 2 or f.get("graph_loaded", 0.0) == 0
        if (f.get("comparison_cues", 0.0) >= 1 or multi_entity) and graph_signal:
            found = cheapest(candidates, needs_graph)
            if found is not None:
                return found, 0.55, "a comparison or several named entities: a graph pipeline links them"
        if long_docs and f.get("is_question", 0.0) and f.get("summary_cues", 0.0) == 0:
            found = cheapest(candidates, assembles_passages)
            if found is not None:
                return found, 0.55, "a specific question over long documents: passages around the best hits"
        return fallback(candidates), 0.5, "no rule fired: the reliable default"


def heuristic_instead(by: str, why: str, query: str, features: Features, candidates: Sequence[Pipeline]) -> Choice:
    """The heuristic rules' choice for selector ``by``, which stood aside: the reasoning starts with ``why``,
    and the selector reads ``by>heuristic`` (as the LLM selector's fallbacks do)."""
    found = HeuristicSelector().select(query, features, candidates)
    return Choice(found.pipeline, found.confidence, f"{why}: {found.reasoning}", f"{by}>heuristic", found.ranking)
