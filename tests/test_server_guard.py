"""What a real server on 127.0.0.1 checks before it does any work: a body's size and the key before the body
is read, ids that are URL path segments, a filter's size, a streamed answer's parameters, and a JSON upload's
lone surrogates (kept as U+FFFD, as a file's are)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from tests.server_fixtures import LiveServer, live_server
from waypost.base import Embedder
from waypost.filters.model import MAX_FILTER_CHARS


def make(c: httpx.Client, name: str, docs: list[dict[str, Any]]) -> dict[str, object]:
    assert c.post("/v1/collections", json={"name": name}).status_code == 201
    r = c.post(f"/v1/collections/{name}/documents", json={"documents": docs})
    assert r.status_code == 202, r.text
    return {"id": r.json()["id"]}


def raw_request(url: str, head: bytes, timeout: float = 5.0) -> tuple[bytes, float]:
    """``head`` (a request line and headers) sent alone, with no body: the server's first answer and how long
    it took. A server that reads the body before answering never answers."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80), timeout=timeout) as sock:
        t0 = time.monotonic()
        sock.sendall(head)
        answer = sock.recv(4096)
        return answer, time.monotonic() - t0


def test_a_dot_id_is_refused_and_deleting_it_never_reaches_the_collection(server: LiveServer) -> None:
    coll = "guard_dots"
    with server.client("alpha:write") as c:
        job = make(c, coll, [{"id": "..", "text": "dot dot"}, {"id": ".", "text": "dot"}, {"id": "keep", "text": "x"}])
        done = server.wait_job("alpha:write", str(job["id"]))
        assert done["state"] == "succeeded", done
        assert done["counts"]["added"] == 1
        assert [d["id"] for d in c.get(f"/v1/collections/{coll}/documents").json()["documents"]] == ["keep"]
        # a browser reads '/documents/..' (or '%2E%2E', or 'a/../..') as the collection's own URL, so no id
        # may hold a dot segment
        refused = make(c, f"{coll}2", [{"id": "a/../..", "text": "x"}, {"id": "./..", "text": "y"}])
        assert server.wait_job("alpha:write", str(refused["id"]))["state"] == "failed"
        r = c.delete(f"/v1/collections/{coll}/documents/%2E%2E")
        assert r.status_code == 404, r.text
        assert c.get(f"/v1/collections/{coll}").status_code == 200
        assert [d["id"] for d in c.get(f"/v1/collections/{coll}/documents").json()["documents"]] == ["keep"]


def test_an_oversized_body_is_refused_before_it_is_read(server: LiveServer) -> None:
    big = 200_000_000
    for key in ("", f"Authorization: Bearer {server.keys['alpha:read']}\r\n"):
        head = (
            f"POST /v1/retrieve HTTP/1.1\r\nHost: 127.0.0.1\r\n{key}Content-Type: application/json\r\n"
            f"Content-Length: {big}\r\n\r\n"
        ).encode()
        answer, seconds = raw_request(server.url, head)
        assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
        assert seconds < 2.0


def test_a_body_without_a_valid_key_is_refused_before_it_is_read(server: LiveServer) -> None:
    for key in ("", "Authorization: Bearer wp_nope.nope\r\n", "Authorization: Basic YTpi\r\n"):
        head = (
            f"POST /v1/retrieve HTTP/1.1\r\nHost: 127.0.0.1\r\n{key}Content-Type: application/json\r\n"
            "Content-Length: 500000\r\n\r\n"
        ).encode()  # the body never comes: only a server that answers first answers at all
        answer, _ = raw_request(server.url, head)
        assert answer.startswith(b"HTTP/1.1 401"), answer[:200]
        assert b"www-authenticate: Bearer" in answer.lower().replace(b"bearer", b"Bearer")


def test_a_chunked_body_over_the_limit_is_refused(tmp_path: Path, minilm: Embedder) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"collection": "c", "query": "'
        for _ in range(40):
            yield b"x" * 1000
        yield b'"}'

    with live_server(tmp_path, minilm, max_request_bytes=20_000) as srv, srv.client("alpha:read") as c:
        r = c.post("/v1/retrieve", content=chunks(), headers={"Content-Type": "application/json"})
        assert r.status_code == 413, r.text
        assert "20,000-byte limit" in r.json()["error"]
        small = c.post("/v1/retrieve", json={"collection": "nowhere", "query": "fine"})
        assert small.status_code == 404, small.text  # under the limit: the route answers as always


def test_filters_over_the_documented_size_are_refused(server: LiveServer) -> None:
    with server.client("alpha:write") as c:
        job = make(c, "guard_filters", [{"id": "a", "text": "the first document", "metadata": {"lang": "en"}}])
        assert server.wait_job("alpha:write", str(job["id"]))["state"] == "succeeded"
        values = ["x" * 50] * 4000
        body = {"collection": "guard_filters", "query": "x", "filters": {"lang": {"in": values}}}
        r = c.post("/v1/retrieve", json=body)
        assert r.status_code == 400, r.text
        assert f"{MAX_FILTER_CHARS:,}" in r.json()["error"]
        ok = c.post("/v1/retrieve", json={"collection": "guard_filters", "query": "x", "filters": {"lang": "en"}})
        assert ok.status_code == 200, ok.text
        near = {"lang": {"in": ["x" * 20] * 4300}}  # 98,917 characters as compact JSON (103,216 with spaces)
        r = c.post("/v1/retrieve", json={"collection": "guard_filters", "query": "x", "filters": near})
        assert r.status_code == 200, r.text[:300]


def test_a_streamed_answer_checks_its_parameters_before_streaming(server: LiveServer) -> None:
    with server.client("alpha:write") as c:
        make(c, "guard_stream", [{"id": "a", "text": "Reset the router by holding the button for ten seconds."}])
        for strategy, params in (("bm25", {"bogus": 1}), ("raptor-traversal", {"depth": 0}), ("web", None)):
            body = {"collection": "guard_stream", "question": "reset?", "strategy": strategy, "stream": True}
            if params:
                body["params"] = params
            r = c.post("/v1/answer", json=body)
            assert r.status_code == 400, (strategy, r.status_code, r.text[:200])
            assert r.headers["content-type"].startswith("application/json")


def test_long_names_are_refused_by_the_schema_and_messages_stay_short(server: LiveServer) -> None:
    with server.client("alpha:write") as c:
        assert c.post("/v1/collections", json={"name": "guard_names"}).status_code == 201
        r = c.post("/v1/retrieve", json={"collection": "guard_names", "query": "x", "strategy": "a" * 100_000})
        assert r.status_code == 422 and len(r.content) < 5_000
        r = c.post("/v1/retrieve", json={"collection": "guard_names", "query": "x", "strategy": "b" * 60})
        assert r.status_code == 400 and "unknown strategy" in r.json()["error"]
        r = c.post("/v1/retrieve", json={"collection": "guard_names", "query": "x", "params": {"k" * 500_000: [1]}})
        assert r.status_code == 422 and len(r.content) < 5_000, len(r.content)  # the key is not echoed whole
        field = "f" * 90_000
        r = c.post("/v1/retrieve", json={"collection": "guard_names", "query": "x", "filters": {field: 1}})
        assert r.status_code == 400 and "90,0" in r.json()["error"] and len(r.content) < 3_000, r.text[:300]


def test_a_lone_surrogate_in_a_json_upload_becomes_a_replacement_character(server: LiveServer) -> None:
    coll = "guard_surrogate"
    body = '{"documents": [{"id": "s1", "text": "lone \\udc00 low", "title": "t \\ud800"}]}'
    with server.client("alpha:write") as c:
        assert c.post("/v1/collections", json={"name": coll}).status_code == 201
        r = c.post(f"/v1/collections/{coll}/documents", content=body, headers={"Content-Type": "application/json"})
        assert r.status_code == 202, r.text
        assert server.wait_job("alpha:write", r.json()["id"])["state"] == "succeeded"
        doc = c.get(f"/v1/collections/{coll}/documents/s1").json()
        assert doc["text"] == "lone \ufffd low" and doc["title"] == "t \ufffd"
        bad = c.post(f"/v1/collections/{coll}/documents", content="{nope", headers={"Content-Type": "application/json"})
        assert bad.status_code == 422 and "not valid JSON" in bad.json()["error"]
        schema = c.post(f"/v1/collections/{coll}/documents", json={"documents": [{"id": 3}]})
        assert schema.status_code == 422 and schema.json()["error"] == "the request does not match the API's schema"


def test_a_body_sent_without_a_json_content_type_says_so(server: LiveServer) -> None:
    with server.client("alpha:write") as c:
        assert c.post("/v1/collections", json={"name": "guard_ctype"}).status_code == 201
        r = c.post("/v1/retrieve", content=b'{"collection": "x", "query": "y"}', headers={"Content-Type": "text/plain"})
        assert r.status_code == 422 and "Content-Type: application/json" in r.json()["error"], r.text
        r = c.post("/v1/retrieve", json={"collection": "x"})  # JSON, but a field missing: no hint about the header
        assert r.status_code == 422 and "Content-Type" not in r.json()["error"]
        r = c.post("/v1/retrieve", json={"collection": "guard_ctype", "query": "y", "strategy": "nope"})
        listed = r.json()["error"]
        assert "unknown strategy" in listed and "hybrid" in listed and "web" not in listed  # no provider: not offered
