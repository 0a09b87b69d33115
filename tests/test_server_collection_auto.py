"""Collection ``auto`` over the HTTP API and MCP (stage 1: waypost chooses the collection), ``serve`` and
``mcp`` with ``--collections-profile``, and no collection named ``auto``. Two small invented collections:
recipes and planets."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.cli_runner import Cli
from tests.server_fixtures import LiveServer, live_server
from waypost.base import Embedder
from waypost.cli import mcp as mcp_cli
from waypost.cli.common import checked_collection_selector
from waypost.cli.serve import serve_config
from waypost.engine import Engine, EngineConfig
from waypost.errors import InvalidInputError, WaypostError
from waypost.route.collections import check_profile_file
from waypost.server.mcp import build_mcp_server
from waypost.types import Document

RECIPES = {
    "bread": "Knead the dough for ten minutes, let it rise, then bake the bread at 220 degrees.",
    "soup": "Simmer onions, carrots and lentils in stock; season the soup with cumin.",
    "cake": "Whisk eggs and sugar, fold in flour and butter, and bake the sponge cake.",
}
PLANETS = {
    "mars": "Mars is a cold desert planet with two small moons, Phobos and Deimos.",
    "jupiter": "Jupiter, the largest planet, has a great red storm and dozens of moons.",
    "saturn": "Saturn is a gas giant planet ringed by ice; its moon Titan has a thick atmosphere.",
}
PLANET_QUERY = "Which planet has the moons Phobos and Deimos?"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, minilm: Embedder) -> Iterator[LiveServer]:
    """A server of its own: tenant alpha holds recipes and planets, tenant beta holds nothing."""
    with live_server(tmp_path_factory.mktemp("auto-server"), minilm) as srv:
        with srv.client("alpha:write") as c:
            for name, docs in (("recipes", RECIPES), ("planets", PLANETS)):
                assert c.post("/v1/collections", json={"name": name}).status_code == 201
                body = {"documents": [{"id": i, "text": t, "title": i.title()} for i, t in docs.items()]}
                job = c.post(f"/v1/collections/{name}/documents", json=body).json()
                assert srv.wait_job("alpha:write", job["id"])["state"] == "succeeded"
        yield srv


def test_retrieve_auto_chooses_the_planets_collection(live: LiveServer) -> None:
    with live.client("alpha:read") as c:
        r = c.post("/v1/retrieve", json={"collection": "auto", "query": PLANET_QUERY, "k": 3, "explain": True})
        assert r.status_code == 200, r.text
        out = r.json()
        assert out["collection"] == "planets" and out["collections"] == ["planets"]
        assert out["collection_choice"]["collections"] == ["planets"]
        assert out["collection_choice"]["selector"] == "embedding" and out["collection_choice"]["reasoning"]
        assert out["hits"] and {h["collection"] for h in out["hits"]} == {"planets"}
        assert out["hits"][0]["document_id"] == "mars"
        assert out["explanation"]["notes"][0].startswith("collections planets chosen by embedding")
        named = c.post("/v1/retrieve", json={"collection": "recipes", "query": PLANET_QUERY, "k": 2}).json()
        assert named["collections"] == ["recipes"] and named["collection_choice"] is None
        assert {h["collection"] for h in named["hits"]} == {"recipes"}


@pytest.mark.parametrize(
    "extra", [{"params": {"budget": 500}}, {"passages": {"policy": "grow"}}, {"rerank": "default"}]
)
def test_retrieve_auto_refuses_one_collections_options(live: LiveServer, extra: dict[str, Any]) -> None:
    with live.client("alpha:read") as c:
        r = c.post("/v1/retrieve", json={"collection": "auto", "query": PLANET_QUERY, **extra})
    assert r.status_code == 400 and "collection auto takes no params, passages or rerank" in r.json()["error"]


def test_auto_without_a_collection_with_documents_is_a_400(live: LiveServer) -> None:
    with live.client("beta:read") as c:
        for path, body in (("/v1/retrieve", {"query": "moons"}), ("/v1/answer", {"question": "moons?"})):
            r = c.post(path, json={"collection": "auto", **body})
            assert r.status_code == 400 and "no collection with documents" in r.json()["error"], r.text


def test_answer_auto_answers_from_the_chosen_collection(live: LiveServer) -> None:
    with live.client("alpha:read") as c:
        r = c.post("/v1/answer", json={"collection": "auto", "question": PLANET_QUERY})
        assert r.status_code == 200, r.text
        out = r.json()
        assert out["collection"] == "planets" and out["collection_choice"]["collections"][0] == "planets"
        assert out["citations"] and out["citations"][0]["document_id"] == "mars"
        assert {h["collection"] for h in out["hits"]} == {"planets"}
        named = c.post("/v1/answer", json={"collection": "recipes", "question": "How long to knead bread?"}).json()
        assert named["collection"] == "recipes" and named["collection_choice"] is None
        body = {"collection": "auto", "question": PLANET_QUERY, "stream": True}
        with c.stream("POST", "/v1/answer", json=body) as streamed:
            assert streamed.status_code == 200
            events = {}
            name = ""
            for line in streamed.iter_lines():
                if line.startswith("event: "):
                    name = line.removeprefix("event: ")
                elif line.startswith("data: "):
                    events[name] = json.loads(line.removeprefix("data: "))
    assert events["retrieval"]["collection"] == "planets"
    assert events["retrieval"]["collection_choice"]["collections"][0] == "planets"
    assert events["done"]["collection"] == "planets" and events["done"]["citations"][0]["document_id"] == "mars"


def test_a_collection_cannot_be_named_auto(live: LiveServer, engine: Engine, cli: Cli, tmp_path: Path) -> None:
    with live.client("alpha:write") as c:
        r = c.post("/v1/collections", json={"name": "auto"})
        assert r.status_code == 400 and "cannot be named 'auto'" in r.json()["error"]
        # a route that takes one collection says where auto works
        r = c.get("/v1/collections/auto/documents")
        assert r.status_code == 404 and "retrieve and answer only" in r.json()["error"]
    for name in ("auto", "Auto", "AUTO"):
        with pytest.raises(InvalidInputError, match="cannot be named 'auto'"):
            engine.collection(name, create=True)
    (tmp_path / "a.txt").write_text("some text")
    added = cli("add", tmp_path / "a.txt", "--store", tmp_path / "store", "--collection", "auto")
    assert added.exit_code != 0 and "cannot be named 'auto'" in added.stderr


def profile(tmp_path: Path, text: str, name: str = "profile") -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text(text)
    return path


def refused_before_serving(
    cli: Cli, tmp_path: Path, command: str, option: str, cases: list[tuple[Path, str]]
) -> list[str | Path]:
    """Each bad profile given to ``command`` with ``option`` stops it with one line naming the file, before it
    serves; returns the arguments that locate the store or server. Off loopback without auth, serve stops
    at its next check if the profile goes unchecked (it never serves)."""
    store = tmp_path / "store"
    with Engine(store):
        pass
    where: list[str | Path] = (
        ["--root", tmp_path / "root", "--no-auth", "--host", "0.0.0.0"] if command == "serve" else ["--store", store]
    )
    for path, message in cases:
        result = cli(command, *where, option, path)
        assert result.exit_code == 2 and message in result.stderr and path.name in result.stderr, result.stderr
        assert "serving" not in result.stderr and result.exception is None
    return where


@pytest.mark.parametrize("command", ["serve", "mcp"])
def test_a_bad_collections_profile_stops_the_command_before_it_serves(cli: Cli, tmp_path: Path, command: str) -> None:
    cases = [
        (tmp_path / "missing.json", "cannot read the collection selector profile"),
        (profile(tmp_path, "{not json", "broken"), "not a collection selector profile"),
        (profile(tmp_path, '{"weights": {"colour": 1.0}}', "unknown"), "unknown collection signals"),
        (profile(tmp_path, "[1, 2]", "list"), "not a collection selector profile"),
    ]
    refused_before_serving(cli, tmp_path, command, "--collections-profile", cases)


def test_a_good_collections_profile_is_accepted(cli: Cli, tmp_path: Path) -> None:
    good = profile(tmp_path, '{"fuse_ratio": 1.01}')
    check_profile_file(good)
    assert checked_collection_selector(good) == f"learned:{good}"
    assert checked_collection_selector(None) == "embedding"
    with pytest.raises(WaypostError, match="cannot read"):
        check_profile_file(tmp_path)  # a folder
    config = serve_config(tmp_path, None, "127.0.0.1", False, (), 1, 32.0, "none", good)  # what serve runs with
    assert config.engine.collection_selector == f"learned:{good}"
    # past the profile, serve goes on to its next check (and stops there, before uvicorn)
    result = cli("serve", "--root", tmp_path, "--no-auth", "--host", "0.0.0.0", "--collections-profile", good)
    assert result.exit_code == 2 and "loopback" in result.stderr and "profile" not in result.stderr


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    out: dict[str, Any] = result.structured_content
    return out


def test_mcp_auto_with_a_profile_that_fuses(tmp_path: Path, minilm: Embedder) -> None:
    """``waypost mcp --store DIR --collections-profile P`` (its setup, in-process): the profile reaches every
    engine; fuse_ratio 0 fuses both collections, and each hit says which one it came from."""
    store = tmp_path / "store"
    with Engine(store, EngineConfig(chunk_tokens=64)) as engine:
        engine.register_embedder(minilm)
        for name, docs in (("recipes", RECIPES), ("planets", PLANETS)):
            engine.collection(name, create=True).add([Document(i, t, title=i.title()) for i, t in docs.items()])
    fuse_all = profile(tmp_path, '{"fuse_ratio": 0.0}')

    async def main(server: Any) -> None:
        async with Client(server) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            for name in ("waypost_search", "waypost_answer"):
                assert 'collection "auto"' in (tools[name].description or "")
            args = {"collection": "auto", "query": PLANET_QUERY, "k": 6, "strategy": "hybrid"}
            out = structured(await client.call_tool("waypost_search", args))
            assert out["collection"] == "planets" and sorted(out["collections"]) == ["planets", "recipes"]
            assert out["hits"][0]["document_id"] == "mars" and out["hits"][0]["collection"] == "planets"
            assert {h["collection"] for h in out["hits"]} == {"planets", "recipes"}  # fused lists mix them
            answer = structured(
                await client.call_tool("waypost_answer", {"collection": "auto", "question": PLANET_QUERY})
            )
            assert answer["collection"] == "planets" and answer["citations"][0]["document_id"] == "mars"
            assert sorted(answer["collection_choice"]["collections"]) == ["planets", "recipes"]

    selector = checked_collection_selector(fuse_all)
    with mcp_cli.mcp_state(store, None, None, "none", selector) as (state, principal):
        assert state.engines.config.collection_selector == f"learned:{fuse_all}"
        anyio.run(main, build_mcp_server(state, lambda _ctx: principal))


@pytest.mark.parametrize("command", ["serve", "mcp"])
def test_a_router_profile_is_checked_before_serving_and_reaches_every_engine(
    cli: Cli, tmp_path: Path, command: str
) -> None:
    from waypost.route.model import DEFAULT_PROFILE

    cases = [
        (tmp_path / "missing.json", "cannot read router profile"),
        (profile(tmp_path, "{not json", "broken"), "cannot read router profile"),
        (profile(tmp_path, "[]", "list"), "not a waypost router profile (a JSON list, not an object)"),
        (profile(tmp_path, '{"format": "waypost-gain-model/2"}', "bare"), "a router profile needs 'calibration'"),
        (profile(tmp_path, '{"format": "waypost-gain-model/2", "calibration": 3}', "odd"), "malformed value"),
    ]
    where = refused_before_serving(cli, tmp_path, command, "--router-profile", cases)
    store = tmp_path / "store"
    good = tmp_path / "router.json"
    good.write_text(DEFAULT_PROFILE.read_text())
    if command == "serve":
        config = serve_config(tmp_path, None, "127.0.0.1", False, (), 1, 32.0, "none", None, good)
        assert config.engine.router.profile == good
        result = cli(command, *where, "--router-profile", good)  # past the profile: stops at the loopback check
        assert result.exit_code == 2 and "loopback" in result.stderr and "profile" not in result.stderr
    else:
        with mcp_cli.mcp_state(store, None, None, "none", "embedding", good) as (state, _principal):
            assert state.engines.config.router.profile == good
