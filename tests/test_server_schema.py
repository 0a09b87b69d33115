"""Schemathesis against the server's own OpenAPI schema, over HTTP on 127.0.0.1: generated requests (valid
and invalid) to every operation never get a 500, and every response matches the schema it documents.

Three passes per operation: valid requests as generated (mostly unknown collections: 404s), invalid ones
(negative mode), and valid ones aimed at things that exist (the collection, a real job, a strategy name,
a chunk id), so that fuzzed queries, filters, params and passages reach the engine."""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.server_fixtures import TERMINAL, LiveServer, live_server
from waypost.base import Embedder

pytestmark = pytest.mark.slow  # several hundred real requests, about a minute

COLLECTION = "fuzzed"
UPLOAD = "/v1/collections/{name}/documents"
EXAMPLES = 12  # per operation and pass
CHECKS = [schemathesis.checks.not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance]  # fmt: skip
STRATEGIES = ["auto", "dense", "bm25", "hybrid", "metadata", "auto-merge", "small-to-big"]  # cheap, no LLM


@dataclass
class Target:
    server: LiveServer
    job_id: str
    chunk_ids: list[str]


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory, minilm: Embedder) -> Iterator[Target]:
    """A server of its own, so fuzzed writes never touch the shared one; one collection with documents."""
    with live_server(tmp_path_factory.mktemp("schema"), minilm) as srv:
        with srv.client("alpha:write") as c:
            assert c.post("/v1/collections", json={"name": COLLECTION}).status_code == 201
            docs = [{"id": f"d{i}", "title": f"Doc {i}", "text": f"Fact {i}: the river {i} flows north.",
                     "metadata": {"year": 2000 + i, "topic": "rivers"}} for i in range(5)]  # fmt: skip
            job = c.post(f"/v1/collections/{COLLECTION}/documents", json={"documents": docs}).json()
            assert srv.wait_job("alpha:write", job["id"])["state"] == "succeeded"
            hits = c.post("/v1/retrieve", json={"collection": COLLECTION, "query": "river", "k": 5}).json()["hits"]
        yield Target(srv, job["id"], [h["chunk_id"] for h in hits])


@pytest.fixture(scope="module")
def api_schema(target: Target) -> Any:
    return schemathesis.openapi.from_url(f"{target.server.url}/openapi.json")


@st.composite
def aimed(draw: st.DrawFn, cases: st.SearchStrategy[Any], target: Target) -> Any:
    """A generated case pointed at what exists, so it reaches the engine instead of a 404."""
    case = draw(cases)
    path = case.path_parameters or {}
    if "name" in path:
        path["name"] = COLLECTION
    if "job_id" in path:
        path["job_id"] = target.job_id
    if "doc_id" in path and draw(st.booleans()):
        path["doc_id"] = "d1"
    body = case.body
    if isinstance(body, dict):
        if "collection" in body:
            body["collection"] = COLLECTION
        if "strategy" in body:
            body["strategy"] = draw(st.sampled_from(STRATEGIES))
        for pipeline in body.get("pipelines") or []:
            if isinstance(pipeline, dict):
                pipeline["strategy"] = draw(st.sampled_from(STRATEGIES[1:]))
                pipeline.pop("rerank", None)
        if "chunk_id" in body:
            body["chunk_id"] = draw(st.sampled_from(target.chunk_ids))
        if draw(st.booleans()):  # half keep their fuzzed filters and params; half get past them
            for key in ("filters", "params", "rerank"):
                body.pop(key, None)
    return case


@dataclass
class Fuzz:
    target: Target
    headers: dict[str, str]
    failures: list[str] = field(default_factory=list)
    statuses: Counter[tuple[str, str, int]] = field(default_factory=Counter)

    def operation(self, operation: Any, mode: str, note: str = "") -> None:
        """Hypothesis over one operation; its first failure is kept (unshrunk, to stay fast)."""
        cases = operation.as_strategy(generation_mode=GenerationMode(mode.partition("-")[0]))
        if mode.endswith("aimed"):
            cases = aimed(cases, self.target)
        label = f"{operation.method.upper()} {operation.path}"

        @given(cases)
        @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck),
                  derandomize=True, phases=[Phase.explicit, Phase.generate], database=None)  # fmt: skip
        def run(case: Any) -> None:
            response = case.call_and_validate(
                base_url=self.target.server.url, headers=self.headers, checks=CHECKS, timeout=60
            )
            self.statuses[(label, mode, response.status_code)] += 1

        try:
            run()
        except Unsatisfiable:  # nothing to negate: an operation without parameters, body or security
            pass
        except (Exception, BaseExceptionGroup) as exc:  # a check failed, or the call did
            self.failures.append(f"{label} ({mode}{note}): {exc}")


def json_uploads(api_schema: Any) -> Any:
    """The upload operation with only its JSON body: schemathesis draws multipart first and its generated
    files (images, archives, no extension) are all refused as unsupported types."""
    raw = copy.deepcopy(api_schema.raw_schema)
    body = raw["paths"][UPLOAD]["post"]["requestBody"]["content"]
    for media_type in [m for m in body if m != "application/json"]:
        del body[media_type]
    schema = schemathesis.openapi.from_dict(raw)
    return next(op for op in (r.ok() for r in schema.get_all_operations()) if op.path == UPLOAD and op.method == "post")


def test_no_server_error_and_every_response_matches_the_schema(api_schema: Any, target: Target) -> None:
    fuzz = Fuzz(target, target.server.headers("alpha:write"))
    operations = [r.ok() for r in api_schema.get_all_operations()]
    assert len(operations) >= 15
    deletes = [op for op in operations if op.method.upper() == "DELETE"]
    for operation in [op for op in operations if op not in deletes] + deletes:  # deletes last
        fuzz.operation(operation, "positive")
        fuzz.operation(operation, "negative")
        if operation not in deletes:  # the aimed collection stays
            fuzz.operation(operation, "positive-aimed")
    fuzz.operation(json_uploads(api_schema), "positive-aimed", ", JSON documents")
    for (label, mode, status), n in sorted(fuzz.statuses.items()):
        print(f"{label:50} {mode:15} {status} x{n}")
    assert not fuzz.failures, "\n\n".join(fuzz.failures)
    reached = {label for (label, mode, status) in fuzz.statuses if mode.endswith("aimed") and status < 300}
    for label in ("POST /v1/retrieve", "POST /v1/answer", "POST /v1/compare", "POST /v1/feedback",
                  "POST /v1/collections/{name}/documents", "GET /v1/jobs/{job_id}"):  # fmt: skip
        assert label in reached, f"{label} never got past validation: the fuzzing did not reach the engine"
    with target.server.client("alpha:read") as c:  # the fuzzed uploads' jobs all end, each with its reason
        jobs = c.get("/v1/jobs", params={"limit": 500}).json()["jobs"]
    assert len(jobs) > 1
    for job in jobs:
        final = target.server.wait_job("alpha:read", job["id"], timeout=60)
        assert final["state"] in TERMINAL, final
        assert final["state"] != "failed" or final["reason"], final


def test_the_schema_documents_errors_as_json(api_schema: Any) -> None:
    """Every /v1 operation documents 401 (every route takes a key) with the error body; nothing is left with
    FastAPI's default validation body, which this server never sends."""
    for path, methods in api_schema.raw_schema["paths"].items():
        if not path.startswith("/v1/"):
            continue
        for method, operation in methods.items():
            responses = operation["responses"]
            assert "401" in responses, f"{method} {path}"
            for status, response in responses.items():
                schema = response.get("content", {}).get("application/json", {}).get("schema", {})
                assert "HTTPValidationError" not in str(schema), f"{method} {path} {status}"


def test_unparseable_json_bodies_and_unknown_routes_answer_with_the_error_body(target: Target) -> None:
    with target.server.client("alpha:read") as c:
        r = c.post("/v1/retrieve", content=b"\xff\xfe{", headers={"Content-Type": "application/json"})
        assert r.status_code == 400 and r.json()["error"]
        r = c.get("/v1/no-such-route")
        assert r.status_code == 404 and r.json()["error"]
        r = c.put("/v1/collections")
        assert r.status_code == 405 and r.json()["error"]


def test_counts_and_switches_take_their_own_json_types(target: Target) -> None:
    """k true, k "5", k 2.0 and stream "yes" are refused: a client sending them has a bug worth hearing about."""
    query = {"collection": COLLECTION, "query": "river"}
    with target.server.client("alpha:read") as c:
        for bad in ({"k": True}, {"k": "5"}, {"k": 2.0}, {"explain": "yes"}, {"explain": 1}):
            r = c.post("/v1/retrieve", json={**query, **bad})
            assert r.status_code == 422 and r.json()["error"], (bad, r.text)
        r = c.post("/v1/answer", json={"collection": COLLECTION, "question": "river?", "stream": "yes"})
        assert r.status_code == 422 and r.json()["error"], r.text
        assert c.post("/v1/retrieve", json={**query, "k": 2, "explain": True}).status_code == 200


def test_rerank_never_reads_a_path_on_the_server(target: Target, tmp_path: Path) -> None:
    """A client names a rerank profile; a path would let it probe or load the server's files."""
    profile = tmp_path / "probe.json"
    profile.write_text('{"secret_key": 1}')
    query = {"collection": COLLECTION, "query": "river", "k": 3}
    with target.server.client("alpha:read") as c:
        for spec in (str(profile), "../../probe.json", "cross-encoder:/tmp", "cross-encoder:~/models", "a\\b"):
            r = c.post("/v1/retrieve", json={**query, "rerank": spec})
            assert r.status_code == 400 and "paths" in r.json()["error"] and "secret_key" not in r.text, r.text
        pipelines = [{"strategy": "bm25", "rerank": str(profile)}, {"strategy": "dense"}]
        r = c.post("/v1/compare", json={"collection": COLLECTION, "query": "river", "pipelines": pipelines})
        assert r.status_code == 400 and "paths" in r.json()["error"]
        for spec in ("default", "precision"):  # names still work
            r = c.post("/v1/retrieve", json={**query, "rerank": spec})
            assert r.status_code == 200 and r.json()["hits"], r.text
        r = c.post("/v1/retrieve", json={**query, "rerank": "no-such-profile"})
        assert r.status_code == 400 and "no rerank profile" in r.json()["error"]
