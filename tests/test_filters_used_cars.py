"""Filter extraction on an invented used-car lot, with the readings a third held-out set (``bench_filter_schemas.py
--set c``: cars, jobs, trails) showed wrong on its first run: values implied by the data, two values of one field
joined by "and" or "or", and exclusions by "not at" and "outside"."""

from __future__ import annotations

import pytest

from tests.filter_corpora import Expected, extractor_of, found, used_cars
from waypost.filters.extract import FilterExtractor
from waypost.filters.model import Or


@pytest.fixture(scope="module")
def cars() -> FilterExtractor:
    return extractor_of(used_cars())


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # every electric car is an automatic, so the transmission adds nothing: no condition
        ("electric cars under 50,000 km", {("fuel", "eq", "Electric"), ("mileage_km", "lt", 50000)}),
        ("an electric SUV with a heat pump", {("fuel", "eq", "Electric"), ("body_type", "eq", "SUV"),
                                              ("features", "eq", "Heat pump")}),
    ],
)  # fmt: skip
def test_a_value_that_other_values_imply_is_no_filter(cars: FilterExtractor, query: str, expected: Expected) -> None:
    assert found(cars, query) == expected


def test_a_seller_implies_nothing_either(cars: FilterExtractor) -> None:
    assert found(cars, "cars from Autohaus Brenner") == {("seller", "eq", "Autohaus Brenner")}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # two values of a list field joined by "and": both wanted, in one clause (it had read as either clause)
        ("diesel with heated seats and a tow bar under 20000 euros",
         {("fuel", "eq", "Diesel"), ("features", "eq", "Heated seats"), ("features", "eq", "Tow bar"),
          ("price_eur", "lt", 20000)}),
        # "Kia or Hyundai" is one field's alternatives; "white" and "SUV" hold for both
        ("white Kia or Hyundai SUV", {("color", "eq", "White"), ("make", "in", ("Hyundai", "Kia")),
                                      ("body_type", "eq", "SUV")}),
    ],
)  # fmt: skip
def test_two_values_of_one_field_joined_are_one_clause(cars: FilterExtractor, query: str, expected: Expected) -> None:
    extraction = cars.extract(query)
    assert not isinstance(extraction.filter, Or)
    assert found(cars, query) == expected


def test_parallel_clauses_still_split(cars: FilterExtractor) -> None:
    """The values at the joiner differ in field (a country, then a fuel): two clauses."""
    extraction = cars.extract("diesels from Austria or electric cars from Germany")
    assert isinstance(extraction.filter, Or)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("diesels, but not at Autohaus Brenner", {("fuel", "eq", "Diesel"), ("seller", "ne", "Autohaus Brenner")}),
        ("estates outside Switzerland", {("body_type", "eq", "Estate"), ("country", "ne", "Switzerland")}),
        ("estates outside of Germany", {("body_type", "eq", "Estate"), ("country", "ne", "Germany")}),
        # "outside" before a thing, not a name, excludes nothing
        ("a black car with an outside heat pump", {("color", "eq", "Black"), ("features", "eq", "Heat pump")}),
    ],
)  # fmt: skip
def test_exclusions_by_not_at_and_outside(cars: FilterExtractor, query: str, expected: Expected) -> None:
    assert found(cars, query) == expected
