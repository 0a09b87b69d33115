"""Filter extraction on schemas other than netflix: a movie catalogue and a product catalogue, each with its
own phrasings (the queries were written before the rules were tuned). The paper index is held out
(tests/test_filters_heldout.py)."""

from __future__ import annotations

import ast
from datetime import date
from pathlib import Path

import pytest

from tests.filter_corpora import TODAY, Expected, found, movies
from waypost.errors import InvalidInputError
from waypost.filters.extract import Extraction, FilterExtractor
from waypost.index.metadata import MetadataIndex

MOVIE_CASES: list[tuple[str, Expected]] = [
    (
        "Any thriller movies from the 2010s",
        {("genres", "eq", "Thriller"), ("year", "gte", 2010), ("year", "lte", 2019)},
    ),
    ("dramas scoring 8.5 or more on IMDb", {("genres", "eq", "Drama"), ("imdb_rating", "gte", 8.5)}),
    ("films with a Metascore above 79", {("meta_score", "gt", 79)}),
    ("comedies at most 120 min long", {("genres", "eq", "Comedy"), ("runtime_minutes", "lte", 120)}),
    ("horror films from the 60s", {("genres", "eq", "Horror"), ("year", "gte", 1960), ("year", "lte", 1969)}),
    (
        "westerns released between 1990 and 1995",
        {("genres", "eq", "Western"), ("year", "gte", 1990), ("year", "lte", 1995)},
    ),
    ("movies directed by Maren Okafor", {("director", "eq", "Maren Okafor")}),
    ("Okafor films rated at least 7", {("director", "eq", "Maren Okafor"), ("imdb_rating", "gte", 7)}),
    ("sci-fi movies no longer than 2 hours", {("genres", "eq", "Sci-Fi"), ("runtime_minutes", "lte", 120)}),
    (
        "animated movies newer than 2015 with an IMDb rating over 7.5",
        {("genres", "eq", "Animation"), ("year", "gt", 2015), ("imdb_rating", "gt", 7.5)},
    ),
    ("top 10 thrillers", {("genres", "eq", "Thriller")}),
    ("Apollo 13", set()),
    (
        "war movies from the '90s under 100 minutes",
        {("genres", "eq", "War"), ("year", "gte", 1990), ("year", "lte", 1999), ("runtime_minutes", "lt", 100)},
    ),
    ("documentaries made in the last 5 years", {("genres", "eq", "Documentary"), ("year", "gte", 2020)}),
    (
        "romance films before 1970 with a meta score of at least 60",
        {("genres", "eq", "Romance"), ("year", "lt", 1970), ("meta_score", "gte", 60)},
    ),
    (
        "crime dramas from 1990 to 1995 rated 8 or higher",
        {
            ("genres", "eq", "Crime"),
            ("genres", "eq", "Drama"),
            ("year", "gte", 1990),
            ("year", "lte", 1995),
            ("imdb_rating", "gte", 8),
        },
    ),
    ("thrillers longer than 150 minutes", {("genres", "eq", "Thriller"), ("runtime_minutes", "gt", 150)}),
    ("movies since 2012 by Tomasz Lindqvist", {("year", "gte", 2012), ("director", "eq", "Tomasz Lindqvist")}),
    (
        "comedies in the nineties with a metascore below 40",
        {("genres", "eq", "Comedy"), ("year", "gte", 1990), ("year", "lte", 1999), ("meta_score", "lt", 40)},
    ),
    ("horror movies 1980-1985", {("genres", "eq", "Horror"), ("year", "gte", 1980), ("year", "lte", 1985)}),
    ("recent sci-fi", {("genres", "eq", "Sci-Fi"), ("year", "gte", 2022)}),
    (
        "action movies between 90 and 110 minutes",
        {("genres", "eq", "Action"), ("runtime_minutes", "gte", 90), ("runtime_minutes", "lte", 110)},
    ),
    ("dramas older than 1960", {("genres", "eq", "Drama"), ("year", "lt", 1960)}),
]

PRODUCT_CASES: list[tuple[str, Expected]] = [
    ("headphones under $100", {("category", "eq", "Headphones"), ("price_usd", "lt", 100)}),
    ("laptops lighter than 1.5 kg", {("category", "eq", "Laptops"), ("weight_kg", "lt", 1.5)}),
    (
        "Northwind backpacks in stock",
        {("brand", "eq", "Northwind"), ("category", "eq", "Backpacks"), ("in_stock", "eq", True)},
    ),
    ("coffee makers that cost at most 80 dollars", {("category", "eq", "Coffee Makers"), ("price_usd", "lte", 80)}),
    ("running shoes rated 4.5 stars or more", {("category", "eq", "Running Shoes"), ("rating", "gte", 4.5)}),
    ("laptops released after March 2023", {("category", "eq", "Laptops"), ("released", "gt", "2023-03")}),
    ("headphones released in 2022", {("category", "eq", "Headphones"), ("released", "eq", 2022)}),
    ("backpacks weighing no more than 800 g", {("category", "eq", "Backpacks"), ("weight_kg", "lte", 0.8)}),
    (
        "Blue Harbor coffee makers between $50 and $120",
        {
            ("brand", "eq", "Blue Harbor"),
            ("category", "eq", "Coffee Makers"),
            ("price_usd", "gte", 50),
            ("price_usd", "lte", 120),
        },
    ),
    ("laptops with a warranty of at least 3 years", {("category", "eq", "Laptops"), ("warranty_years", "gte", 3)}),
    ("out of stock headphones", {("category", "eq", "Headphones"), ("in_stock", "eq", False)}),
    ("products released in the last 2 years", {("released", "gte", "2023-06-01")}),
    ("top 5 laptops", {("category", "eq", "Laptops")}),
    ("headphones priced over 200", {("category", "eq", "Headphones"), ("price_usd", "gt", 200)}),
    (
        "backpacks from Northwind or Kestrel",
        {("category", "eq", "Backpacks"), ("brand", "in", ("Kestrel", "Northwind"))},
    ),
    ("running shoes under 300 grams", {("category", "eq", "Running Shoes"), ("weight_kg", "lt", 0.3)}),
    ("coffee makers with 4 stars or better", {("category", "eq", "Coffee Makers"), ("rating", "gte", 4)}),
    ("laptops from 2024", {("category", "eq", "Laptops"), ("released", "eq", 2024)}),
    ("cheap headphones under 50 bucks", {("category", "eq", "Headphones"), ("price_usd", "lt", 50)}),
]


@pytest.mark.parametrize(("query", "expected"), MOVIE_CASES)
def test_movie_catalogue(movie_extractor: FilterExtractor, query: str, expected: Expected) -> None:
    assert found(movie_extractor, query) == expected


@pytest.mark.parametrize(("query", "expected"), PRODUCT_CASES)
def test_product_catalogue(product_extractor: FilterExtractor, query: str, expected: Expected) -> None:
    assert found(product_extractor, query) == expected


def test_director_field_is_past_any_value_cap(movie_extractor: FilterExtractor) -> None:
    assert len(movie_extractor.index.values("director")) > 300
    assert "director" in movie_extractor.values.name_fields
    # lower-case full names match; a surname several directors share matches none of them
    assert found(movie_extractor, "films by tomasz lindqvist") == {("director", "eq", "Tomasz Lindqvist")}
    shared = {d.split()[-1] for d in movie_extractor.index.values("director") if not d.endswith("Okafor")}
    surname = sorted(shared)[0]
    assert found(movie_extractor, f"films by {surname}") == set()


def test_strict_and_inclusive_bounds(movie_extractor: FilterExtractor) -> None:
    assert found(movie_extractor, "Metascore above 79") == {("meta_score", "gt", 79)}
    assert found(movie_extractor, "Metascore 79 or more") == {("meta_score", "gte", 79)}
    assert found(movie_extractor, "runtime under 120 minutes") == {("runtime_minutes", "lt", 120)}
    assert found(movie_extractor, "runtime of 120 minutes or less") == {("runtime_minutes", "lte", 120)}


def test_comparison_symbols(movie_extractor: FilterExtractor) -> None:
    # found by review: a word boundary before ">" never matched after a space, so "year < 1990" read as year = 1990
    assert found(movie_extractor, "films with year < 1990") == {("year", "lt", 1990)}
    assert found(movie_extractor, "imdb rating >= 8") == {("imdb_rating", "gte", 8)}
    assert found(movie_extractor, "metascore > 75") == {("meta_score", "gt", 75)}
    assert found(movie_extractor, "runtime <= 100 minutes") == {("runtime_minutes", "lte", 100)}


def test_relative_years_follow_the_clock() -> None:
    extractor = FilterExtractor(MetadataIndex.build(movies()), today=lambda: TODAY.replace(year=2030))
    assert found(extractor, "films from the last 5 years") == {("year", "gte", 2025)}


def test_extracted_filter_selects_rows(movie_extractor: FilterExtractor) -> None:
    result = movie_extractor.extract("thriller movies from the 2010s scoring 8.5 or more on IMDb")
    assert result.filter is not None
    rows = movies()
    want = {
        i
        for i, r in enumerate(rows)
        if "Thriller" in r["genres"] and 2010 <= r["year"] <= 2019 and r["imdb_rating"] >= 8.5
    }
    index = movie_extractor.index
    assert isinstance(index, MetadataIndex)
    assert set(index.mask(result.filter).nonzero()[0].tolist()) == want


def test_filters_do_not_import_the_index() -> None:
    """Extraction reads the metadata through ``FieldCatalog``; no module of waypost.filters imports waypost.index."""
    package = Path(__file__).resolve().parents[1] / "src" / "waypost" / "filters"
    for path in package.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith("waypost.index"), f"{path.name} imports {node.module}"


def test_the_words_read_as_values_are_reported(movie_extractor: FilterExtractor) -> None:
    # stage 1 counts them as terms the catalogue holds: never the request, question or stop words
    assert movie_extractor.extract("Show me thriller movies from the 2010s").read_words == ["thriller", "2010s"]
    assert movie_extractor.extract("what is a good movie about space").read_words == []
    assert movie_extractor.extract("Which thriller movies are there?").read_words == ["thriller"]
    assert movie_extractor.extract("Recommend thriller movies").read_words == ["thriller"]
    # cues, units of a comparison and excluded values are not what the rows hold
    assert movie_extractor.extract("comedies at most 120 min long").read_words == ["comedies", "120"]
    assert movie_extractor.extract("thrillers but not comedies").read_words == ["thrillers"]
    # a field's own name is ("scoring" for meta_score)
    assert movie_extractor.extract("dramas scoring 8.5 or more").read_words == ["dramas", "scoring", "8", "5"]
    # a number or a field's word the extractor did not read is the semantic query's
    assert movie_extractor.extract("top 5 thrillers from 1995").read_words == ["thrillers", "1995"]
    assert movie_extractor.extract("a documentary about a film director").read_words == ["documentary"]


def test_a_query_read_again_gives_the_same_reading_and_a_copy_of_it() -> None:
    # stage 1, the router's features and the metadata strategy read one query: the extractor keeps its reading
    clock = [TODAY.replace(year=2030)]
    extractor = FilterExtractor(MetadataIndex.build(movies()), today=lambda: clock[0])
    first = extractor.extract("thriller films from the last 5 years")
    first.matches.append("changed by a caller")
    first.read_words.clear()
    again = extractor.extract("thriller films from the last 5 years")
    assert again.filter == first.filter and "changed by a caller" not in again.matches
    assert again.read_words == ["thriller", "5", "years"]
    assert found(extractor, "films from the last 5 years") == {("year", "gte", 2025)}
    clock[0] = TODAY.replace(year=2031)  # a new day reads the relative years anew
    assert found(extractor, "films from the last 5 years") == {("year", "gte", 2026)}


def counted_reads(extractor: FilterExtractor) -> list[str]:
    """The queries ``extractor`` reads by its rules from now on (not those it hands out from kept readings)."""
    reads: list[str] = []
    rules = extractor._read_query

    def counted(query: str, today: date) -> Extraction:
        reads.append(query)
        return rules(query, today)

    extractor._read_query = counted  # type: ignore[method-assign]
    return reads


def test_a_query_is_read_once_while_its_reading_is_kept() -> None:
    extractor = FilterExtractor(MetadataIndex.build(movies()), today=lambda: TODAY)
    reads = counted_reads(extractor)
    for _ in range(3):
        extractor.extract("thriller movies from the 2010s")
    assert reads == ["thriller movies from the 2010s"]
    # a list of values is each caller's own
    first = extractor.extract("thrillers or comedies")
    listed = next(c for c in first.conditions if isinstance(c.value, list))
    listed.value.append("Injected")
    assert "Injected" not in str(extractor.extract("thrillers or comedies").filter)
    none_kept = FilterExtractor(MetadataIndex.build(movies()), today=lambda: TODAY, readings_kept=0)
    assert none_kept.extract("thriller movies").filter == extractor.extract("thriller movies").filter


def test_the_least_recently_read_query_is_forgotten_first() -> None:
    extractor = FilterExtractor(MetadataIndex.build(movies()), today=lambda: TODAY, readings_kept=2)
    reads = counted_reads(extractor)
    for query in ["thrillers", "comedies", "thrillers", "dramas", "thrillers", "comedies"]:
        extractor.extract(query)
    # "thrillers" read again stays kept; "comedies", the least recent when "dramas" came, is read anew
    assert reads == ["thrillers", "comedies", "dramas", "comedies"]


def test_a_reading_uses_the_day_of_its_key_even_if_the_clock_moves_on() -> None:
    days = iter([TODAY.replace(year=2030), *[TODAY.replace(year=2031)] * 10])
    extractor = FilterExtractor(MetadataIndex.build(movies()), today=lambda: next(days), readings_kept=0)
    assert found(extractor, "films from the last 5 years") == {("year", "gte", 2025)}


@pytest.mark.parametrize("kept", [-1, 1.5, True, "10"])
def test_readings_kept_must_be_a_whole_number_not_below_zero(kept: object) -> None:
    with pytest.raises(InvalidInputError, match="readings_kept"):
        FilterExtractor(MetadataIndex.build(movies()), readings_kept=kept)  # type: ignore[arg-type]
