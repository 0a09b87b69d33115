"""Collection ``auto`` for the HTTP API and MCP: stage 1 routing chooses the collection(s), as
``waypost query --collection auto`` (search, fused across several) and ``waypost ask --collection auto``
(the answer comes from the lead collection alone) do."""

from __future__ import annotations

from functools import partial

from waypost.aio import AsyncEngine
from waypost.filters.model import Filter
from waypost.route.search import choose_collections
from waypost.server.models import CollectionChoiceOut
from waypost.server.views import choice_out
from waypost.types import RetrievalResult
from waypost.validation import AUTO_COLLECTION, query_text

AUTO_REFUSES = "collection auto takes no params, passages or rerank (they tune one collection's pipeline)"


def is_auto(collection: str) -> bool:
    return collection == AUTO_COLLECTION


async def search_auto(
    engine: AsyncEngine, query: str, strategy: str, k: int, filters: Filter | None
) -> tuple[RetrievalResult, CollectionChoiceOut, list[str]]:
    """``Engine.search`` with no collections named (on the engine's pool), what stage 1 chose, and the
    collections the hits come from: the chosen ones, or the runner-up whose result the corrective loop
    kept when stage 1 was unsure of a single choice."""
    result = await engine.run(partial(engine.sync.search, query, k, None, strategy, filters))
    route = result.explanation.route or {}
    choice = CollectionChoiceOut.model_validate(route["collections"])  # search always records its choice here
    kept = route.get("collection")
    answered = [kept] if len(choice.collections) == 1 and isinstance(kept, str) and kept else choice.collections
    return result, choice, answered


async def choose(engine: AsyncEngine, question: str) -> CollectionChoiceOut:
    """Stage 1 alone: the collections for ``question``; the first is the one to answer from."""
    choice = await engine.run(lambda: choose_collections(engine.sync, query_text(question, "question")))
    return choice_out(choice)
