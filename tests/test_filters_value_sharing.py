"""The value index's analysis is shared across builds (a new generation stems only the values it adds): every
build still sees exactly its own generation's values, and matches what a build from nothing finds."""

from __future__ import annotations

from tests.filter_corpora import TODAY, movies
from waypost.filters import values
from waypost.filters.extract import FilterExtractor
from waypost.index.metadata import MetadataIndex

QUERIES = [
    "a Lindqvist thriller",
    "films directed by Tomasz Lindqvist",
    "Maren Okafor dramas from the 1990s",
    "comedies by Okafor rated above 7",
    "westerns longer than 2 hours",
]


def extractor(rows: list[dict[str, object]]) -> FilterExtractor:
    return FilterExtractor(MetadataIndex.build(rows), today=lambda: TODAY)


def directors(ex: FilterExtractor, query: str) -> list[object]:
    return [c.value for c in ex.extract(query).conditions if c.field == "director"]


def test_generations_share_analysis_but_not_values() -> None:
    rows = movies()
    first = extractor(rows[:300])  # without the only Lindqvist and the only Okafor (the last two rows)
    assert directors(first, "a Lindqvist thriller") == []
    later = extractor(rows)  # a write added them
    assert directors(later, "a Lindqvist thriller") == ["Tomasz Lindqvist"]
    assert directors(later, "Maren Okafor dramas") == ["Maren Okafor"]
    assert directors(first, "a Lindqvist thriller") == []  # the older generation still sees only its values
    dropped = extractor(rows[:-1])  # Tomasz Lindqvist deleted again
    assert directors(dropped, "films directed by Tomasz Lindqvist") == []
    assert directors(dropped, "Maren Okafor dramas") == ["Maren Okafor"]

    values._SHARED.clear()  # a build from nothing gives the same extractions
    fresh = extractor(rows)
    for query in QUERIES:
        assert str(fresh.extract(query).filter) == str(later.extract(query).filter), query
        assert fresh.extract(query).semantic_query == later.extract(query).semantic_query, query
