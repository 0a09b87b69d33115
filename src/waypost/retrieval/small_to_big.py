"""small-to-big: match on small chunks, return each with its neighbours in the same section."""

from __future__ import annotations

from waypost.post.passages import PassagePolicy
from waypost.retrieval.passage_strategy import PassageStrategy


class SmallToBigRetriever(PassageStrategy):
    name = "small-to-big"
    policy = PassagePolicy.SMALL_TO_BIG
