"""The tenant matrix on a real server: with tenant A's key, every route given tenant B's ids answers 404 and
reveals nothing; tenant headers and body fields never choose the tenant; cache and telemetry stay apart;
missing, invalid and revoked keys get 401, the wrong scope 403."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from tests.server_fixtures import LiveServer
from waypost.store.backend import open_control

SECRET = "Beta's zanzibar-quokka formula is 42 parts saffron"
SHARED = "matrix-shared"  # both tenants have a collection of this name
ONLY_B = "matrix-beta-only"


def _upload(server: LiveServer, who: str, collection: str, name: str, text: str) -> dict[str, Any]:
    with server.client(who) as c:
        if c.get(f"/v1/collections/{collection}").status_code == 404:
            assert c.post("/v1/collections", json={"name": collection}).status_code == 201
        r = c.post(f"/v1/collections/{collection}/documents", files=[("files", (name, text.encode()))])
        assert r.status_code == 202, r.text
        job = server.wait_job(who, r.json()["id"])
        assert job["state"] == "succeeded", job
        return job


@pytest.fixture(scope="module")
def beta(server: LiveServer) -> dict[str, Any]:
    job = _upload(server, "beta:write", ONLY_B, "b-doc.txt", SECRET)
    _upload(server, "beta:write", SHARED, "b-shared.txt", SECRET)
    _upload(server, "alpha:write", SHARED, "a-shared.txt", "Alpha's notes on ordinary quokkas and their habits.")
    tenant = open_control(server.root).tenant_by_name("beta")
    assert tenant is not None
    return {"job": job["id"], "tenant_id": tenant.id}


def _cases(job: str) -> list[tuple[str, str, dict[str, Any] | None]]:
    """Every /v1 route that takes an id, given beta's ids (method, path, JSON body)."""
    doc = "b-doc.txt"
    return [
        ("GET", f"/v1/collections/{ONLY_B}", None),
        ("DELETE", f"/v1/collections/{ONLY_B}", None),
        ("GET", f"/v1/collections/{ONLY_B}/documents", None),
        ("GET", f"/v1/collections/{ONLY_B}/documents/{doc}", None),
        ("DELETE", f"/v1/collections/{ONLY_B}/documents/{doc}", None),
        ("GET", f"/v1/collections/{SHARED}/documents/b-shared.txt", None),
        ("DELETE", f"/v1/collections/{SHARED}/documents/b-shared.txt", None),
        ("POST", f"/v1/collections/{ONLY_B}/documents", {"documents": [{"id": "x", "text": "planted"}]}),
        ("GET", f"/v1/jobs/{job}", None),
        ("GET", f"/v1/jobs/{job}/events", None),
        ("POST", f"/v1/jobs/{job}/cancel", None),
        ("POST", f"/v1/jobs/{job}/retry", None),
        ("POST", "/v1/retrieve", {"collection": ONLY_B, "query": "quokka formula"}),
        ("POST", "/v1/answer", {"collection": ONLY_B, "question": "What is the formula?"}),
        ("POST", "/v1/answer", {"collection": ONLY_B, "question": "What is the formula?", "stream": True}),
        (
            "POST",
            "/v1/compare",
            {"collection": ONLY_B, "query": "formula", "pipelines": [{"strategy": "bm25"}, {"strategy": "dense"}]},
        ),
        ("POST", "/v1/feedback", {"collection": ONLY_B, "query": "formula", "chunk_id": f"{doc}#0"}),
        ("POST", "/v1/feedback", {"collection": SHARED, "query": "formula", "chunk_id": "b-shared.txt#0"}),
        ("GET", f"/v1/stats/routes?collection={ONLY_B}", None),
    ]


def test_other_tenants_ids_answer_404_and_reveal_nothing(server: LiveServer, beta: dict[str, Any]) -> None:
    spoof = {"X-Tenant": "beta", "X-Tenant-Id": beta["tenant_id"], "X-Waypost-Tenant": beta["tenant_id"]}
    with server.client("alpha:admin") as c:
        for method, path, body in _cases(beta["job"]):
            for headers in ({}, spoof):
                r = c.request(method, path, json=body, headers=headers)
                assert r.status_code == 404, (method, path, r.status_code, r.text)
                assert r.headers["content-type"].startswith("application/json")
                assert "zanzibar" not in r.text and beta["tenant_id"] not in r.text
    with server.client("beta:read") as c:  # nothing of beta's was touched
        assert c.get(f"/v1/collections/{ONLY_B}/documents/b-doc.txt").json()["text"] == SECRET
        assert c.get(f"/v1/jobs/{beta['job']}").json()["state"] == "succeeded"
        assert c.get(f"/v1/collections/{ONLY_B}").json()["documents"] == 1


def test_matrix_covers_every_route_with_an_id(server: LiveServer, beta: dict[str, Any]) -> None:
    spec = httpx.get(f"{server.url}/openapi.json").json()
    routes = {(m.upper(), p) for p, ops in spec["paths"].items() for m in ops if p.startswith("/v1/")}
    tested_templates = {
        ("GET", "/v1/collections/{name}"),
        ("DELETE", "/v1/collections/{name}"),
        ("GET", "/v1/collections/{name}/documents"),
        ("POST", "/v1/collections/{name}/documents"),
        ("GET", "/v1/collections/{name}/documents/{doc_id}"),
        ("DELETE", "/v1/collections/{name}/documents/{doc_id}"),
        ("GET", "/v1/jobs/{job_id}"),
        ("GET", "/v1/jobs/{job_id}/events"),
        ("POST", "/v1/jobs/{job_id}/cancel"),
        ("POST", "/v1/jobs/{job_id}/retry"),
        ("POST", "/v1/retrieve"),
        ("POST", "/v1/answer"),
        ("POST", "/v1/compare"),
        ("POST", "/v1/feedback"),
        ("GET", "/v1/stats/routes"),
    }
    without_ids = {("GET", "/v1/collections"), ("POST", "/v1/collections"), ("GET", "/v1/jobs"),
                   ("GET", "/v1/strategies"), ("GET", "/v1/whoami")}  # fmt: skip
    assert routes - tested_templates - without_ids == set(), "a new route needs a row in the tenant matrix"


def test_same_collection_name_serves_each_tenant_its_own(server: LiveServer, beta: dict[str, Any]) -> None:
    body = {"collection": SHARED, "query": "quokka formula saffron", "strategy": "hybrid", "k": 5}
    for _ in range(2):  # the second round is served from each tenant's query cache
        with server.client("alpha:read") as c:
            hits = c.post("/v1/retrieve", json=body).json()["hits"]
            assert [h["document_id"] for h in hits] == ["a-shared.txt"]
            docs = c.get(f"/v1/collections/{SHARED}/documents").json()
            assert [d["id"] for d in docs["documents"]] == ["a-shared.txt"]
            assert "zanzibar" not in c.get("/v1/collections").text
        with server.client("beta:read") as c:
            hits = c.post("/v1/retrieve", json=body).json()["hits"]
            assert [h["document_id"] for h in hits] == ["b-shared.txt"]
    with server.client("alpha:read") as c:  # alpha's own listings hold nothing of beta's
        jobs = c.get("/v1/jobs").json()["jobs"]
        assert beta["job"] not in {j["id"] for j in jobs}


def test_telemetry_is_per_tenant(server: LiveServer, beta: dict[str, Any]) -> None:
    with server.client("beta:read") as c:
        before = c.get("/v1/stats/routes").json()["collections"]
    with server.client("alpha:read") as c:
        for q in ("quokka habits", "ordinary notes", "what do quokkas do"):
            assert c.post("/v1/retrieve", json={"collection": SHARED, "query": q}).status_code == 200
        deadline = time.monotonic() + 10
        while c.get("/v1/stats/routes").json()["collections"].get(SHARED, 0) < 3:
            assert time.monotonic() < deadline, "alpha's routes were not recorded"
            time.sleep(0.2)
    with server.client("beta:read") as c:
        assert c.get("/v1/stats/routes").json()["collections"] == before


def test_body_fields_never_choose_a_tenant(server: LiveServer, beta: dict[str, Any]) -> None:
    with server.client("alpha:write") as c:
        r = c.post("/v1/retrieve", json={"collection": ONLY_B, "query": "x", "tenant": beta["tenant_id"]})
        assert r.status_code == 422
        r = c.post("/v1/collections", json={"name": "matrix-tenant-field", "tenant_id": beta["tenant_id"]})
        assert r.status_code == 422


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer", "Bearer nonsense", "Basic dXNlcjpwYXNz", "Bearer wp_0123456789abcdef_" + "x" * 43],
)
def test_missing_and_invalid_keys_get_401(server: LiveServer, authorization: str | None) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    for method, path in (("GET", "/v1/collections"), ("POST", "/v1/retrieve"), ("GET", "/v1/jobs/x")):
        r = httpx.request(method, server.url + path, headers=headers, json={"collection": "c", "query": "q"})
        assert r.status_code == 401, (method, path, r.text)
        assert r.headers.get("www-authenticate") == "Bearer"


def test_revoked_key_gets_401_and_wrong_scope_403(server: LiveServer) -> None:
    token = server.add_key("alpha", "write")
    headers = {"Authorization": f"Bearer {token}"}
    assert httpx.get(f"{server.url}/v1/collections", headers=headers).status_code == 200
    key_id = token.split("_")[1]
    assert open_control(server.root).revoke_key(key_id, time.time())
    assert httpx.get(f"{server.url}/v1/collections", headers=headers).status_code == 401
    with server.client("alpha:read") as c:
        assert c.post("/v1/collections", json={"name": "matrix-readonly"}).status_code == 403
        assert c.delete(f"/v1/collections/{SHARED}").status_code == 403
        r = c.post(f"/v1/collections/{SHARED}/documents", json={"documents": [{"id": "x", "text": "y"}]})
        assert r.status_code == 403
        assert c.get("/v1/collections").status_code == 200
