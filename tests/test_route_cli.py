"""The CLI under routing: auto by default, --explain prints the route, --pipeline replays it exactly."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli_runner import Cli
from tests.route_corpus import make_engine
from waypost.base import Embedder


def test_query_auto_explain_and_replay(tmp_path: Path, minilm: Embedder, cli: Cli) -> None:
    path = tmp_path / "store"
    make_engine(path, minilm).close()
    base = ["query", "Where was Odile Brask born?", "--store", str(path), "-c", "c", "-k", "3"]
    routed = cli(*base, "--json")
    assert routed.exit_code == 0, routed.stderr
    payload = json.loads(routed.stdout)
    route = payload["explain"]["route"]
    assert route is not None and route["collection"] == "c"  # auto is the default
    replay = cli(*base, "--pipeline", route["pipeline_json"], "--json")
    assert replay.exit_code == 0, replay.stderr
    hits = [(h["document_id"], tuple(h["span"])) for h in payload["hits"]]
    assert [(h["document_id"], tuple(h["span"])) for h in json.loads(replay.stdout)["hits"]] == hits
    shown = cli(*base, "--explain")
    assert shown.exit_code == 0, shown.stderr
    assert "route" in shown.stdout and route["pipeline_json"] in shown.stdout and "reasoning" in shown.stdout
    bad = cli(*base, "--pipeline", '{"strategy": "hybrid", "speed": 3}')
    assert bad.exit_code == 2 and "no field 'speed'" in bad.stderr
    mixed = cli(*base, "--pipeline", '{"strategy": "bm25"}', "--strategy", "dense")
    assert mixed.exit_code == 2 and "--pipeline replays a whole pipeline" in mixed.stderr
    asked = cli("ask", "Where was Odile Brask born?", "--store", str(path), "-c", "c", "--json")
    assert asked.exit_code == 0, asked.stderr
    assert json.loads(asked.stdout)["answer"]


def test_collection_auto_chooses_the_collection(tmp_path: Path, minilm: Embedder, cli: Cli) -> None:
    from waypost.engine import Engine
    from waypost.types import Document

    path = tmp_path / "two"
    with Engine(path) as engine:
        engine.register_embedder(minilm)
        engine.collection("recipes", create=True).add(
            [
                Document(f"r{i}", f"Simmer the {food} soup with garlic and onions for an hour.")
                for i, food in enumerate(["lentil", "tomato", "pumpkin", "bean"])
            ]
        )
        engine.collection("ships", create=True).add(
            [
                Document(f"s{i}", f"The {name} was a steel cargo ship launched at the harbour yard.")
                for i, name in enumerate(["Aldra", "Vessa", "Korun", "Mirel"])
            ]
        )
    out = cli("query", "which cargo ship was launched at the yard?", "--store", path, "-c", "auto", "--json")
    assert out.exit_code == 0, out.stderr
    payload = json.loads(out.stdout)
    route = payload["explain"]["route"]
    assert route["collections"]["collections"][0] == "ships"
    assert payload["hits"] and all(h["document_id"].startswith("s") for h in payload["hits"])
    assert {h["collection"] for h in payload["hits"]} == {"ships"}  # each hit says where it comes from
    refused = cli("query", "soup", "--store", path, "-c", "auto", "--passages", "grow")
    assert refused.exit_code == 2 and "collection auto" in refused.stderr
    replay = cli("query", "soup", "--store", path, "-c", "auto", "--pipeline", '{"strategy": "bm25"}')
    assert replay.exit_code == 2 and "name the collection" in replay.stderr
    asked = cli("ask", "which cargo ship was launched at the yard?", "--store", path, "-c", "auto", "--json")
    assert asked.exit_code == 0, asked.stderr
    answer = json.loads(asked.stdout)
    assert answer["citations"] and all(c["document_id"].startswith("s") for c in answer["citations"])
    assert answer["collection"] == "ships" and answer["collection_choice"]["collections"][0] == "ships"
    ask_refused = cli("ask", "soup", "--store", path, "-c", "auto", "--param", "alpha=0.5")
    assert ask_refused.exit_code == 2 and "collection auto" in ask_refused.stderr
    heuristic = cli(
        "query", "soup garlic", "--store", path, "-c", "recipes", "--router-selector", "heuristic", "--json"
    )
    assert heuristic.exit_code == 0, heuristic.stderr
    assert json.loads(heuristic.stdout)["explain"]["route"]["selector"] == "heuristic"
    wrong = cli("query", "soup", "--store", path, "-c", "recipes", "--router-selector", "psychic")
    assert wrong.exit_code == 2 and "router selector must be one of" in wrong.stderr


def test_eval_strategy_auto_json(tmp_path: Path, cli: Cli) -> None:
    from tests.test_eval import make_dataset

    data = make_dataset(tmp_path / "tiny")
    out = cli("eval", data, "--strategy", "auto", "--cache-dir", tmp_path / "cache", "--json")
    assert out.exit_code == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["strategy"] == "auto" and report["queries"] == 3
    assert 0.0 < report["ndcg@10"] <= 1.0


def test_text_that_looks_like_markup_is_printed_as_it_is(tmp_path: Path, minilm: Embedder, cli: Cli) -> None:
    """Documents and queries holding "[/i]" or "[jobs]" (BBCode, INI sections) are text, never console markup."""
    from waypost.engine import Engine
    from waypost.types import Document

    path = tmp_path / "markup"
    with Engine(path) as engine:
        engine.register_embedder(minilm)
        engine.collection("manual", create=True).add(
            [
                Document(
                    "cfg", "Under [jobs] set timeout_s = 30, and under [server] set port = 8080.", title="[b]Config"
                ),
                Document("bb", "Write [i]italic[/i] and [bold]bold[/bold] in forum posts.", title="BBCode [/x]"),
            ]
        )
    for query in ("set the [jobs] timeout_s", "BBCode [/i] italic", "compare [/dim] and [/bold]"):
        for extra in ((), ("--explain",), ("--strategy", "bm25", "--explain")):
            out = cli("query", query, "--store", path, "-c", "manual", "-k", "2", *extra)
            assert out.exit_code == 0 and out.exception is None, (query, extra, out.stderr)
    shown = cli("query", "set the [jobs] timeout_s", "--store", path, "-c", "manual", "-k", "1")
    assert "Under [jobs] set timeout_s" in shown.stdout
    explained = cli("query", "BBCode [/i]", "--store", path, "-c", "manual", "--explain")
    assert "[bold]" not in explained.stdout.replace("[bold]bold[/bold]", "")  # labels are styled, not printed raw
    asked = cli("ask", "what does [i]italic[/i] do?", "--store", path, "-c", "manual", "--no-stream")
    assert asked.exit_code == 0 and asked.exception is None, asked.stderr
    listed = cli("ls", "--store", path, "-c", "manual")
    assert listed.exit_code == 0 and "[b]Config" in listed.stdout and "BBCode [/x]" in listed.stdout, listed.stderr
    described = cli("collection", "describe", "manual", "Config files: [jobs] and [/server]", "--store", path)
    assert described.exit_code == 0 and "[jobs] and [/server]" in described.stdout, described.stderr
