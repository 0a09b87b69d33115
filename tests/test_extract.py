import pytest

from waypost.filters.extract import FilterExtractor
from waypost.filters.model import Condition, Op
from waypost.index.metadata import MetadataIndex

CATALOGUE = [
    {
        "type": "Movie",
        "categories": ["Documentaries"],
        "countries": ["India"],
        "release_year": 2018,
        "rating": "TV-14",
        "duration_minutes": 95,
    },
    {
        "type": "Movie",
        "categories": ["Documentaries", "International Movies"],
        "countries": ["United States"],
        "release_year": 2012,
        "rating": "R",
        "duration_minutes": 120,
    },
    {
        "type": "Movie",
        "categories": ["Horror Movies"],
        "countries": ["United States"],
        "release_year": 2019,
        "rating": "R",
        "duration_minutes": 88,
    },
    {
        "type": "Movie",
        "categories": ["Comedies"],
        "countries": ["Mexico"],
        "release_year": 2019,
        "rating": "PG-13",
        "duration_minutes": 101,
    },
    {
        "type": "TV Show",
        "categories": ["TV Comedies"],
        "countries": ["United Kingdom"],
        "release_year": 2016,
        "rating": "TV-MA",
        "seasons": 3,
    },
    {
        "type": "TV Show",
        "categories": ["Docuseries", "Crime TV Shows"],
        "countries": ["India"],
        "release_year": 2021,
        "rating": "TV-MA",
        "seasons": 1,
    },
    {
        "type": "TV Show",
        "categories": ["Kids' TV", "TV Horror"],
        "countries": ["Japan"],
        "release_year": 2005,
        "rating": "TV-Y7",
        "seasons": 4,
    },
    {
        "type": "Movie",
        "categories": ["Children & Family Movies", "Action & Adventure"],
        "countries": ["France"],
        "release_year": 2001,
        "rating": "G",
        "duration_minutes": 70,
    },
]


@pytest.fixture(scope="module")
def extractor() -> FilterExtractor:
    return FilterExtractor(MetadataIndex.build(CATALOGUE))


def extract(extractor: FilterExtractor, query: str) -> tuple[set[tuple[str, str, object]], str]:
    result = extractor.extract(query)

    def value(v: object) -> object:
        return tuple(sorted(v)) if isinstance(v, list) else v  # type: ignore[arg-type]

    return {(c.field, c.op.value, value(c.value)) for c in result.conditions}, result.semantic_query


def test_issue_example(extractor: FilterExtractor) -> None:
    conds, rest = extract(extractor, "documentaries from India released after 2015")
    assert conds == {
        ("categories", "eq", "Documentaries"),
        ("countries", "eq", "India"),
        ("release_year", "gt", 2015),
        ("type", "eq", "Movie"),
    }
    assert rest == ""


@pytest.mark.parametrize(
    ("query", "expected", "rest"),
    [
        (
            "Show me comedies Mexico from 2017 or later",
            {
                ("categories", "eq", "Comedies"),
                ("countries", "eq", "Mexico"),
                ("release_year", "gte", 2017),
                ("type", "eq", "Movie"),
            },
            "",
        ),
        (
            "Find comedy series from 2005 to 2007",
            {
                ("categories", "eq", "TV Comedies"),
                ("release_year", "gte", 2005),
                ("release_year", "lte", 2007),
                ("type", "eq", "TV Show"),
            },
            "",
        ),
        (
            "Horror movies from United States under 101 minutes rated R",
            {
                ("categories", "eq", "Horror Movies"),
                ("countries", "eq", "United States"),
                ("duration_minutes", "lt", 101),
                ("rating", "eq", "R"),
                ("type", "eq", "Movie"),
            },
            "",
        ),
        (
            "kids' shows from Japan with at least 2 seasons",
            {
                ("categories", "eq", "Kids' TV"),
                ("countries", "eq", "Japan"),
                ("seasons", "gte", 2),
                ("type", "eq", "TV Show"),
            },
            "",
        ),
        (
            "family films for kids where the story is about space",
            {("categories", "eq", "Children & Family Movies"), ("type", "eq", "Movie")},
            "space",
        ),
        (
            "crime series with a TV-MA rating involving murder",
            {("categories", "eq", "Crime TV Shows"), ("rating", "eq", "TV-MA"), ("type", "eq", "TV Show")},
            "murder",
        ),
        (
            "action and adventure films released before 2002",
            {("categories", "eq", "Action & Adventure"), ("release_year", "lt", 2002), ("type", "eq", "Movie")},
            "",
        ),
        ("how do vaccines work", set(), "how do vaccines work"),
    ],
)
def test_extraction(extractor: FilterExtractor, query: str, expected: set[tuple[str, str, object]], rest: str) -> None:
    conds, semantic = extract(extractor, query)
    assert conds == expected
    assert semantic == rest


def test_extracted_filter_selects_the_right_rows(extractor: FilterExtractor) -> None:
    result = extractor.extract("documentaries from India released after 2015")
    assert result.filter is not None
    assert extractor.index.mask(result.filter).nonzero()[0].tolist() == [0]
    assert Condition("countries", Op.EQ, "India") in result.conditions


def test_alternative_codes_become_in(extractor: FilterExtractor) -> None:
    conds, _ = extract(extractor, "movies rated R or PG-13")
    assert ("rating", "in", ("PG-13", "R")) in {
        (f, o, tuple(sorted(v)) if isinstance(v, list) else v) for f, o, v in conds
    }
    conds, _ = extract(extractor, "R&D documentaries")
    assert not any(f == "rating" for f, _, _ in conds)
