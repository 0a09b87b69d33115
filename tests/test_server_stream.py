"""Streamed answers from the real llama.cpp server with SmolLM2: the ``retrieval`` event comes before the first
token, heartbeats fill the silences, ``done`` comes last, and a client that goes away stops the generation
(the server closes its connection to the LLM while the LLM is still sending)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.llama_server import LlamaServer, Relay
from tests.server_fixtures import LiveServer, live_server
from waypost.base import Embedder
from waypost.engine import EngineConfig

pytestmark = pytest.mark.slow  # the real SmolLM2 behind llama.cpp's server

COLL = "stream_kb"
DOCS = [
    {"id": "bread", "title": "Bread", "text": "Bread rises because yeast ferments sugar into carbon dioxide gas, "
     "which the gluten network traps as bubbles. Warm dough rises faster; salt slows the yeast down."},
    {"id": "tides", "title": "Tides", "text": "Tides come from the moon's gravity pulling on the oceans. The sun "
     "adds a smaller pull, so spring tides come at new and full moon and neap tides in between."},
    {"id": "volcano", "title": "Volcanoes", "text": "Volcanoes erupt when magma, lighter than the rock around it, "
     "rises through cracks; dissolved gases expand near the surface and drive the eruption."},
]  # fmt: skip
LONG = "Write a long, detailed essay about bread, tides and volcanoes, explaining every fact in the sources."


class WatchingRelay(Relay):
    """A relay to the LLM server that records, for each connection, who hung up first and whether the LLM had
    sent its whole reply (``data: [DONE]``) by then: waypost hanging up on an unfinished reply means the
    generation was cancelled."""

    def __init__(self, target_port: int) -> None:
        super().__init__(target_port)
        self.hangups: list[tuple[float, str, bool]] = []  # (when, "waypost" | "llm", reply finished)
        self._tails: dict[socket.socket, bytes] = {}  # client socket -> the last bytes it was sent
        self._watch = threading.Lock()
        self.pace_s = 0.0  # a pause before each piece of the reply is passed on: a slow LLM, whatever it says

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        from_llm = src.getpeername()[1] == self._target
        client = dst if from_llm else src
        try:
            while data := src.recv(65536):
                if from_llm:
                    time.sleep(self.pace_s)
                    with self._watch:  # noted before it is passed on: waypost cannot have seen it before
                        self._tails[client] = (self._tails.get(client, b"") + data)[-64:]
                dst.sendall(data)
            with self._watch:
                finished = b"[DONE]" in self._tails.get(client, b"")
                self.hangups.append((time.monotonic(), "llm" if from_llm else "waypost", finished))
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        finally:
            with self._lock:
                self._open.discard(src)
            src.close()

    def first_hangup_after(self, t0: float, timeout: float = 15.0) -> tuple[float, str, bool] | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._watch:
                after = [h for h in self.hangups if h[0] >= t0]
            if after:
                return after[0]
            time.sleep(0.01)
        return None


@dataclass
class StreamEnv:
    server: LiveServer
    relay: WatchingRelay


@pytest.fixture(scope="module")
def env(llama_server: LlamaServer, minilm: Embedder, tmp_path_factory: pytest.TempPathFactory) -> Iterator[StreamEnv]:
    relay = WatchingRelay(llama_server.port)
    engine = EngineConfig(chunk_tokens=64, llm=f"openai:smollm2@{relay.url}")
    root: Path = tmp_path_factory.mktemp("stream")
    with live_server(root, minilm, engine=engine, heartbeat_s=0.05) as srv:
        with srv.client("alpha:write") as c:
            assert c.post("/v1/collections", json={"name": COLL}).status_code == 201
            job = c.post(f"/v1/collections/{COLL}/documents", json={"documents": DOCS}).json()
        assert srv.wait_job("alpha:write", job["id"])["state"] == "succeeded"
        yield StreamEnv(srv, relay)
    relay.stop()


def read_events(lines: Iterator[str], stop_after_token: bool = False) -> list[tuple[str, Any]]:
    """``(event, data)`` in arrival order; a heartbeat comment is ``("heartbeat", None)``."""
    events: list[tuple[str, Any]] = []
    name = ""
    for line in lines:
        if line.startswith(": heartbeat"):
            events.append(("heartbeat", None))
        elif line.startswith("event: "):
            name = line.removeprefix("event: ")
        elif line.startswith("data: "):
            events.append((name, json.loads(line.removeprefix("data: "))))
            if stop_after_token and name == "token":
                break
    return events


def ask(question: str) -> dict[str, Any]:
    return {"collection": COLL, "question": question, "strategy": "hybrid", "k": 3, "stream": True}


def test_retrieval_first_then_tokens_then_done_with_heartbeats(env: StreamEnv) -> None:
    t0 = time.monotonic()
    with env.server.client("alpha:read") as c, c.stream("POST", "/v1/answer", json=ask("Why does bread rise?")) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        assert r.headers["x-accel-buffering"] == "no" and r.headers["cache-control"] == "no-cache"
        events = read_events(r.iter_lines())
    names = [n for n, _ in events if n != "heartbeat"]
    assert names[0] == "retrieval" and names[-1] == "done", names
    assert set(names[1:-1]) == {"token"} and len(names) >= 4  # several tokens, streamed one by one
    retrieval = events[[n for n, _ in events].index("retrieval")][1]
    assert retrieval["sources"] == len(retrieval["hits"]) >= 1
    assert retrieval["hits"][0]["document_id"] == "bread"
    first_token = [n for n, _ in events].index("token")
    assert "heartbeat" in [n for n, _ in events[:first_token]]  # the LLM's prompt time was filled
    done = events[-1][1]
    tokens = "".join(d["text"] for n, d in events if n == "token")
    assert done["mode"] == "llm" and done["answer"] and "hits" not in done
    assert tokens.strip() and done["usage"]["llm_calls"] == 1
    hangup = env.relay.first_hangup_after(t0)
    assert hangup is not None and hangup[2]  # the connection closed on a finished reply


def test_a_client_that_disconnects_stops_the_generation(env: StreamEnv) -> None:
    env.relay.pace_s = 0.1  # SmolLM2 may answer in a dozen tokens: paced, its reply outlasts the disconnect
    for i in range(6):  # more than the LLM client's 4 concurrent slots: a leaked one would hang the next
        t0 = time.monotonic()
        with env.server.client("alpha:read") as c, c.stream("POST", "/v1/answer", json=ask(f"{LONG} ({i})")) as r:
            events = read_events(r.iter_lines(), stop_after_token=True)
            assert [n for n, _ in events if n != "heartbeat"] == ["retrieval", "token"]
            gone = time.monotonic()
        # leaving the block closed the connection after one token: the server must let go of the LLM
        hangup = env.relay.first_hangup_after(t0)
        assert hangup is not None, "the connection to the LLM was never closed"
        at, side, finished = hangup
        assert side == "waypost" and not finished, "the LLM finished its reply: the generation was not stopped"
        assert at - gone < 5.0
    env.relay.pace_s = 0.0
    with env.server.client("alpha:read") as c:  # the server still answers, whole
        r = c.post("/v1/answer", json={**ask("What causes tides?"), "stream": False})
        assert r.status_code == 200 and r.json()["mode"] == "llm", r.text


def test_a_stream_whose_llm_is_gone_ends_with_an_error_or_a_fallback(env: StreamEnv, minilm: Embedder,
                                                                      tmp_path: Path) -> None:  # fmt: skip
    relay = Relay(env.relay._target)
    relay.stop()  # nothing listens behind this URL
    engine = EngineConfig(chunk_tokens=64, llm=f"openai:smollm2@{relay.url}", llm_timeout=2.0)
    with live_server(tmp_path, minilm, engine=engine, heartbeat_s=0.2) as srv, srv.client("alpha:write") as c:
        assert c.post("/v1/collections", json={"name": COLL}).status_code == 201
        job = c.post(f"/v1/collections/{COLL}/documents", json={"documents": DOCS}).json()
        assert srv.wait_job("alpha:write", job["id"])["state"] == "succeeded"
        with c.stream("POST", "/v1/answer", json=ask("Why does bread rise?")) as r:
            assert r.status_code == 200
            events = read_events(r.iter_lines())
    names = [n for n, _ in events if n != "heartbeat"]
    assert names[0] == "retrieval" and names[-1] in ("done", "error"), names
    if names[-1] == "done":  # the extractive fallback, saying why
        assert events[-1][1]["mode"] == "extractive" and events[-1][1]["usage"]["fallbacks"]
    else:
        assert events[-1][1]["error"]


def test_stream_refusals_are_plain_json(env: StreamEnv) -> None:
    with env.server.client("alpha:read") as c:
        r = c.post("/v1/answer", json={**ask("x"), "collection": "missing"})
        assert r.status_code == 404 and r.json()["error"]
        r = c.post("/v1/answer", json={**ask("x"), "strategy": "nope"})  # refused before a stream starts
        assert r.status_code == 400 and "unknown strategy" in r.json()["error"]
        r = c.post("/v1/answer", json={**ask("x"), "params": {"k": [1]}})
        assert r.status_code == 422 and r.json()["error"]
    with httpx.Client(base_url=env.server.url) as anonymous:
        assert anonymous.post("/v1/answer", json=ask("x")).status_code == 401
