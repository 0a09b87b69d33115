"""Parallel clauses on an invented wine list: "red wines from France and white wines from Italy" is either
clause, while alternatives of one field ("red or white wines from Spain") and a value with an exclusion stay
one clause."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tests.filter_corpora import TODAY
from tests.test_filters_everyday import streaming
from waypost.filters.clauses import CLAUSE_MAX_JOINERS, parallel
from waypost.filters.extract import FilterExtractor
from waypost.filters.model import Condition, Op
from waypost.index.metadata import MetadataIndex


def wines() -> list[dict[str, Any]]:
    rng = random.Random(3)
    return [
        {
            "color": rng.choice(["Red", "White", "Rosé"]),
            "country": rng.choice(["France", "Italy", "Spain", "Chile"]),
            "grape": rng.choice(["Merlot", "Syrah", "Chardonnay", "Riesling", "Tempranillo"]),
            "price_eur": 5 + (i * 7) % 60,
        }
        for i in range(200)
    ]


@pytest.fixture(scope="module")
def cellar() -> FilterExtractor:
    return FilterExtractor(MetadataIndex.build(wines()), today=lambda: TODAY)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (
            "red wines from France and white wines from Italy",
            "((color = 'Red' AND country = 'France') OR (color = 'White' AND country = 'Italy'))",
        ),
        (
            "French reds and Italian whites",
            "((country = 'France' AND color = 'Red') OR (country = 'Italy' AND color = 'White'))",
        ),
        (
            "Merlot from Chile or Syrah from France",
            "((grape = 'Merlot' AND country = 'Chile') OR (grape = 'Syrah' AND country = 'France'))",
        ),
        (  # three clauses: the right side splits again
            "red from France, white from Italy and rosé from Spain",
            "((color = 'Red' AND country = 'France') OR ((color = 'White' AND country = 'Italy') OR "
            "(color = 'Rosé' AND country = 'Spain')))",
        ),
        # a condition after the last clause on a field no other clause asks is said for every clause
        (
            "Merlot from Chile or Syrah from France under 20 euros",
            "((grape = 'Merlot' AND country = 'Chile' AND price_eur < 20) OR "
            "(price_eur < 20 AND grape = 'Syrah' AND country = 'France'))",
        ),
        (
            "red from France, white from Italy or rosé from Spain under 30 euros",
            "((color = 'Red' AND country = 'France' AND price_eur < 30) OR ((color = 'White' AND country = 'Italy' "
            "AND price_eur < 30) OR (price_eur < 30 AND color = 'Rosé' AND country = 'Spain')))",
        ),
        (  # ...but not where the last clause needs it to be a clause, nor inside the first clause
            "Merlot from Chile or Chardonnay under 20 euros",
            "((grape = 'Merlot' AND country = 'Chile') OR (price_eur < 20 AND grape = 'Chardonnay'))",
        ),
        (
            "red wines from France under 20 euros and white wines from Italy",
            "((price_eur < 20 AND color = 'Red' AND country = 'France') OR (color = 'White' AND country = 'Italy'))",
        ),
        (  # an ending that opens with a value is the last clause's own ("Syrah"), not a condition said once
            "red from France or Italian white Syrah",
            "((color = 'Red' AND country = 'France') OR (country = 'Italy' AND color = 'White' AND grape = 'Syrah'))",
        ),
        (  # after a comma or a colon, a value is said for every clause
            "red wines from France or white wines from Italy: Merlot",
            "((color = 'Red' AND country = 'France' AND grape = 'Merlot') OR "
            "(color = 'White' AND country = 'Italy' AND grape = 'Merlot'))",
        ),
        (
            "red from France or white from Italy, Merlot only",
            "((color = 'Red' AND country = 'France' AND grape = 'Merlot') OR "
            "(color = 'White' AND country = 'Italy' AND grape = 'Merlot'))",
        ),
        (  # an ending that opens with a number is a condition, not a value of the clause
            "Merlot from Chile or Syrah from France 20 euros or less",
            "((grape = 'Merlot' AND country = 'Chile' AND price_eur <= 20) OR "
            "(price_eur <= 20 AND grape = 'Syrah' AND country = 'France'))",
        ),
        (  # an exclusion or a number in words ends the clause as well
            "Merlot from Chile or Syrah from France, not red",
            "((grape = 'Merlot' AND country = 'Chile' AND color != 'Red') OR "
            "(grape = 'Syrah' AND country = 'France' AND color != 'Red'))",
        ),
        (
            "Merlot from Chile or Syrah from France under twenty euros",
            "((grape = 'Merlot' AND country = 'Chile' AND price_eur < 20) OR "
            "(price_eur < 20 AND grape = 'Syrah' AND country = 'France'))",
        ),
        (  # a value's letters inside a later word ("Syrahlovers") are not a word the reading used
            "red from France or white from Italy under 20 euros for Syrahlovers",
            "((color = 'Red' AND country = 'France' AND price_eur < 20) OR "
            "(price_eur < 20 AND color = 'White' AND country = 'Italy'))",
        ),
        (  # words after the condition do not push it out of the ending looked at
            "red from France or white from Italy under 20 euros that are really lovely for dinner",
            "((color = 'Red' AND country = 'France' AND price_eur < 20) OR "
            "(price_eur < 20 AND color = 'White' AND country = 'Italy'))",
        ),
        (  # a field an earlier clause asks, even two clauses back, stays with the last clause
            "red from France under 10 euros, white from Italy or rosé from Spain under 30 euros",
            "((price_eur < 10 AND color = 'Red' AND country = 'France') OR ((color = 'White' AND country = 'Italy') "
            "OR (price_eur < 30 AND color = 'Rosé' AND country = 'Spain')))",
        ),
        # one clause: alternatives of one field, or a second part with no value of its own
        ("red or white wines from Spain", "(color in ['Red', 'White'] AND country = 'Spain')"),
        ("wines from France and Italy", "country in ['France', 'Italy']"),
        ("Merlot and Syrah from Chile", "(grape in ['Merlot', 'Syrah'] AND country = 'Chile')"),
        (
            "red wines from France and Italy, not Merlot",
            "(color = 'Red' AND country in ['France', 'Italy'] AND grape != 'Merlot')",
        ),
    ],
)
def test_parallel_clauses_read_as_either(cellar: FilterExtractor, query: str, expected: str) -> None:
    assert str(cellar.extract(query).filter) == expected


def test_either_clause_keeps_each_clauses_rows(cellar: FilterExtractor) -> None:
    rows = wines()
    reading = cellar.extract("red wines from France and white wines from Italy")
    assert reading.filter is not None
    kept = {i for i, keep in enumerate(MetadataIndex.build(rows).mask(reading.filter)) if keep}
    assert kept == {
        i for i, r in enumerate(rows) if (r["color"], r["country"]) in {("Red", "France"), ("White", "Italy")}
    }
    assert reading.semantic_query == "wines" and reading.matches[-1].endswith(": either")


def test_parallel_needs_two_wanted_conditions_a_side_and_a_field_asked_differently() -> None:
    red_fr = [Condition("color", Op.EQ, "Red"), Condition("country", Op.EQ, "France")]
    white_it = [Condition("color", Op.EQ, "White"), Condition("country", Op.EQ, "Italy")]
    assert parallel(red_fr, white_it)
    assert not parallel(red_fr, red_fr)
    assert not parallel(red_fr, white_it[:1])
    assert not parallel(red_fr, [Condition("color", Op.NE, "White"), Condition("country", Op.EQ, "Italy")])


def clause_reads(extractor: FilterExtractor, query: str) -> list[tuple[str, bool]]:
    """The pieces of ``query`` an extractor over the same rows reads by its rules (no kept readings)."""
    fresh = FilterExtractor(extractor.index, today=lambda: TODAY, readings_kept=0)
    rules, reads = fresh._read_clause, []

    def counted(text: str, today: Any, imply: bool = True) -> Any:
        reads.append((text, imply))
        return rules(text, today, imply)

    fresh._read_clause = counted  # type: ignore[method-assign, assignment]
    fresh.extract(query)
    return reads


def test_splitting_reads_each_piece_once_and_a_long_text_as_one_clause(cellar: FilterExtractor) -> None:
    for extractor, query in [
        (cellar, "red from France, white from Italy or rosé from Spain and Merlot from Chile"),
        (streaming(), "British movies or Nordic TV shows"),  # the right side's implied values read twice before
    ]:
        reads = clause_reads(extractor, query)
        assert len(reads) == len(set(reads)) and len(reads) > 1, reads
    pasted = ", ".join(f"red from France and white from Italy {i}" for i in range(CLAUSE_MAX_JOINERS))
    assert clause_reads(cellar, pasted) == [(pasted, True)]


def test_a_long_ending_after_parallel_clauses_is_read_a_bounded_number_of_times(cellar: FilterExtractor) -> None:
    """Looking for a condition said once for every clause reads the last few words' endings, not every one of
    a long tail (each read is as long as the tail: quadratic)."""
    counts = []
    for words in (20, 80):
        query = "red wines from France or white wines from Italy " + " ".join(["lovely"] * words)
        counts.append(len(clause_reads(cellar, query)))
    assert counts[0] == counts[1] and counts[0] < 40, counts
