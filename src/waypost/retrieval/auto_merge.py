"""auto-merge: when several retrieved chunks share a section, return the section (within the budget)
instead of the fragments."""

from __future__ import annotations

from waypost.post.passages import PassagePolicy
from waypost.retrieval.passage_strategy import PassageStrategy


class AutoMergeRetriever(PassageStrategy):
    name = "auto-merge"
    policy = PassagePolicy.AUTO_MERGE
