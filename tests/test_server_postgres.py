"""The server with PostgreSQL as its system of record: the control plane in its own schema, each tenant's
store in a schema of its own; tenants stay apart exactly as on the embedded store."""

from __future__ import annotations

import time
from contextlib import ExitStack
from pathlib import Path

import psycopg
import pytest

from tests.server_fixtures import LiveServer, live_server
from waypost.base import Embedder
from waypost.engine import EngineConfig
from waypost.store.pg_cluster import ThrowawayCluster


def test_server_keeps_each_tenant_in_its_own_schema(tmp_path: Path, minilm: Embedder, pg_url: str) -> None:
    with live_server(tmp_path / "srv", minilm, database=pg_url) as server:
        for who, text in (("alpha", "Alpha keeps lighthouse logbooks."), ("beta", "Beta's zanzibar-quokka formula.")):
            with server.client(f"{who}:write") as c:
                assert c.post("/v1/collections", json={"name": "notes"}).status_code == 201
                r = c.post("/v1/collections/notes/documents", json={"documents": [{"id": f"{who}-doc", "text": text}]})
                assert r.status_code == 202, r.text
                assert server.wait_job(f"{who}:write", r.json()["id"])["state"] == "succeeded"
        with server.client("alpha:read") as c:
            hits = c.post("/v1/retrieve", json={"collection": "notes", "query": "quokka formula", "k": 5}).json()
            assert [h["document_id"] for h in hits["hits"]] == ["alpha-doc"]
            assert c.get("/v1/collections/notes/documents/beta-doc").status_code == 404
            beta_jobs = {j["id"] for j in server.client("beta:read").get("/v1/jobs").json()["jobs"]}
            for job in beta_jobs:
                assert c.get(f"/v1/jobs/{job}").status_code == 404
    with psycopg.connect(pg_url.split("?")[0]) as conn:
        schemas = {r[0] for r in conn.execute("SELECT schema_name FROM information_schema.schemata")}
        tenants = {r[0] for r in conn.execute("SELECT id FROM waypost_control.tenants")}
        assert {"waypost_control", *tenants} <= schemas  # one schema per tenant, and the control plane's
        assert len(tenants) == 2
        for tenant in tenants:  # each schema holds exactly its tenant's document
            docs = [r[0] for r in conn.execute(f'SELECT id FROM "{tenant}".documents')]
            assert len(docs) == 1
    assert not (tmp_path / "srv" / "control.sqlite").exists()  # nothing of the control plane on local disk


def test_a_database_outage_is_a_503_with_retry_after_and_the_server_recovers(
    tmp_path: Path, minilm: Embedder, pg_url: str, pg_cluster: ThrowawayCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    from waypost.store import pg_base

    monkeypatch.setattr(pg_base, "POOL_TIMEOUT_S", 1.0)  # a short retry budget, so the outage shows quickly
    monkeypatch.setattr(pg_base, "RETRY_DELAYS_S", (0.2,))
    body = {"collection": "notes", "query": "lighthouse logbooks", "k": 1}
    with live_server(tmp_path / "srv", minilm, database=pg_url) as server, server.client("alpha:write") as c:
        assert c.post("/v1/collections", json={"name": "notes"}).status_code == 201
        r = c.post("/v1/collections/notes/documents", json={"documents": [{"id": "d1", "text": "Lighthouse logs."}]})
        assert server.wait_job("alpha:write", r.json()["id"])["state"] == "succeeded"
        assert c.post("/v1/retrieve", json=body).status_code == 200
        pg_cluster.stop("immediate")
        try:
            started = time.monotonic()
            down = c.post("/v1/retrieve", json=body)
            assert time.monotonic() - started < 30
            assert down.status_code == 503, down.text
            assert down.headers["Retry-After"] == "5"
            assert "postgres" not in down.text.lower() and "127.0.0.1" not in down.text  # nothing of the database
        finally:
            pg_cluster.start()
        deadline = time.monotonic() + 30
        while (up := c.post("/v1/retrieve", json=body)).status_code == 503:
            assert time.monotonic() < deadline, "the server never recovered after the database came back"
            time.sleep(0.5)
        assert up.status_code == 200 and up.json()["hits"][0]["document_id"] == "d1"


def _upload(server: LiveServer, prefix: str, count: int) -> str:
    docs = [
        {"id": f"{prefix}{i}", "text": f"Record {i} of batch {prefix}: the gauge read {i * 7} units."}
        for i in range(count)
    ]
    with server.client("alpha:write") as c:
        r = c.post("/v1/collections/notes/documents", json={"documents": docs})
        assert r.status_code == 202, r.text
        return str(r.json()["id"])


def _wait_running(server: LiveServer, job_id: str) -> None:
    deadline = time.monotonic() + 60
    with server.client("alpha:read") as c:
        while c.get(f"/v1/jobs/{job_id}").json()["state"] == "queued":
            assert time.monotonic() < deadline
            time.sleep(0.05)


def test_two_servers_on_one_database_never_run_each_others_live_jobs_and_take_over_a_stopped_ones(
    tmp_path: Path, minilm: Embedder, pg_url: str
) -> None:
    with ExitStack() as stop_b, ExitStack() as stop_a:
        a = stop_a.enter_context(live_server(tmp_path / "a", minilm, database=pg_url, job_lease_s=1.0))
        with a.client("alpha:write") as c:
            assert c.post("/v1/collections", json={"name": "notes"}).status_code == 201
        first = _upload(a, "x", 600)
        _wait_running(a, first)
        # b starts while a runs a job, and sweeps for abandoned jobs every third of a second from then on
        b = stop_b.enter_context(live_server(tmp_path / "b", minilm, database=pg_url, job_lease_s=1.0))
        done = a.wait_job("alpha:write", first)
        assert (done["state"], done["attempts"]) == ("succeeded", 1)  # b never started it beside a
        second = _upload(a, "y", 1500)
        _wait_running(a, second)
        stop_a.close()  # a stops gracefully mid-job and releases it; b takes it over within a beat
        taken = b.wait_job("alpha:write", second)
        assert (taken["state"], taken["attempts"]) == ("succeeded", 2), taken
        with b.client("alpha:read") as c:
            listed = c.get("/v1/collections/notes/documents", params={"limit": 1}).json()
            assert listed["total"] == 2100


def test_a_worker_whose_job_was_taken_over_stops_and_the_job_runs_once_to_the_end(
    tmp_path: Path, minilm: Embedder, pg_url: str
) -> None:
    """Another process takes a running job over (as after an outage longer than the lease): the first worker
    stops at its next batch without finishing the job, and the job is resumed and ends with every document once."""
    from waypost.server.config import ServerConfig
    from waypost.store.backend import open_control

    with live_server(tmp_path / "a", minilm, database=pg_url, job_lease_s=1.0) as a:
        control = open_control(ServerConfig(root=tmp_path / "a", database=pg_url).control_location)
        with a.client("alpha:write") as c:
            assert c.post("/v1/collections", json={"name": "notes"}).status_code == 201
        job_id = _upload(a, "z", 1500)
        _wait_running(a, job_id)
        job = control.job(control.tenant_by_name("alpha").id, job_id)
        assert job is not None and job.owner  # held by a from the moment it was recorded
        now = time.time()
        taken = control.claim(job_id, "intruder/1/x", now + 1.0, now, take_from=job.owner)
        assert taken is not None and taken.owner == "intruder/1/x"
        done = a.wait_job("alpha:write", job_id)  # the intruder never runs it: a takes it back when its lease ends
        assert done["state"] == "succeeded" and done["attempts"] == 2, done
        with a.client("alpha:read") as c:
            assert c.get("/v1/collections/notes/documents", params={"limit": 1}).json()["total"] == 1500


def test_a_job_is_held_by_its_server_from_the_moment_it_is_recorded(
    tmp_path: Path, minilm: Embedder, pg_url: str
) -> None:
    from waypost.server.config import ServerConfig
    from waypost.server.jobs import JobRunner, new_job_id
    from waypost.server.tenants import TenantEngines
    from waypost.store.backend import open_control
    from waypost.store.control import JobRecord

    control = open_control(ServerConfig(root=tmp_path, database=pg_url).control_location)
    engines = TenantEngines(tmp_path / "e", EngineConfig(), pg_url)
    here, other = (JobRunner(control, control, engines, tmp_path / "spool") for _ in range(2))
    try:
        now = time.time()
        job = JobRecord(new_job_id(), "t", "notes", "queued", now, now, **here.lease())
        control.create_job(job)  # recorded; ``submit`` has not run yet
        assert other.resume_unfinished() == []  # another server's sweep leaves it alone
        stored = control.job("t", job.id)
        assert stored is not None and stored.owner == here.owner and stored.state == "queued"
    finally:
        here.close()
        other.close()
        engines.close()
