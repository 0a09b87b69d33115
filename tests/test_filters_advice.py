"""A question for advice, a definition or an opinion names values as its topic, not as a filter
(``filters/advice.py``); a request asked as a question is still read. On an invented used-car lot."""

from __future__ import annotations

import pytest

from tests.filter_corpora import Expected, extractor_of, found, used_cars
from waypost.filters.extract import FilterExtractor


@pytest.fixture(scope="module")
def cars() -> FilterExtractor:
    return extractor_of(used_cars())


@pytest.mark.parametrize(
    "query",
    [
        "how do I sell my Kia in Germany?",
        "How long does a transfer of a Volvo take?",
        "what does a heat pump actually do?",
        "what does 'Estate' mean here?",
        "what's the difference between an estate and an SUV?",
        "should I buy a diesel in 2025?",
        "do I need winter tyres in Austria?",
        "is it safe to buy an electric car from Autohaus Brenner?",
        "is 150,000 km too much for a diesel?",
        "is 20000 euros a good price for a Skoda?",
        "can I return my car to Nordlicht Cars?",
        "hi, how can I sell my Hyundai?",
        # a word of asking for items after the opening, but for the asker's own things or a way somewhere
        "how do I check my Volvo's service history?",
        "should I buy a Kia? Is it good in winter?",
        "is it safe to park a Volvo in St. Moritz?",
        "what should I pack for a drive to Austria?",
        "how do I get to the Kia showroom?",
        "do I need to book a test drive for a Kia?",
        "how soon can I get a Volvo delivered?",
        "what does 'available' mean next to a Kia?",
        "what's the difference between a Kia and a Hyundai, and which is better?",
    ],
)
def test_a_question_for_advice_is_no_request(cars: FilterExtractor, query: str) -> None:
    extraction = cars.extract(query)
    assert extraction.filter is None
    assert any("advice" in m for m in extraction.matches)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("can I get a diesel estate under 20000 euros?", {("fuel", "eq", "Diesel"), ("body_type", "eq", "Estate"),
                                                         ("price_eur", "lt", 20000)}),
        ("can you show me Kia SUVs?", {("make", "eq", "Kia"), ("body_type", "eq", "SUV")}),
        ("is there a white Volvo with a sunroof?", {("color", "eq", "White"), ("make", "eq", "Volvo"),
                                                    ("features", "eq", "Sunroof")}),
        ("how many Skodas are there under 10000 euros?", {("make", "eq", "Skoda"), ("price_eur", "lt", 10000)}),
        ("which estates have a tow bar?", {("body_type", "eq", "Estate"), ("features", "eq", "Tow bar")}),
        # an opening that could ask for advice, then a word of asking for items: a request
        ("can you please show me Kia SUVs?", {("make", "eq", "Kia"), ("body_type", "eq", "SUV")}),
        ("can you help me find a diesel estate?", {("fuel", "eq", "Diesel"), ("body_type", "eq", "Estate")}),
        ("can you tell me which Kias have a sunroof?", {("make", "eq", "Kia"), ("features", "eq", "Sunroof")}),
        ("can I just see white Volvos?", {("color", "eq", "White"), ("make", "eq", "Volvo")}),
        ("how do I find a Kia under 10000 euros?", {("make", "eq", "Kia"), ("price_eur", "lt", 10000)}),
        ("is it possible to get a Volvo under 10000 euros?", {("make", "eq", "Volvo"), ("price_eur", "lt", 10000)}),
        ("are there any Volvos that aren't too expensive?", {("make", "eq", "Volvo")}),
        ("is there a Kia under 10000 euros that is not too old?", {("make", "eq", "Kia"),
                                                                  ("price_eur", "lt", 10000)}),
        ("can I have diesel estates only?", {("fuel", "eq", "Diesel"), ("body_type", "eq", "Estate")}),
        ("can you give me Kias under 10000 euros?", {("make", "eq", "Kia"), ("price_eur", "lt", 10000)}),
        ("can I filter to electric SUVs?", {("fuel", "eq", "Electric"), ("body_type", "eq", "SUV")}),
    ],
)  # fmt: skip
def test_a_request_asked_as_a_question_is_still_read(cars: FilterExtractor, query: str, expected: Expected) -> None:
    assert found(cars, query) == expected


def test_a_question_for_advice_about_films(movie_extractor: FilterExtractor) -> None:
    assert movie_extractor.extract("what does film noir mean?").filter is None
    assert found(movie_extractor, "what should I watch tonight, maybe a thriller?") != set()


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # a judgement in one sentence, a request in the next: the request is read
        ("should I go for diesel? show me Volvo estates under 10000 euros",
         {("fuel", "eq", "Diesel"), ("make", "eq", "Volvo"), ("body_type", "eq", "Estate"),
          ("price_eur", "lt", 10000)}),
        # a procedure opening with a verb that is no errand: a request
        ("can you display Kia SUVs?", {("make", "eq", "Kia"), ("body_type", "eq", "SUV")}),
        ("can you narrow it down to diesel estates?", {("fuel", "eq", "Diesel"), ("body_type", "eq", "Estate")}),
        ("can you find her a white Volvo?", {("color", "eq", "White"), ("make", "eq", "Volvo")}),
        ("would you be able to show me Kia SUVs?", {("make", "eq", "Kia"), ("body_type", "eq", "SUV")}),
        ("is it easy to find a Kia under 10000 euros?", {("make", "eq", "Kia"), ("price_eur", "lt", 10000)}),
        # a fourth review: verbs that search in some catalogue, and asking verbs before "my"
        ("can you change it to Kias under 10000 euros?", {("make", "eq", "Kia"), ("price_eur", "lt", 10000)}),
        ("can you find my family a Volvo estate?", {("make", "eq", "Volvo"), ("body_type", "eq", "Estate")}),
        ("how do I pay less than 10000 euros for a Kia?", {("make", "eq", "Kia"), ("price_eur", "lt", 10000)}),
    ],
)  # fmt: skip
def test_requests_a_review_found_swallowed(cars: FilterExtractor, query: str, expected: Expected) -> None:
    assert found(cars, query) == expected


@pytest.mark.parametrize(
    "query",
    [
        "should I buy a diesel. Show me Volvo estates under 10000 euros",
        "should I buy a diesel? Can you show me Volvos under 10000 euros?",
        "should I buy a diesel? Volvos under 10000 euros please",
    ],
)
def test_a_later_sentence_with_a_filter_of_its_own_is_a_request(cars: FilterExtractor, query: str) -> None:
    assert ("make", "eq", "Volvo") in found(cars, query)


@pytest.mark.parametrize(
    "query",
    ["how do I add a tow bar to my Volvo", "how do I pay for a Kia", "can I return a Kia", "should I buy a Kia? thx"],
)
def test_more_errands_a_fifth_review_found(cars: FilterExtractor, query: str) -> None:
    assert cars.extract(query).filter is None
