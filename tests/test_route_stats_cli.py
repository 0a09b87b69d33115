"""``waypost collection describe`` and ``waypost stats --routes``."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli_runner import Cli
from tests.conformance.route_suite import record
from waypost.base import Embedder
from waypost.engine import Engine
from waypost.types import Document


def make_store(path: Path, minilm: Embedder) -> None:
    with Engine(path) as engine:
        engine.register_embedder(minilm)
        engine.collection("films", create=True).add([Document("f1", "A heist inside dreams.")])
        for i in range(6):
            engine.telemetry.record(
                record(i, collection="films", pipeline="hybrid" if i < 4 else "hipporag", hit=i == 0)
            )


def test_describe_then_list(tmp_path: Path, minilm: Embedder, cli: Cli) -> None:
    store = tmp_path / "store"
    make_store(store, minilm)
    out = cli("collection", "describe", "films", "Movie catalogue:   plots and cast", "--store", store)
    assert out.exit_code == 0, out.stderr
    assert "films: Movie catalogue: plots and cast" in out.stdout
    listed = json.loads(cli("ls", "--store", store, "--json").stdout)
    assert listed[0]["description"] == "Movie catalogue: plots and cast"
    missing = cli("collection", "describe", "nope", "x", "--store", store)
    assert missing.exit_code != 0 and "nope" in missing.stderr


def test_stats_routes_as_json_and_table(tmp_path: Path, minilm: Embedder, cli: Cli) -> None:
    store = tmp_path / "store"
    make_store(store, minilm)
    out = cli("stats", "--routes", "--json", "--store", store)
    assert out.exit_code == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["routes"] == 6 and list(data["pipelines"]) == ["hybrid", "hipporag"]
    assert abs(data["cache_hit_rate"] - 1 / 6) < 1e-9
    table = cli("stats", "--routes", "--store", store)
    assert table.exit_code == 0 and "6 routed queries" in table.stdout and "hipporag" in table.stdout
