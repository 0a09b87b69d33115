"""The MCP server through real MCP clients: in memory, over stdio (a ``waypost mcp`` subprocess) and over
streamable HTTP on the live server. Tools list, search (scores and exact spans), cited answers, documents
added as jobs; a read-only key has no add tool; another tenant's ids answer not found."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, TextContent, TextResourceContents
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from tests.server_fixtures import LiveServer
from waypost.base import Embedder
from waypost.cli import mcp as mcp_cli
from waypost.embeddings.factory import share_embedder
from waypost.engine import Engine, EngineConfig
from waypost.server.auth import Principal, authenticate, create_key, create_tenant
from waypost.server.config import ServerConfig
from waypost.server.deps import ServerState
from waypost.server.jobs import JobRunner
from waypost.server.mcp import build_mcp_server
from waypost.server.tenants import TenantEngines
from waypost.store.backend import open_control
from waypost.types import Document

ALL_TOOLS = {"waypost_search", "waypost_answer", "waypost_list_collections", "waypost_add_document", "waypost_get_job"}
DOCS = {
    "paris": "Paris is the capital of France. The Louvre museum is in Paris.",
    "berlin": "Berlin is the capital of Germany. The Brandenburg Gate stands in Berlin.",
    "rome": "Rome is the capital of Italy. The Colosseum is in Rome.",
}


@dataclass
class Local:
    """A server state of its own (tenants alpha and beta) for in-memory clients."""

    state: ServerState
    principals: dict[str, Principal]

    def server(self, who: str) -> Any:
        principal = self.principals[who]
        return build_mcp_server(self.state, lambda _ctx: principal)


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory, minilm: Embedder) -> Iterator[Local]:
    share_embedder(minilm)  # the same model the session's server shares (it unshares it at the session's end)
    root = tmp_path_factory.mktemp("mcp-local")
    config = ServerConfig(root=root, engine=EngineConfig(chunk_tokens=64))
    control = open_control(root)
    engines = TenantEngines(root, config.engine)
    runner = JobRunner(control, control, engines, root / "spool")
    principals: dict[str, Principal] = {}
    for name in ("alpha", "beta"):
        tenant = create_tenant(control, name)
        for scope in ("read", "write"):
            found = authenticate(control, create_key(control, tenant, scope).token)
            assert found is not None
            principals[f"{name}:{scope}"] = found
    try:
        yield Local(ServerState(config, control, engines, runner, ready=True), principals)
    finally:
        runner.close(wait=True)
        engines.close()


def structured(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def error_text(result: CallToolResult) -> str:
    assert result.is_error
    return " ".join(c.text for c in result.content if isinstance(c, TextContent))


async def tool_names(client: Client) -> set[str]:
    return {t.name for t in (await client.list_tools()).tools}


async def add_and_wait(client: Client, collection: str, docs: dict[str, str]) -> list[dict[str, Any]]:
    """Add each document with waypost_add_document, then poll waypost_get_job until every job ends."""
    jobs = []
    for doc_id, text in docs.items():
        args = {"collection": collection, "id": doc_id, "text": text, "title": doc_id.title()}
        job = structured(await client.call_tool("waypost_add_document", args))
        assert job["state"] == "queued" and job["collection"] == collection
        jobs.append(job)
    finished = []
    deadline = time.monotonic() + 60
    for job in jobs:
        while True:
            current = structured(await client.call_tool("waypost_get_job", {"job_id": job["id"]}))
            if current["state"] in ("succeeded", "failed", "cancelled") or time.monotonic() > deadline:
                break
            await anyio.sleep(0.05)
        assert current["state"] == "succeeded", current
        finished.append(current)
    return finished


async def check_search(client: Client, collection: str) -> None:
    out = structured(
        await client.call_tool("waypost_search", {"collection": collection, "query": "capital of Germany"})
    )
    assert out["collection"] == collection and out["route"] is not None
    top = out["hits"][0]
    assert top["document_id"] == "berlin" and top["title"] == "Berlin"
    start, end = top["span"]
    assert DOCS["berlin"][start:end] == top["text"]  # the span is exact in the stored text
    assert top["chunk_id"] and isinstance(top["score"], float)
    scores = [h["score"] for h in out["hits"]]
    assert scores == sorted(scores, reverse=True)


def test_in_memory_tools_search_answer_and_jobs(local: Local) -> None:
    async def main() -> None:
        async with Client(local.server("alpha:write")) as client:
            assert await tool_names(client) == ALL_TOOLS
            search_tool = next(t for t in (await client.list_tools()).tools if t.name == "waypost_search")
            assert search_tool.output_schema is not None and "hits" in search_tool.output_schema["properties"]
            jobs = await add_and_wait(client, "mem_caps", DOCS)
            assert all(j["counts"]["added"] == 1 for j in jobs)
            await check_search(client, "mem_caps")
            answer = structured(
                await client.call_tool("waypost_answer", {"collection": "mem_caps", "question": "Where is the Louvre?"})
            )
            cited = answer["citations"][0]
            assert cited["document_id"] == "paris" and "Louvre" in answer["answer"]
            assert DOCS["paris"][cited["span"][0] : cited["span"][1]] == cited["text"]
            listed = structured(await client.call_tool("waypost_list_collections", {}))
            assert {"name": "mem_caps", "documents": 3}.items() <= next(
                c for c in listed["collections"] if c["name"] == "mem_caps"
            ).items()
            read = await client.read_resource("waypost://mem_caps/rome")
            assert isinstance(read.contents[0], TextResourceContents) and read.contents[0].text == DOCS["rome"]
            uris = {str(r.uri) for r in (await client.list_resources()).resources}
            assert {"waypost://mem_caps/paris", "waypost://mem_caps/berlin", "waypost://mem_caps/rome"} <= uris
            await add_and_wait(client, "mem spaced", {"notes/a b.md": DOCS["paris"]})  # names that need encoding
            [uri] = [str(r.uri) for r in (await client.list_resources()).resources if "spaced" in str(r.uri)]
            assert uri == "waypost://mem%20spaced/notes/a%20b.md"
            read = await client.read_resource(uri)
            assert isinstance(read.contents[0], TextResourceContents) and read.contents[0].text == DOCS["paris"]
            templates = (await client.list_resource_templates()).resource_templates
            assert templates[0].uri_template.startswith("waypost://{collection}/")
            bad = await client.call_tool("waypost_search", {"collection": "mem_caps", "query": "x", "strategy": "nope"})
            assert "nope" in error_text(bad)

    anyio.run(main)


def test_read_only_key_has_no_add_tool(local: Local) -> None:
    async def main() -> None:
        async with Client(local.server("alpha:write")) as writer:
            await add_and_wait(writer, "mem_ro", {"berlin": DOCS["berlin"]})
        async with Client(local.server("alpha:read")) as client:
            assert await tool_names(client) == ALL_TOOLS - {"waypost_add_document"}
            refused = await client.call_tool("waypost_add_document", {"collection": "mem_ro", "id": "x", "text": "y"})
            assert "write" in error_text(refused)
            out = structured(await client.call_tool("waypost_search", {"collection": "mem_ro", "query": "Germany"}))
            assert [h["document_id"] for h in out["hits"]] == ["berlin"]
        assert local.state.control.jobs(local.principals["alpha:read"].tenant.id, 500)[0].collection == "mem_ro"

    anyio.run(main)


def test_other_tenant_ids_answer_not_found(local: Local) -> None:
    async def main() -> None:
        async with Client(local.server("alpha:write")) as alpha:
            [job] = await add_and_wait(alpha, "mem_secret", {"paris": DOCS["paris"]})
        async with Client(local.server("beta:write")) as beta:
            for tool, args in [
                ("waypost_search", {"collection": "mem_secret", "query": "Paris"}),
                ("waypost_answer", {"collection": "mem_secret", "question": "What is in Paris?"}),
            ]:
                assert "no collection 'mem_secret'" in error_text(await beta.call_tool(tool, args))
            assert f"no job {job['id']!r}" in error_text(await beta.call_tool("waypost_get_job", {"job_id": job["id"]}))
            with pytest.raises(MCPError, match="no collection"):
                await beta.read_resource("waypost://mem_secret/paris")
            listed = structured(await beta.call_tool("waypost_list_collections", {}))
            assert "mem_secret" not in {c["name"] for c in listed["collections"]}
            assert not [r for r in (await beta.list_resources()).resources if "mem_secret" in str(r.uri)]
        async with Client(local.server("alpha:read")) as alpha_reader:  # the owner reads it; a missing id is not found
            read = await alpha_reader.read_resource("waypost://mem_secret/paris")
            assert isinstance(read.contents[0], TextResourceContents) and read.contents[0].text == DOCS["paris"]
            with pytest.raises(MCPError, match="no document 'rome'"):
                await alpha_reader.read_resource("waypost://mem_secret/rome")

    anyio.run(main)


def test_store_mode_has_full_access_to_a_local_store(local: Local, tmp_path: Path) -> None:
    """``waypost mcp --store DIR``'s setup (run here in-process): the one local principal, every tool, and jobs
    that write into DIR itself; its scratch control store goes when it ends."""
    store = tmp_path / "store"
    with Engine(store) as engine:
        engine.collection("notes", create=True).add([Document("rome", DOCS["rome"])])

    async def main(server: Any) -> set[str]:
        async with Client(server) as client:
            names = await tool_names(client)
            await add_and_wait(client, "notes", {"berlin": DOCS["berlin"], "paris": DOCS["paris"]})
            await check_search(client, "notes")
            return names

    with mcp_cli.mcp_state(store, None, None, "none") as (state, principal):
        scratch = state.config.root
        assert principal.allows("admin") and scratch != store
        assert anyio.run(main, build_mcp_server(state, lambda _ctx: principal)) == ALL_TOOLS
    assert not scratch.exists()
    with Engine(store) as engine:
        assert engine.collection("notes").info.documents == 3


def test_stdio_client_lists_adds_and_searches(tmp_path: Path) -> None:
    """A real ``waypost mcp --root DIR --key TOKEN`` subprocess, driven by the SDK's stdio client."""
    control = open_control(tmp_path)
    token = create_key(control, create_tenant(control, "stdio"), "write").token
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "waypost.cli", "mcp", "--root", str(tmp_path), "--key", token],
        env={"OPENBLAS_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"},
    )

    async def main() -> None:
        async with Client(params, read_timeout_seconds=120) as client:
            assert await tool_names(client) == ALL_TOOLS
            await add_and_wait(client, "stdio_caps", DOCS)
            await check_search(client, "stdio_caps")

    anyio.run(main)


def test_stdio_refuses_a_bad_key(tmp_path: Path) -> None:
    open_control(tmp_path)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "waypost.cli", "mcp", "--root", str(tmp_path), "--key", "wp_nope"]
    )

    async def main() -> None:
        with (tmp_path / "stderr.txt").open("w+") as errlog:
            with pytest.raises(BaseExceptionGroup) as raised, anyio.fail_after(60):
                async with Client(stdio_client(params, errlog=errlog)):
                    pass
            errlog.seek(0)
            assert "invalid or revoked API key" in errlog.read()
        assert raised.group_contains(MCPError, match="Connection closed", depth=None)

    anyio.run(main)


def http_client(server: LiveServer, who: str, mode: str = "auto") -> Client:
    headers = server.headers(who)
    transport = streamable_http_client(f"{server.url}/mcp", http_client=httpx2.AsyncClient(headers=headers, timeout=60))
    return Client(transport, mode=mode)


@pytest.mark.parametrize("mode", ["auto", "legacy"])  # per-request (2026) and session (initialize) protocols
def test_http_mcp_with_keys(server: LiveServer, mode: str) -> None:
    collection = f"http_caps_{mode}"

    async def main() -> None:
        async with http_client(server, "alpha:write", mode) as client:
            assert (client.protocol_version in MODERN_PROTOCOL_VERSIONS) == (mode == "auto")
            assert await tool_names(client) == ALL_TOOLS
            await add_and_wait(client, collection, DOCS)
            await check_search(client, collection)
        async with http_client(server, "alpha:read", mode) as client:
            assert await tool_names(client) == ALL_TOOLS - {"waypost_add_document"}
            refused = await client.call_tool("waypost_add_document", {"collection": collection, "id": "x", "text": "y"})
            assert "write" in error_text(refused)
        async with http_client(server, "beta:read", mode) as client:
            refused = await client.call_tool("waypost_search", {"collection": collection, "query": "Berlin"})
            assert f"no collection {collection!r}" in error_text(refused)
            with pytest.raises(MCPError, match="no collection"):
                await client.read_resource(f"waypost://{collection}/berlin")

    anyio.run(main)
    with server.client("alpha:read") as c:  # the HTTP API sees the documents MCP added
        assert c.get(f"/v1/collections/{collection}").json()["documents"] == 3


def test_http_mcp_session_belongs_to_its_key(server: LiveServer) -> None:
    """A session opened with one key answers 404 to a request with another key (even the same tenant's)."""
    headers = {"Accept": "application/json, text/event-stream"}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
    with httpx.Client(base_url=server.url, timeout=10) as c:
        opened = c.post("/mcp", json=init, headers=headers | server.headers("alpha:write"))
        assert opened.status_code == 200, opened.text
        session = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
        done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert c.post("/mcp", json=done, headers=headers | session | server.headers("alpha:write")).status_code == 202
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
        own = c.post("/mcp", json=listing, headers=headers | session | server.headers("alpha:write"))
        assert own.status_code == 200 and "waypost_add_document" in own.text
        for other in ("alpha:read", "beta:write"):
            stolen = c.post("/mcp", json=listing, headers=headers | session | server.headers(other))
            assert stolen.status_code == 404, stolen.text


def test_http_mcp_needs_a_key_and_a_loopback_host(server: LiveServer) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream"}
    for auth in ({}, {"Authorization": "Bearer wp_0123456789abcdef_notarealsecretnotarealsecret"}):
        r = httpx.post(f"{server.url}/mcp", json=body, headers=headers | auth, timeout=10)
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer", r.text
    # DNS rebinding: a loopback server refuses a foreign Host (authenticated or not); localhost on any port passes
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
    auth = headers | server.headers("alpha:read")
    foreign = httpx.post(f"{server.url}/mcp", json=init, headers=auth | {"Host": "evil.example:80"}, timeout=10)
    assert foreign.status_code == 421, foreign.text
    port = server.url.rsplit(":", 1)[1]
    local = httpx.post(f"{server.url}/mcp", json=init, headers=auth | {"Host": f"localhost:{port}"}, timeout=10)
    assert local.status_code == 200, local.text
