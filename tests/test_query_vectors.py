"""A search embeds its query once: stage 1's vector serves the collection's own pass and the merge."""

from __future__ import annotations

import contextvars
import json
from collections.abc import Callable

import numpy as np
import pytest

from tests.test_route_collections import RECIPES, SKY
from waypost.embeddings.query_vectors import one_search, query_vector
from waypost.engine import Engine

QUERY = "how long should bread dough rise before baking"


@pytest.fixture
def counted(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts the engine's (real) embedder embeds as queries from now on."""
    for name, docs in (("recipes", RECIPES), ("sky", SKY)):
        engine.collection(name, create=True).add(docs)
    kind = type(engine.collection("recipes").embedder)
    original: Callable[..., np.ndarray] = kind.embed_query
    texts: list[str] = []

    def embed_query(self: object, text: str) -> np.ndarray:
        texts.append(text)
        return original(self, text)

    monkeypatch.setattr(kind, "embed_query", embed_query)
    return texts


def test_an_auto_search_embeds_its_query_once(engine: Engine, counted: list[str]) -> None:
    result = engine.search(QUERY)
    assert result.explanation.route is not None and result.hits
    assert counted == [QUERY]
    counted.clear()
    engine.search(QUERY, collections=["recipes", "sky"], strategy="hybrid")  # two passes and their merge
    assert counted == [QUERY]


def test_outside_a_search_each_call_embeds(engine: Engine, counted: list[str]) -> None:
    recipes = engine.collection("recipes")
    first = recipes.retrieve(QUERY, "hybrid")
    again = recipes.retrieve(QUERY, "hybrid")
    assert counted == [QUERY, QUERY]
    assert [h.chunk.id for h in first.hits] == [h.chunk.id for h in again.hits]


def test_a_kept_vector_is_shared_read_only_and_forgotten_after_the_search(engine: Engine, counted: list[str]) -> None:
    embedder = engine.collection("recipes").embedder
    with one_search():
        vector = query_vector(embedder, QUERY)
        assert query_vector(embedder, QUERY) is vector and counted == [QUERY]
        with pytest.raises(ValueError, match="read-only"):
            vector *= 2
        query_vector(embedder, "another question")
    assert counted == [QUERY, "another question"]
    assert np.allclose(query_vector(embedder, QUERY), vector) and len(counted) == 3


def test_a_context_copied_inside_a_search_keeps_no_vector_after_it(engine: Engine, counted: list[str]) -> None:
    """An asyncio task or a copied context started inside the search holds the memo: it is emptied at the end."""
    embedder = engine.collection("recipes").embedder
    with one_search():
        query_vector(embedder, QUERY)
        inside = contextvars.copy_context()
    inside.run(query_vector, embedder, QUERY)
    inside.run(query_vector, embedder, QUERY)
    assert counted == [QUERY, QUERY, QUERY]


def test_the_parts_of_a_planned_question_share_the_searchs_vectors(engine: Engine, counted: list[str]) -> None:
    """The planner runs the question and its parts in threads, each in a copy of the search's context."""
    question = "bread dough rise compare sky and recipes"
    result = engine.search(question)
    parts = json.loads(next(n for n in result.explanation.notes if n.startswith("sub-queries: "))[13:])
    assert len(parts) == 2
    assert sorted(counted) == sorted([question, *parts])
