"""The server's command line: tenants and keys, the no-auth rule, CORS closed by default and open per origin."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from tests.cli_runner import Cli
from tests.server_fixtures import LiveServer, live_server
from waypost.base import Embedder


def test_tenants_and_keys_from_the_cli(cli: Cli, tmp_path: Path, minilm: Embedder) -> None:
    root = tmp_path / "root"
    made = cli("tenant", "create", "acme", "--root", root, "--json")
    assert made.exit_code == 0, made.stderr
    assert cli("tenant", "create", "acme", "--root", root).exit_code != 0  # names are unique
    issued = json.loads(cli("key", "create", "acme", "--scope", "write", "--root", root, "--json").stdout)
    assert issued["token"].startswith("wp_") and issued["scopes"] == ["write"]
    assert cli("key", "create", "acme", "--scope", "owner", "--root", root).exit_code != 0
    listed = json.loads(cli("key", "list", "acme", "--root", root, "--json").stdout)
    assert [k["key_id"] for k in listed] == [issued["key_id"]] and "token" not in listed[0]
    with live_server(root, minilm) as server:
        headers = {"Authorization": f"Bearer {issued['token']}"}
        assert httpx.get(f"{server.url}/v1/whoami", headers=headers).json()["tenant"] == "acme"
        assert cli("key", "revoke", issued["key_id"], "--root", root).exit_code == 0
        assert httpx.get(f"{server.url}/v1/whoami", headers=headers).status_code == 401
    assert cli("key", "revoke", issued["key_id"], "--root", root).exit_code != 0  # already revoked


def test_no_auth_is_refused_off_loopback(cli: Cli, tmp_path: Path) -> None:
    result = cli("serve", "--root", tmp_path, "--no-auth", "--host", "0.0.0.0")
    assert result.exit_code != 0 and "loopback" in result.stderr


def test_cors_is_closed_unless_an_origin_is_given(server: LiveServer, tmp_path: Path, minilm: Embedder) -> None:
    preflight = {"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"}
    r = httpx.options(f"{server.url}/v1/retrieve", headers=preflight)
    assert "access-control-allow-origin" not in r.headers
    r = httpx.get(f"{server.url}/v1/collections", headers={**server.headers("alpha:read"), "Origin": "http://x.test"})
    assert "access-control-allow-origin" not in r.headers
    with live_server(tmp_path / "cors", minilm, cors_origins=("http://app.test",)) as open_server:
        ok = {"Origin": "http://app.test", "Access-Control-Request-Method": "POST",
              "Access-Control-Request-Headers": "authorization,content-type"}  # fmt: skip
        r = httpx.options(f"{open_server.url}/v1/retrieve", headers=ok)
        assert r.status_code == 200 and r.headers["access-control-allow-origin"] == "http://app.test"
        r = httpx.options(f"{open_server.url}/v1/retrieve", headers={**ok, "Origin": "http://evil.example"})
        assert r.headers.get("access-control-allow-origin") != "http://evil.example"


def test_error_messages_name_no_server_path(server: LiveServer) -> None:
    with server.client("alpha:write") as c:
        c.post("/v1/collections", json={"name": "cli-paths"})
        c.post("/v1/collections/cli-paths/documents", json={"documents": [{"id": "d", "text": "some text"}]})
        r = c.post("/v1/retrieve", json={"collection": "cli-paths", "query": "text", "rerank": "no-such-profile"})
        assert r.status_code == 400
        assert str(server.root) not in r.text and str(Path.home()) not in r.text and "looked in" not in r.text
        big = {"documents": [{"id": "x", "text": "y" * 1000, "metadata": {"bad": {"nested": 1}}}]}
        r = c.post("/v1/collections/cli-paths/documents", json=big)
        assert r.status_code == 422 and "y" * 100 not in r.text  # the input is not echoed back
