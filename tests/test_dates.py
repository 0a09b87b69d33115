"""Dates as a metadata kind: detection, range filters on dates, months and years, live indexes (deletes,
re-adds, merges, reopening), the CLI, and date phrases in queries."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path

import numpy as np
import pytest

from tests.cli_runner import Cli
from waypost.base import Embedder
from waypost.engine import Collection, Engine, EngineConfig
from waypost.errors import FilterError
from waypost.filters.dates import format_day, parse_text
from waypost.filters.extract import FilterExtractor
from waypost.filters.model import And, Condition, Filter, Op, parse_filter, parse_filter_json
from waypost.index.metadata import MetadataIndex
from waypost.index.set import MergePolicy
from waypost.types import Document

# A changelog: `released` holds ISO dates, written dates, a month, a plain year number and a list.
CHANGELOG = {
    "r1": ("Index rebuilt from the change log", {"component": "index", "released": "2019-05-20"}),
    "r2": ("Store survives kill -9 during ingest", {"component": "store", "released": "4 March 2021"}),
    "r3": ("The command line prints tables", {"component": "cli", "released": "March 30, 2021"}),
    "r4": ("Store compaction of the log", {"component": "store", "released": "2021-06"}),
    "r5": ("Index merges run in the background", {"component": "index", "released": "2022-01-15"}),
    "r6": ("The command line reads JSON filters", {"component": "cli", "released": "Dec 2020"}),
    "r7": ("Store keeps a write-ahead log", {"component": "store", "released": "2020-02-29"}),
    "r8": ("First public version", {"component": "cli", "released": 2018}),  # a number, not a date
    "r9": ("Store backports", {"component": "store", "released": ["2019-01-10", "2021-07-04"]}),
}
# A news set: datetimes with offsets (compared in UTC), RFC 2822, and date objects through the API.
NEWS = {
    "n1": ("Harbour reopens after the storm", "2021-03-01T01:30:00+02:00", "2021-03-02"),  # UTC: 28 February
    "n2": ("Council votes on the new bridge", "2021-02-28T22:00:00-05:00", "2021-04-10"),  # UTC: 1 March
    "n3": ("Orchard harvest breaks records", "2021-03-15T12:00:00Z", "2022-05-03"),
    "n4": ("Ferry timetable changes in spring", "Thu, 01 Apr 2021 09:00:00 +0000", "2022-05-20"),
    "n5": ("New year fireworks over the canal", datetime(2020, 12, 31, 23, 0, tzinfo=UTC), "2021-01-01"),
    "n6": ("Census results published", date(2021, 1, 1), "2021-01-05"),
}


def doc_ids(coll: Collection, flt: Filter) -> set[str]:
    """Every live document the filter lets through, by a real retrieval over the whole collection."""
    hits = coll.retrieve("news and changes", "dense", k=200, filters=flt).hits
    return {h.document_id for h in hits}


def changelog_docs() -> list[Document]:
    return [Document(i, text, title=i, metadata=meta) for i, (text, meta) in CHANGELOG.items()]


def news_docs() -> list[Document]:
    return [
        Document(i, text, title=i, metadata={"published_at": published, "last_updated": updated, "desk": "city"})
        for i, (text, published, updated) in NEWS.items()
    ]


# -- parsing and kinds ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2021-03-04", "2021-03-04"),
        ("2021-03-04T10:00:00Z", "2021-03-04T10:00:00Z"),
        ("2021-03-04T10:00:00+02:00", "2021-03-04T08:00:00Z"),
        ("2021-03", "2021-03-01"),
        ("4 March 2021", "2021-03-04"),
        ("March 4, 2021", "2021-03-04"),
        ("Sept. 4th, 2021", "2021-09-04"),
        ("Mar 2021", "2021-03-01"),
        ("Thu, 04 Mar 2021 10:00:00 +0000", "2021-03-04T10:00:00Z"),
        ("2021/3/4", "2021-03-04"),
        ("03/04/2021", None),  # day or month first: ambiguous, stays a string
        ("2021", None),  # a bare year is not a date value
        ("2021-02-30", None),
        ("TV-14", None),
        ("Omar 2021", None),
    ],
)
def test_parse_date_strings(text: str, expected: str | None) -> None:
    found = parse_text(text)
    assert (None if found is None else format_day(found.start)) == expected


def test_kinds_of_fields() -> None:
    index = MetadataIndex.build(
        [
            {"released": "2021-03-04", "year": 2019, "shipped": "2020-01-01", "note": "2021-01-01", "code": "TV-14"},
            {"released": "March 4, 2021", "year": 2020, "shipped": "TBD", "note": "hello"},
            {"released": date(2022, 1, 1), "shipped": "2020-05", "note": "world"},
            {"released": 2018, "shipped": "May 2020", "note": "again"},
            {"shipped": "2020-06-01"},
        ]
    )
    kinds = {name: st.kind for name, st in index.stats.items()}
    assert kinds == {"released": "date", "year": "number", "shipped": "date", "note": "string", "code": "string"}
    assert index.stats["released"].dates == 3 and index.stats["released"].numbers == 1
    assert index.date_fields() == ["shipped", "released"]  # most covered first (4 dates, then 3)
    assert index.values("shipped") == {"2020-01-01": 1, "TBD": 1, "2020-05": 1, "May 2020": 1, "2020-06-01": 1}
    assert positions(index, Condition("shipped", Op.LT, "2020-05-15")) == [0, 2, 3]  # TBD is in no range
    assert positions(index, Condition("shipped", Op.EQ, "tbd")) == [1]


# -- filters on one index ----------------------------------------------------------------------------------
def positions(index: MetadataIndex, flt: Filter) -> list[int]:
    return np.flatnonzero(index.mask(flt)).tolist()


def test_ranges_on_dates_months_and_years() -> None:
    meta = [m for _text, m in CHANGELOG.values()]  # positions 0..8 are r1..r9
    index = MetadataIndex.build(meta)
    assert index.stats["released"].kind == "date"
    cases: list[tuple[Filter, list[int]]] = [
        (Condition("released", Op.GTE, "2021-03-01"), [1, 2, 3, 4, 8]),
        (Condition("released", Op.GTE, date(2021, 3, 5)), [2, 3, 4, 8]),
        (Condition("released", Op.GTE, 2021), [1, 2, 3, 4, 8]),  # r8's 2018 is a number, and not >= 2021
        (Condition("released", Op.LTE, 2018), [7]),
        (Condition("released", Op.LT, "2021-06"), [0, 1, 2, 5, 6, 8]),  # before June 2021; a date is no number
        (Condition("released", Op.GT, "2021-03"), [3, 4, 8]),  # after March 2021
        (Condition("released", Op.LTE, "2021-03"), [0, 1, 2, 5, 6, 8]),  # up to the end of March
        (Condition("released", Op.EQ, 2021), [1, 2, 3, 8]),
        (Condition("released", Op.EQ, "2021-03"), [1, 2]),
        (Condition("released", Op.EQ, "2020-02-29"), [6]),
        (Condition("released", Op.EQ, 2018), [7]),
        (Condition("released", Op.IN, [2019, "2022-01"]), [0, 4, 8]),
        (And((Condition("released", Op.GT, 2019), Condition("component", Op.EQ, "store"))), [1, 3, 6, 8]),
    ]
    for flt, expected in cases:
        assert positions(index, flt) == expected, flt
    latest = index.latest_dates("released")
    assert format_day(latest[8]) == "2021-07-04"  # a list: its latest date
    assert np.isnan(latest[7])  # a plain number has no date


def test_datetimes_compare_in_utc() -> None:
    index = MetadataIndex.build([{"published_at": published} for _t, published, _u in NEWS.values()])
    assert positions(index, Condition("published_at", Op.EQ, "2021-03")) == [1, 2]
    assert positions(index, Condition("published_at", Op.LT, "2021-03-01")) == [0, 4, 5]
    assert positions(index, Condition("published_at", Op.EQ, 2020)) == [4]
    assert positions(index, Condition("published_at", Op.GT, "2021-03-15T11:59:59Z")) == [2, 3]
    assert positions(index, Condition("published_at", Op.LTE, datetime(2021, 3, 15, 12, tzinfo=UTC))) == [0, 1, 2, 4, 5]


def test_clear_errors_for_values_that_are_not_dates() -> None:
    index = MetadataIndex.build([{"released": "2021-03-04", "year": 2019, "name": "x"}])
    with pytest.raises(FilterError, match="needs a finite number or a date"):
        Condition("released", Op.GTE, "last spring")
    with pytest.raises(FilterError, match=r"'released' holds dates and 7\.5 is not a date"):
        index.mask(Condition("released", Op.GT, 7.5))
    with pytest.raises(FilterError, match="'year' holds numbers, not dates"):
        index.mask(Condition("year", Op.GT, "2021-03-01"))
    with pytest.raises(FilterError, match="holds text"):
        index.mask(Condition("name", Op.GT, "2021-03-01"))
    with pytest.raises(FilterError, match="needs a finite number or a date"):
        parse_filter_json('{"released": {"gte": "soon"}}')


def test_parse_cli_and_json_dates() -> None:
    assert parse_filter(["published>=2021-03-01", "published<2021-06", "year>=2015"]) == And(
        (
            Condition("published", Op.GTE, "2021-03-01"),
            Condition("published", Op.LT, "2021-06"),
            Condition("year", Op.GTE, 2015),
        )
    )
    assert parse_filter(["published>=2021-03-01T10:00:00+02:00"]) == Condition(
        "published", Op.GTE, "2021-03-01T10:00:00+02:00"
    )
    assert parse_filter_json('{"published": {"gte": 2021, "lt": "March 2022"}}') == And(
        (Condition("published", Op.GTE, 2021), Condition("published", Op.LT, "March 2022"))
    )


def test_an_index_saved_before_date_columns_derives_them(tmp_path: Path) -> None:
    meta = [m for _text, m in CHANGELOG.values()]
    MetadataIndex.build(meta).save(tmp_path)
    header = json.loads((tmp_path / "metadata.json").read_text())
    del header["dates"]  # the header of the format before dates
    header["stats"] = {n: v[:3] for n, v in header["stats"].items()}
    (tmp_path / "metadata.json").write_text(json.dumps(header))
    legacy = MetadataIndex.load(tmp_path)
    assert legacy.stats["released"].kind == "date"
    assert positions(legacy, Condition("released", Op.EQ, "2021-03")) == [1, 2]
    fresh = MetadataIndex.build(meta)
    fresh.save(tmp_path)
    loaded = MetadataIndex.load(tmp_path)
    assert loaded.stats == fresh.stats
    np.testing.assert_array_equal(loaded.latest_dates("released"), fresh.latest_dates("released"))


# -- through the engine: live indexes, deletes, merges, reopening -------------------------------------------
def test_filters_follow_deletes_re_adds_merges_and_reopening(tmp_path: Path, minilm: Embedder) -> None:
    policy = MergePolicy(max_small_segments=2, main_merge_rows=3, main_merge_ratio=0.2, dead_ratio=0.1, persist_rows=2)
    config = EngineConfig(chunk_tokens=64, merge_policy=policy, background_index_work=False)
    engine = Engine(tmp_path / "store", config)
    engine.register_embedder(minilm)
    coll = engine.collection("changelog", create=True)
    docs = changelog_docs()
    for start in range(0, len(docs), 3):  # several writes: several segments, then merges
        coll.add(docs[start : start + 3])
    since_2021 = Condition("released", Op.GTE, 2021)
    march = Condition("released", Op.EQ, "2021-03")
    assert doc_ids(coll, since_2021) == {"r2", "r3", "r4", "r5", "r9"}
    assert doc_ids(coll, march) == {"r2", "r3"}
    assert engine.indexes.get("changelog").metadata.stats["released"].kind == "date"

    assert coll.delete(["r2", "r5"]) == 2
    assert doc_ids(coll, since_2021) == {"r3", "r4", "r9"}
    coll.add([Document("r2", "Store survives kill -9, second try", title="r2", metadata={"released": "2023-02-01"})])
    coll.add([Document("r10", "A new command", title="r10", metadata={"released": "2021-03-31T23:30:00-01:00"})])
    assert doc_ids(coll, since_2021) == {"r2", "r3", "r4", "r9", "r10"}
    assert doc_ids(coll, march) == {"r3"}  # r10 is 1 April in UTC
    assert doc_ids(coll, Condition("released", Op.GT, "2022-12-31")) == {"r2"}

    indexes = engine.indexes.get("changelog")
    assert indexes.date_fields() == ["released"]
    values = indexes.date_values("released")
    assert values is indexes.date_values("released")  # built once per index set
    assert len(values) == len(indexes) and not values.flags.writeable
    by_doc = {indexes.document_of(p): values[p] for p in range(len(indexes)) if indexes.live is None or indexes.live[p]}
    assert format_day(by_doc["r2"]) == "2023-02-01" and format_day(by_doc["r9"]) == "2021-07-04"
    assert format_day(by_doc["r4"]) == "2021-06-01" and np.isnan(by_doc["r8"])
    assert np.isnan(indexes.date_values("component")).all()
    assert engine.indexes.live("changelog").last_merge is not None, "the policy should have merged segments"
    engine.close()

    reopened = Engine(tmp_path / "store", config)
    reopened.register_embedder(minilm)
    try:
        live = reopened.indexes.live("changelog")
        loaded = live.get()
        assert live.loaded_from is not None and live.loaded_from.startswith("state-"), live.loaded_from
        again = reopened.collection("changelog")
        assert doc_ids(again, since_2021) == {"r2", "r3", "r4", "r9", "r10"}
        assert doc_ids(again, march) == {"r3"}
        assert loaded.metadata.stats["released"].kind == "date"
        days = loaded.date_values("released")
        alive = [p for p in range(len(loaded)) if loaded.live is None or loaded.live[p]]
        assert {loaded.document_of(p): format_day(days[p]) for p in alive if not np.isnan(days[p])} == {
            "r1": "2019-05-20",
            "r2": "2023-02-01",
            "r3": "2021-03-30",
            "r4": "2021-06-01",
            "r6": "2020-12-01",
            "r7": "2020-02-29",
            "r9": "2021-07-04",
            "r10": "2021-04-01T00:30:00Z",
        }
    finally:
        reopened.close()


def test_news_datetimes_and_date_objects_through_the_api(engine: Engine) -> None:
    coll = engine.collection("news", create=True)
    coll.add(news_docs())
    stored = coll.get("n5")
    assert stored is not None and stored.metadata["published_at"] == "2020-12-31T23:00:00+00:00"
    assert doc_ids(coll, Condition("published_at", Op.EQ, "2021-03")) == {"n2", "n3"}
    assert doc_ids(coll, Condition("published_at", Op.GTE, date(2021, 1, 1))) == {"n1", "n2", "n3", "n4", "n6"}
    assert doc_ids(coll, Condition("last_updated", Op.EQ, "2022-05")) == {"n3", "n4"}
    assert engine.indexes.get("news").date_fields() == ["last_updated", "published_at"]
    with pytest.raises(FilterError, match="is not a date"):
        coll.retrieve("storm", "dense", filters=Condition("published_at", Op.GT, 3.5))


# -- date phrases in queries -----------------------------------------------------------------------------
def conditions(extractor: FilterExtractor, query: str) -> tuple[set[tuple[str, str, object]], str]:
    found = extractor.extract(query)
    return {(c.field, c.op.value, c.value) for c in found.conditions}, found.semantic_query


@pytest.mark.parametrize(
    ("query", "expected", "rest"),
    [
        ("store changes after March 2021", {("released", "gt", "2021-03"), ("component", "eq", "store")}, "changes"),
        ("fixes since 2020", {("released", "gte", 2020)}, "fixes"),
        ("released before 2019-05-01", {("released", "lt", "2019-05-01")}, ""),
        ("what shipped in 2021", {("released", "eq", 2021)}, "shipped"),
        ("between 2019 and 2021", {("released", "gte", 2019), ("released", "lte", 2021)}, ""),
        (
            "index work from May 2019 to June 2021",
            {("released", "gte", "2019-05"), ("released", "lte", "2021-06"), ("component", "eq", "index")},
            "work",
        ),
        ("cli changes 2020 or earlier", {("released", "lte", 2020), ("component", "eq", "cli")}, "changes"),
        ("changes on March 4, 2021", {("released", "eq", "2021-03-04")}, "changes"),
        ("how does the store log work", {("component", "eq", "store")}, "log work"),
    ],
)
def test_date_phrases_on_the_only_date_field(query: str, expected: set[tuple[str, str, object]], rest: str) -> None:
    extractor = FilterExtractor(MetadataIndex.build([m for _t, m in CHANGELOG.values()]))
    assert conditions(extractor, query) == (expected, rest)


def test_date_phrases_pick_the_field_the_query_names() -> None:
    meta = [{"published_at": p, "last_updated": u} for _t, p, u in NEWS.values()]
    extractor = FilterExtractor(MetadataIndex.build(meta))
    assert conditions(extractor, "stories last updated in May 2022") == ({("last_updated", "eq", "2022-05")}, "")
    assert conditions(extractor, "harbour news published after 2020-12-31") == (
        {("published_at", "gt", "2020-12-31")},
        "harbour news",
    )
    # two date fields and none named: the phrase is left in the query
    assert conditions(extractor, "harbour news from 2021") == (set(), "harbour news from 2021")


def test_years_still_go_to_a_numeric_year_field() -> None:
    """A netflix-like catalogue with a numeric release_year and a date_added date field."""
    meta = [
        {"type": "Movie", "categories": ["Comedies"], "release_year": 2016, "date_added": "September 25, 2021"},
        {"type": "Movie", "categories": ["Dramas"], "release_year": 2019, "date_added": "March 1, 2020"},
        {"type": "TV Show", "categories": ["Docuseries"], "release_year": 2021, "date_added": "January 5, 2022"},
    ]
    index = MetadataIndex.build(meta)
    assert index.stats["date_added"].kind == "date" and index.stats["release_year"].kind == "number"
    extractor = FilterExtractor(index)
    assert conditions(extractor, "comedies released after 2015")[0] == {
        ("categories", "eq", "Comedies"),
        ("release_year", "gt", 2015),
        ("type", "eq", "Movie"),
    }
    assert ("release_year", "gte", 2017) in conditions(extractor, "dramas from 2017 or later")[0]
    assert ("release_year", "gte", 2005) in conditions(extractor, "dramas from 2005 to 2007")[0]
    assert conditions(extractor, "docuseries added in 2022")[0] >= {("date_added", "eq", 2022)}
    assert ("date_added", "gt", "2021-03") in conditions(extractor, "comedies after March 2021")[0]
    assert not any(f == "release_year" for f, _o, _v in conditions(extractor, "movies released before 2019-05-01")[0])


def test_metadata_strategy_applies_date_phrases(engine: Engine) -> None:
    coll = engine.collection("changelog", create=True)
    coll.add(changelog_docs())
    result = coll.retrieve("store changes after March 2021", "metadata", k=10)
    assert result.explanation.filters is not None and "released > '2021-03'" in result.explanation.filters
    assert {h.document_id for h in result.hits} == {"r4", "r9"}


# -- the command line ------------------------------------------------------------------------------------
def test_cli_where_and_stats(tmp_path: Path, minilm: Embedder, cli: Cli) -> None:
    store = tmp_path / "store"
    eng = Engine(store, EngineConfig(chunk_tokens=64))
    eng.register_embedder(minilm)
    eng.collection("default", create=True).add(changelog_docs())
    eng.close()
    base = ("--store", str(store), "--json", "-k", "20", "--strategy", "dense")
    out = cli("query", "changes", *base, "--where", "released>=2021-03-05", "--where", "released<2022")
    assert out.exit_code == 0, out.stderr
    assert {h["document_id"] for h in json.loads(out.stdout)["hits"]} == {"r3", "r4", "r9"}
    out = cli("query", "changes", *base, "--where-json", '{"released": {"gte": 2019, "lt": "2020-03"}}')
    assert out.exit_code == 0, out.stderr
    assert {h["document_id"] for h in json.loads(out.stdout)["hits"]} == {"r1", "r7", "r9"}
    bad = cli("query", "changes", *base, "--where", "released>=soon")
    assert bad.exit_code == 2 and "needs a finite number or a date" in bad.stderr
    stats = json.loads(cli("stats", "--store", str(store), "--json").stdout)
    assert stats["fields"]["released"]["kind"] == "date"
    assert stats["fields"]["released"]["range"] == ["2019-01-10", "2022-01-15"]
