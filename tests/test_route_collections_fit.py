"""``waypost router collections``: stage 1 fitted on labelled queries, through the command, on a real store
with the real model. Two invented collections hold the same kettle manuals, so only what the queries teach
(how support and sales questions are asked) can tell them apart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_runner import Cli
from waypost.base import Embedder
from waypost.engine import Engine, EngineConfig
from waypost.errors import InvalidInputError
from waypost.route.collections import EmbeddingCollectionSelector
from waypost.route.collections_fit import LabelledQuery, fit_collections, read_labelled
from waypost.types import Document

MANUALS = [
    Document("k1", "The Harlow kettle boils 1.7 litres in four minutes and switches off when dry."),
    Document("k2", "Descale the Harlow kettle monthly with citric acid; rinse twice before use."),
    Document("k3", "The Harlow kettle comes in copper and slate; the base rotates fully."),
    Document("k4", "A two-year warranty covers the Harlow kettle's element and switch."),
]
SUPPORT = [
    "how do I descale my kettle",
    "my kettle will not switch off, what should I do",
    "the base light stays red, how do I fix it",
    "how do I clean limescale from the spout",
    "kettle makes a loud noise when boiling, is it broken",
    "how do I reset the kettle after it boiled dry",
    "water tastes of metal after descaling, help",
    "the lid will not close properly anymore",
]
SALES = [
    "what does the copper kettle cost",
    "is there a discount for ordering twenty kettles",
    "price of the slate model in euros",
    "can I buy the kettle with a gift box",
    "do you ship kettles to Norway and what does shipping cost",
    "bulk pricing for hotel orders",
    "is the copper finish more expensive than slate",
    "when will the kettle be back in stock for purchase",
]
HELD_OUT = [
    ("how do I stop the kettle from leaking at the base", "support"),
    ("what is the price for 50 kettles", "sales"),
]


@pytest.fixture
def store(tmp_path: Path, minilm: Embedder) -> Path:
    path = tmp_path / "store"
    with Engine(path, EngineConfig(chunk_tokens=64)) as engine:
        engine.register_embedder(minilm)
        for name in ("support", "sales"):
            engine.collection(name, create=True).add(MANUALS)
    return path


def labelled(path: Path, extra: list[str] | None = None) -> Path:
    rows = [{"query": q, "collection": "support"} for q in SUPPORT] + [
        {"query": q, "collection": "sales"} for q in SALES
    ]
    path.write_text("\n".join([json.dumps(r) for r in rows] + (extra or [])) + "\n")
    return path


def test_the_command_fits_stage_one_and_query_uses_its_profile(store: Path, tmp_path: Path, cli: Cli) -> None:
    out = tmp_path / "collections.json"
    run = cli("router", "collections", labelled(tmp_path / "q.jsonl"), "--store", store, "--out", out, "--json")
    assert run.exit_code == 0, run.stderr
    summary = json.loads(run.stdout)
    assert summary["queries"] == 16 and summary["collections"] == ["sales", "support"]
    assert summary["train_accuracy"] >= 0.9 and summary["cv_accuracy"] is not None
    assert summary["weights"]["exemplar"] > 1.0  # the only signal that tells two copies of one manual apart
    profile = json.loads(out.read_text())
    assert sorted(profile["exemplars"]) == ["sales", "support"] and profile["weights"] == summary["weights"]
    for question, expected in HELD_OUT:
        found = cli("query", question, "--store", store, "--collection", "auto", "--collections-profile", out, "--json")
        assert found.exit_code == 0, found.stderr
        note = json.loads(found.stdout)["explain"]["notes"][0]
        assert note.startswith(f"collections {expected} chosen by learned"), note
    without = cli("query", HELD_OUT[0][0], "--store", store, "--collection", "auto", "--json")
    note = json.loads(without.stdout)["explain"]["notes"][0]
    assert note.startswith("collections sales, support chosen by embedding"), note  # two equal copies: fused


def test_without_exemplars_the_copies_stay_tied(store: Path, minilm: Embedder) -> None:
    queries = [LabelledQuery(q, "support") for q in SUPPORT] + [LabelledQuery(q, "sales") for q in SALES]
    with Engine(store) as engine:
        engine.register_embedder(minilm)
        fitted = fit_collections(engine, queries, exemplars=False)
        assert fitted.selector.weights["exemplar"] == 0.0 and not fitted.selector.exemplars
        assert fitted.train_accuracy == 0.5  # nothing else differs: every query gets the same collection
        assert isinstance(fitted.selector, EmbeddingCollectionSelector)


def test_bad_labelled_queries_are_refused_with_their_line(store: Path, tmp_path: Path, cli: Cli) -> None:
    out = tmp_path / "p.json"
    bad = labelled(tmp_path / "bad.jsonl", ["", "{not json"])
    run = cli("router", "collections", bad, "--store", store, "--out", out)
    assert run.exit_code != 0 and "bad.jsonl:18: not JSON" in run.stderr and not out.exists()
    unknown = labelled(tmp_path / "unknown.jsonl", [json.dumps({"query": "refunds", "collection": "billing"})])
    run = cli("router", "collections", unknown, "--store", store, "--out", out)
    assert run.exit_code != 0 and "['billing']" in run.stderr and "['sales', 'support']" in run.stderr
    with pytest.raises(InvalidInputError, match=r"x.jsonl:1: 'query' and 'collection' must be non-empty strings"):
        (tmp_path / "x.jsonl").write_text(json.dumps({"query": "", "collection": "sales"}))
        read_labelled(tmp_path / "x.jsonl")
    with pytest.raises(InvalidInputError, match=r"y.jsonl:1: "):
        (tmp_path / "y.jsonl").write_text(json.dumps({"query": "q", "collection": "sales", "filters": {"and": []}}))
        read_labelled(tmp_path / "y.jsonl")
    one = read_labelled(
        labelled(tmp_path / "f.jsonl", [json.dumps({"query": "q", "collection": "sales", "filters": {"year": 2020}})])
    )
    assert str(one[-1].filters) == "year = 2020" and len(one) == 17
