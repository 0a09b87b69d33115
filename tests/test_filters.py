import numpy as np
import pytest

from waypost.errors import FilterError
from waypost.filters.model import And, Condition, Op, Or, parse_filter, parse_filter_json
from waypost.index.metadata import MetadataIndex

META = [
    {"type": "Movie", "year": 2010, "countries": ["India", "France"], "rating": 7.5},
    {"type": "Movie", "year": 2016, "countries": ["India"], "rating": 6.0},
    {"type": "TV Show", "year": 2016, "countries": ["Spain"]},
    {"type": "TV Show", "year": 2020, "countries": [], "rating": 8.0},
    {"title_only": True},
]


def positions(flt: object) -> list[int]:
    return np.flatnonzero(MetadataIndex.build(META).mask(flt)).tolist()  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        (Condition("type", Op.EQ, "Movie"), [0, 1]),
        (Condition("type", Op.EQ, "movie"), [0, 1]),
        (Condition("countries", Op.EQ, "India"), [0, 1]),
        (Condition("countries", Op.IN, ["Spain", "France"]), [0, 2]),
        (Condition("year", Op.GT, 2010), [1, 2, 3]),
        (Condition("year", Op.GTE, 2016), [1, 2, 3]),
        (Condition("year", Op.LT, 2016), [0]),
        (Condition("year", Op.LTE, 2016), [0, 1, 2]),
        (Condition("year", Op.EQ, 2016), [1, 2]),
        (Condition("year", Op.IN, [2010, 2020]), [0, 3]),
        (Condition("rating", Op.GTE, 7.5), [0, 3]),
        (Condition("title_only", Op.EQ, True), [4]),
        # NE / NIN: every row EQ / IN would not match, rows without the field included
        (Condition("type", Op.NE, "movie"), [2, 3, 4]),
        (Condition("countries", Op.NE, "India"), [2, 3, 4]),  # a list field: no element is India
        (Condition("countries", Op.NIN, ["India", "Spain"]), [3, 4]),
        (Condition("year", Op.NE, 2016), [0, 3, 4]),
        (And((Condition("type", Op.EQ, "Movie"), Condition("countries", Op.NE, "France"))), [1]),
        (And((Condition("type", Op.EQ, "TV Show"), Condition("year", Op.GTE, 2016))), [2, 3]),
        (Or((Condition("countries", Op.EQ, "Spain"), Condition("rating", Op.LT, 7))), [1, 2]),
        (
            And(
                (
                    Or((Condition("type", Op.EQ, "Movie"), Condition("year", Op.EQ, 2020))),
                    Condition("countries", Op.EQ, "India"),
                )
            ),
            [0, 1],
        ),
    ],
)
def test_mask(flt: object, expected: list[int]) -> None:
    assert positions(flt) == expected


def test_unknown_field_and_wrong_type_are_clear() -> None:
    index = MetadataIndex.build(META)
    with pytest.raises(FilterError, match="unknown metadata field 'colour'"):
        index.mask(Condition("colour", Op.EQ, "red"))
    with pytest.raises(FilterError, match="numeric"):
        index.mask(Condition("type", Op.GT, 3))
    with pytest.raises(FilterError, match="needs a finite number"):
        Condition("year", Op.GT, "2010")
    with pytest.raises(FilterError, match="list"):
        Condition("year", Op.IN, 2010)


def test_parse_cli_clauses() -> None:
    flt = parse_filter(["type=Movie", "year>=2015", "countries in India,Spain", "rating<7.5"])
    assert flt == And(
        (
            Condition("type", Op.EQ, "Movie"),
            Condition("year", Op.GTE, 2015),
            Condition("countries", Op.IN, ["India", "Spain"]),
            Condition("rating", Op.LT, 7.5),
        )
    )
    with pytest.raises(FilterError):
        parse_filter(["nonsense"])


def test_parse_json_forms() -> None:
    assert parse_filter_json('{"or": [{"type": "Movie"}, {"year": {"$gte": 2020}}]}') == Or(
        (Condition("type", Op.EQ, "Movie"), Condition("year", Op.GTE, 2020))
    )
    assert parse_filter_json('{"field": "year", "op": "lt", "value": 2000}') == Condition("year", Op.LT, 2000)
    with pytest.raises(FilterError):
        parse_filter_json('{"year": {"$near": 3}}')
    with pytest.raises(FilterError):
        parse_filter_json("[1, 2]")


def test_mixed_types_nan_and_bad_values() -> None:
    index = MetadataIndex.build([{"year": 2016}, {"year": "2016"}, {"year": float("nan")}, {"year": 2020}])
    assert index.mask(Condition("year", Op.EQ, 2016)).nonzero()[0].tolist() == [0, 1]
    assert index.mask(Condition("year", Op.EQ, "2016")).nonzero()[0].tolist() == [0, 1]
    assert index.mask(Condition("year", Op.GT, 2017)).nonzero()[0].tolist() == [3]  # NaN is not > anything
    # "2016" equals 2016, so a range reads it as that number too: every row is inside one side or the other
    assert index.mask(Condition("year", Op.GTE, 2016)).nonzero()[0].tolist() == [0, 1, 3]
    assert index.mask(Condition("year", Op.LT, 2018)).nonzero()[0].tolist() == [0, 1]
    words = MetadataIndex.build([{"year": 2016}, {"year": "unknown"}, {"year": "n/a"}])
    assert words.mask(Condition("year", Op.GT, 2000)).nonzero()[0].tolist() == [0]  # text is no number
    assert index.stats["year"].kind == "mixed"
    for bad in (
        lambda: Condition("year", Op.GT, float("nan")),
        lambda: Condition("year", Op.EQ, [1, 2]),
        lambda: Condition("year", Op.IN, [[1]]),
        lambda: Condition("year", Op.IN, []),
        lambda: parse_filter_json('{"year": {}}'),
    ):
        with pytest.raises(FilterError):
            bad()


def test_exclusions_over_segments_one_of_which_lacks_the_field() -> None:
    """A segment that never saw the field keeps all its rows under NE/NIN (none of them holds the value)."""
    from waypost.index.metadata_view import MetadataView

    old = MetadataIndex.build([{"title_only": True}, {"title_only": False}])  # no "fuel" at all
    new = MetadataIndex.build([{"fuel": "Diesel"}, {"fuel": "Petrol"}, {"fuel": ["Diesel", "LPG"]}])
    view = MetadataView([(old, 0, None), (new, 2, None)], 5)
    assert np.flatnonzero(view.mask(Condition("fuel", Op.NE, "Diesel"))).tolist() == [0, 1, 3]
    assert np.flatnonzero(view.mask(Condition("fuel", Op.NIN, ["Petrol", "LPG"]))).tolist() == [0, 1, 2]
    assert np.flatnonzero(view.mask(Condition("fuel", Op.EQ, "Diesel"))).tolist() == [2, 4]


def test_parse_exclusions() -> None:
    assert parse_filter(["fuel!=Diesel"]) == Condition("fuel", Op.NE, "Diesel")
    assert parse_filter(["fuel  NOT   in Diesel,LPG"]) == Condition("fuel", Op.NIN, ["Diesel", "LPG"])
    assert parse_filter_json('{"fuel": {"ne": "Diesel"}, "tags": {"$nin": ["a"]}}') == And(
        (Condition("fuel", Op.NE, "Diesel"), Condition("tags", Op.NIN, ["a"]))
    )
    with pytest.raises(FilterError, match="NIN on 'tags' needs a non-empty list"):
        Condition("tags", Op.NIN, "a")
    with pytest.raises(FilterError, match="use NIN for lists"):
        Condition("tags", Op.NE, ["a"])
    assert str(Condition("tags", Op.NIN, ["a"])) == "tags not in ['a']"


def test_in_clause_respects_quotes() -> None:
    assert parse_filter(["tags in a,'b,c'"]) == Condition("tags", Op.IN, ["a", "b,c"])
    assert parse_filter(['tags in "x, y",z']) == Condition("tags", Op.IN, ["x, y", "z"])
