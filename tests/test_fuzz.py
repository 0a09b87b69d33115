"""Fuzzing with hypothesis: a few thousand inputs over the same targets as benchmarks/bench_fuzz.py.

Only ``WaypostError`` may come out of waypost; any other exception, a broken invariant or an input over the
deadline fails the test. Runs are derandomized and use no example database, so CI sees the same inputs.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from benchmarks.fuzz_targets import (
    Target,
    collection_targets,
    offline_targets,
    open_collection,
    run_input,
    seed_pdfs,
)
from hypothesis import HealthCheck, given, settings

from waypost.base import Embedder
from waypost.engine import Collection
from waypost.errors import FilterError, LoaderError
from waypost.filters.model import parse_filter, parse_filter_json
from waypost.ingest.chunker import Chunker, count_tokens
from waypost.ingest.loaders import LoadFailure, load_path
from waypost.types import Document

EXAMPLES = {
    "filter-clauses": 600,
    "filter-json": 600,
    "chunker": 300,
    "loader-txt": 150,
    "loader-md": 150,
    "loader-html": 200,
    "loader-pdf": 200,
    "loader-jsonl": 200,
    "loader-csv": 200,
    "extractor": 400,
    "query": 120,
    "query-expensive": 12,
}
OFFLINE = offline_targets()


def fuzz(target: Target) -> None:
    @settings(
        max_examples=EXAMPLES[target.name],
        deadline=timedelta(seconds=5 * target.time_limit),  # a hang, not a slow shared machine
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
    )
    @given(target.inputs)
    def run(value: Any) -> None:
        run_input(target, value)

    run()


@pytest.mark.parametrize("target", OFFLINE, ids=[t.name for t in OFFLINE])
def test_fuzz_offline(target: Target) -> None:
    fuzz(target)


@pytest.fixture(scope="module")
def fuzz_collection(tmp_path_factory: pytest.TempPathFactory, minilm: Embedder) -> Iterator[Collection]:
    engine, collection = open_collection(tmp_path_factory.mktemp("fuzz") / "store", minilm)
    yield collection
    engine.close()


@pytest.mark.parametrize("name", ["extractor", "query", "query-expensive"])
def test_fuzz_collection(fuzz_collection: Collection, name: str) -> None:
    [target] = [t for t in collection_targets(fuzz_collection) if t.name == name]
    fuzz(target)


def test_targets_cover_every_loader() -> None:
    from waypost.ingest.loaders import LOADERS

    fuzzed = {t.name.removeprefix("loader-") for t in OFFLINE if t.name.startswith("loader-")}
    assert {suffix.lstrip(".") for suffix in LOADERS} - {"text", "markdown", "htm"} <= fuzzed


def test_seed_pdfs_load(tmp_path: Path) -> None:
    """The PDF seeds are real PDFs with a text layer, so their mutations reach past the header check."""
    from benchmarks.fuzz_targets import seed_pdfs

    from waypost.ingest.loaders import load_path

    path = tmp_path / "seed.pdf"
    path.write_bytes(seed_pdfs()[1])
    [doc] = load_path(path, tmp_path)
    assert "text layer" in doc.text and doc.title == "Fuzz title"


# -- regressions: each input below crashed waypost before the fix next to it ----------------------
@pytest.mark.parametrize(
    "text",
    [
        '{"year": ' + "7" * 4000 + "}",  # OverflowError: int too large to convert to float
        '{"year": ' + "7" * 4301 + "}",  # ValueError: past Python's 4,300-digit int limit, inside json.loads
        '{"field": "year", "op": "gte", "value": ' + "9" * 400 + "}",
    ],
)
def test_filter_json_with_a_huge_integer_is_a_filter_error(text: str) -> None:
    with pytest.raises(FilterError):
        parse_filter_json(text)


def test_filter_clause_with_a_huge_integer_is_a_filter_error() -> None:
    with pytest.raises(FilterError):
        parse_filter(["year>=" + "7" * 4000])


@pytest.mark.parametrize(
    ("seed", "old", "new"),
    [
        (1, b"/Info 10 0 R", b"/Info 12345"),  # PdfReadError from reader.metadata, outside the try
        (0, b"/Filter /FlateDecode", b"/Filter /LateDecode"),  # NotImplementedError from pypdf
    ],
)
def test_broken_pdf_is_a_loader_error(tmp_path: Path, seed: int, old: bytes, new: bytes) -> None:
    raw = seed_pdfs()[seed]
    assert old in raw
    (tmp_path / "broken.pdf").write_bytes(raw.replace(old, new))
    with pytest.raises(LoaderError, match=r"broken\.pdf: cannot read PDF"):
        list(load_path(tmp_path / "broken.pdf", tmp_path))


def test_jsonl_line_too_deep_or_too_long_fails_alone(tmp_path: Path) -> None:
    lines = ['{"text": "first"}', "[" * 100_000 + "]" * 100_000, '{"text": ' + "7" * 5000 + "}", '{"text": "last"}']
    (tmp_path / "odd.jsonl").write_text("\n".join(lines))
    items = list(load_path(tmp_path / "odd.jsonl", tmp_path))
    assert [d.text for d in items if isinstance(d, Document)] == ["first", "last"]
    failures = [f for f in items if isinstance(f, LoadFailure)]
    assert [f.source.rsplit(":", 1)[1] for f in failures] == ["2", "3"]
    assert "RecursionError" in failures[0].error and "ValueError" in failures[1].error


def test_csv_with_carriage_returns_loads(tmp_path: Path) -> None:
    """A lone \\r ends a line (old Mac files) or sits inside a quoted cell; both used to raise csv.Error."""
    (tmp_path / "mac.csv").write_bytes(b'id,text\ra,first row\rb,"two\rlines"\r')
    docs = list(load_path(tmp_path / "mac.csv", tmp_path))
    assert [(d.id, d.text) for d in docs if isinstance(d, Document)] == [("a", "first row"), ("b", "two\rlines")]


def test_csv_field_over_the_csv_limit_names_the_line(tmp_path: Path) -> None:
    (tmp_path / "big.csv").write_text("id,text\na,fine\nb," + "x" * 200_000 + "\n")
    loaded = load_path(tmp_path / "big.csv", tmp_path)
    assert next(loaded).text == "fine"  # type: ignore[union-attr]
    with pytest.raises(LoaderError, match=r"big\.csv: CSV line 3: field larger than field limit"):
        next(loaded)


def test_filter_in_list_with_a_carriage_return_is_a_filter_error() -> None:
    with pytest.raises(FilterError, match="list of values"):
        parse_filter(["country in India\rSpain"])  # csv.Error: new-line character seen in unquoted field


def test_repeated_heading_starts_a_new_chunk() -> None:
    """Two sections under the same heading text used to share a chunk that spanned the second heading, whose
    tokens were not counted: 17 tokens in a chunk of a 16-token budget."""
    text = "the. \n# 0\x1b0:0:0\n0{ the. 0\n# 0\x1b0:0:0\n0{ the."
    chunks = Chunker(16).chunk("doc", text)
    assert [c.text for c in chunks] == ["the.", "0{ the. 0", "0{ the."]
    assert all(count_tokens(c.text) == c.token_count <= 16 for c in chunks)


def test_deeply_nested_html_loads_in_linear_time(tmp_path: Path) -> None:
    """20,000 nested divs took 18 s of CPU (a break string inserted after each block walks its subtree)."""
    (tmp_path / "deep.html").write_text("<div>" * 20_000 + "hello <p>world</p>" + "</div>" * 20_000)
    start = time.process_time()
    [doc] = load_path(tmp_path / "deep.html", tmp_path)
    assert doc.text == "hello world"
    assert time.process_time() - start < 5.0
