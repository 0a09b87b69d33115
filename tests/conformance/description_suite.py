"""Collection descriptions (what collection selectors read): part of the ``DocumentStore`` contract."""

from __future__ import annotations

import pytest

from tests.conformance.store_suite import DIM, item
from waypost.base import DocumentStore
from waypost.errors import CollectionNotFoundError


class DescriptionConformance:
    def test_a_description_is_kept_per_collection_and_moves_no_generation(self, store: DocumentStore) -> None:
        store.create_collection("films", "m", DIM)
        store.create_collection("papers", "m", DIM)
        assert store.collection("films").description == ""
        store.write("films", [item("d1", "A film about a heist.")])
        before = store.version("films")
        store.set_collection_description("films", "Movies: plot summaries, ratings, directors.")
        assert store.collection("films").description == "Movies: plot summaries, ratings, directors."
        assert store.collection_description("films") == "Movies: plot summaries, ratings, directors."
        assert store.collection("papers").description == ""
        assert store.version("films") == before  # not a content change: cached results stay valid
        assert [c.description for c in store.collections()] == ["Movies: plot summaries, ratings, directors.", ""]
        store.set_collection_description("films", "")
        assert store.collection("films").description == ""

    def test_a_recreated_collection_starts_without_one(self, store: DocumentStore) -> None:
        store.create_collection("c", "m", DIM)
        store.set_collection_description("c", "old")
        store.drop_collection("c")
        with pytest.raises(CollectionNotFoundError):
            store.set_collection_description("c", "nobody")
        with pytest.raises(CollectionNotFoundError):
            store.collection_description("c")
        store.create_collection("c", "m", DIM)
        assert store.collection("c").description == ""
