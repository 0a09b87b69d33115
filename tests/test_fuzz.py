"""Fuzzing with hypothesis: a few thousand inputs over the same targets as benchmarks/bench_fuzz.py.

Only ``WaypostError`` may come out of waypost; any other exception, a broken invariant or an input over the
deadline fails the test. Runs are derandomized and use no example database, so CI sees the same inputs.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from benchmarks.fuzz_targets import Target, collection_targets, offline_targets, open_collection, run_input
from hypothesis import HealthCheck, given, settings

from waypost.base import Embedder
from waypost.engine import Collection

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
