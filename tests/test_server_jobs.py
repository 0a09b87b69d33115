"""Ingestion jobs that survive what happens to them: ``waypost serve`` SIGKILLed mid-ingest and restarted
(the job ends, never stuck, and every document is stored exactly once), and cancel and retry on a real
server. The scifact corpus is read in place from ../shared/data."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.serve_process import RUNNING, TERMINAL, ServeProcess
from tests.server_fixtures import LiveServer

pytestmark = pytest.mark.slow  # real server processes killed with SIGKILL; real embeddings of scifact

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact" / "corpus.jsonl"
BATCH = 256  # documents the ingest writes per atomic batch (waypost.ingest.pipeline)


def scifact(n: int, skip: int = 0) -> list[dict[str, Any]]:
    if not CORPUS.is_file():
        pytest.skip(f"needs the scifact corpus at {CORPUS}")
    docs = []
    with CORPUS.open(encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i >= skip + n:
                break
            if i >= skip:
                docs.append(json.loads(line))
    return docs


def jsonl(docs: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs).encode()


def doc_ids(c: httpx.Client, coll: str) -> list[str]:
    ids: list[str] = []
    while True:
        page = c.get(f"/v1/collections/{coll}/documents", params={"limit": 500, "offset": len(ids)}).json()
        if not page["documents"]:
            assert page["total"] == len(ids) == c.get(f"/v1/collections/{coll}").json()["documents"]
            return ids
        ids += [d["id"] for d in page["documents"]]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[ServeProcess]:
    proc = ServeProcess(tmp_path / "root")
    yield proc
    proc.stop()


def test_a_server_killed_mid_ingest_resumes_its_jobs_after_restart(served: ServeProcess) -> None:
    token = served.key("alpha", "write")
    docs = [{**d, "text": d["text"][:240]} for d in scifact(600)]  # one chunk each: seconds, not minutes
    served.start()
    with served.client(token) as c:
        assert c.post("/v1/collections", json={"name": "sci"}).status_code == 201
        big = c.post("/v1/collections/sci/documents", files=[("files", ("scifact.jsonl", jsonl(docs)))]).json()
        # two more jobs queue behind it (one worker): one keeps its files, the other loses them while down
        kept = c.post("/v1/collections/sci/documents", files=[("files", ("kept.jsonl", jsonl(scifact(5, 600))))])
        lost = c.post("/v1/collections/sci/documents", files=[("files", ("lost.jsonl", jsonl(scifact(5, 605))))])
        kept_id, lost_id = kept.json()["id"], lost.json()["id"]
        # kill once the first batch is written and the second is under way
        deadline = time.monotonic() + 120
        while True:
            job = c.get(f"/v1/jobs/{big['id']}").json()
            if job["state"] in RUNNING and job["counts"].get("processed", 0) >= BATCH:
                break
            assert job["state"] not in TERMINAL and time.monotonic() < deadline, job
            time.sleep(0.02)
    served.kill()
    assert job["state"] in RUNNING, job
    shutil.rmtree(served.root / "spool" / lost_id)  # its uploaded files vanish while the server is down

    served.start()
    final = served.wait(token, big["id"], timeout=240)
    assert final["state"] == "succeeded", json.dumps(final)  # resumed, not stuck and not failed
    assert final["attempts"] == 2
    assert final["counts"]["unchanged"] >= BATCH  # the batches written before the kill were skipped, not redone
    assert final["counts"]["added"] + final["counts"]["unchanged"] == len(docs)
    assert served.wait(token, kept_id)["state"] == "succeeded"
    gone = served.wait(token, lost_id)
    assert gone["state"] == "failed" and "gone" in gone["reason"], gone
    with served.client(token) as c:
        ids = doc_ids(c, "sci")
        assert len(ids) == len(set(ids)) == len(docs) + 5  # every document once: none lost, none doubled
        assert set(ids) == {d["_id"] for d in docs} | {d["_id"] for d in scifact(5, 600)}
        retried = c.post(f"/v1/jobs/{lost_id}/retry")
        assert retried.status_code == 409 and "gone" in retried.json()["error"]
        probe = docs[400]  # written after the restart
        hits = c.post("/v1/retrieve", json={"collection": "sci", "query": probe["title"], "k": 10}).json()["hits"]
        assert probe["_id"] in [h["document_id"] for h in hits[:3]]
        assert len({h["chunk_id"] for h in hits}) == len(hits)
    assert not (served.root / "spool" / big["id"]).exists()  # a succeeded job's upload is cleaned up


def short_docs(n: int, skip: int = 0) -> list[dict[str, Any]]:
    """Scifact documents cut to one chunk each, so a few hundred embed in seconds."""
    return [{"id": d["_id"], "title": d["title"], "text": d["text"][:240]} for d in scifact(n, skip)]


def wait_until(server: LiveServer, job_id: str, ready: Any, timeout: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    with server.client("alpha:read") as c:
        while True:
            job: dict[str, Any] = c.get(f"/v1/jobs/{job_id}").json()
            if ready(job) or job["state"] in TERMINAL or time.monotonic() > deadline:
                return job
            time.sleep(0.02)


def test_cancel_a_queued_and_a_running_job_then_retry_both(server: LiveServer) -> None:
    coll = "jobs_cancel"
    docs = short_docs(600)
    small = short_docs(3, 600)
    with server.client("alpha:write") as c:
        assert c.post("/v1/collections", json={"name": coll}).status_code == 201
        big = c.post(f"/v1/collections/{coll}/documents", json={"documents": docs}).json()
        queued = c.post(f"/v1/collections/{coll}/documents", json={"documents": small}).json()
        # the server has one ingest worker: the second job waits behind the first, and is cancelled there
        r = c.post(f"/v1/jobs/{queued['id']}/cancel")
        assert r.status_code == 200 and r.json()["cancel_requested"] is True
        running = wait_until(server, big["id"], lambda j: j["counts"].get("processed", 0) >= BATCH)
        assert running["state"] in RUNNING, running  # one batch written, more to go
        assert c.post(f"/v1/jobs/{big['id']}/cancel").json()["cancel_requested"] is True
        cancelled = server.wait_job("alpha:write", big["id"])
        assert cancelled["state"] == "cancelled" and cancelled["reason"], cancelled
        assert server.wait_job("alpha:write", queued["id"])["state"] == "cancelled"
        assert "before it started" in c.get(f"/v1/jobs/{queued['id']}").json()["reason"]

        # what was written before the cancel stays, whole: whole batches, each document readable and found
        ids = doc_ids(c, coll)
        assert len(ids) == len(set(ids)) and len(ids) % BATCH == 0 and BATCH <= len(ids) < len(docs)
        assert not set(ids) & {d["id"] for d in small}
        last = c.get(f"/v1/collections/{coll}/documents/{ids[-1]}").json()
        hits = c.post("/v1/retrieve", json={"collection": coll, "query": last["title"], "k": 5}).json()["hits"]
        assert hits and {h["document_id"] for h in hits} <= set(ids)

        # a finished job cannot be cancelled again or retried unless it failed or was cancelled
        assert c.post(f"/v1/jobs/{big['id']}/cancel").json()["state"] == "cancelled"
        again = c.post(f"/v1/jobs/{big['id']}/retry")
        assert again.status_code == 202, again.text
        retry = again.json()
        assert retry["retry_of"] == big["id"] and retry["id"] != big["id"] and retry["state"] == "queued"
        done = server.wait_job("alpha:write", retry["id"])
        assert done["state"] == "succeeded", done
        assert done["counts"]["unchanged"] == len(ids) and done["counts"]["added"] == len(docs) - len(ids)
        second = c.post(f"/v1/jobs/{queued['id']}/retry").json()
        assert server.wait_job("alpha:write", second["id"])["state"] == "succeeded"
        refused = c.post(f"/v1/jobs/{retry['id']}/retry")
        assert refused.status_code == 409 and "succeeded" in refused.json()["error"]
        ids = doc_ids(c, coll)
        assert sorted(ids) == sorted({d["id"] for d in docs} | {d["id"] for d in small})  # each once
    with server.client("beta:write") as other:  # another tenant's job is not there to cancel or retry
        assert other.post(f"/v1/jobs/{big['id']}/cancel").status_code == 404
        assert other.post(f"/v1/jobs/{big['id']}/retry").status_code == 404
    with server.client("alpha:read") as reader:
        assert reader.post(f"/v1/jobs/{big['id']}/cancel").status_code == 403


def test_job_events_stream_progress_then_done(server: LiveServer) -> None:
    coll = "jobs_events"
    with server.client("alpha:write") as c:
        assert c.post("/v1/collections", json={"name": coll}).status_code == 201
        job = c.post(f"/v1/collections/{coll}/documents", json={"documents": short_docs(40, 900)}).json()
        events: list[tuple[str, dict[str, Any]]] = []
        with c.stream("GET", f"/v1/jobs/{job['id']}/events") as r:
            assert r.headers["content-type"].startswith("text/event-stream")
            name = ""
            for line in r.iter_lines():
                if line.startswith("event: "):
                    name = line.removeprefix("event: ")
                elif line.startswith("data: "):
                    events.append((name, json.loads(line.removeprefix("data: "))))
    assert events[-1][0] == "done" and events[-1][1]["state"] == "succeeded"
    assert all(n == "progress" for n, _ in events[:-1])
    ranks = ["queued", *RUNNING, "succeeded"]
    seen = [ranks.index(e["state"]) for _, e in events]
    assert seen == sorted(seen)  # states only move forward


def test_a_graceful_stop_leaves_the_running_job_to_resume(served: ServeProcess) -> None:
    token = served.key("alpha", "write")
    docs = [{**d, "text": d["text"][:240]} for d in scifact(600)]
    served.start()
    with served.client(token) as c:
        assert c.post("/v1/collections", json={"name": "sci"}).status_code == 201
        job_id = c.post("/v1/collections/sci/documents", files=[("files", ("s.jsonl", jsonl(docs)))]).json()["id"]
        deadline = time.monotonic() + 120
        while True:
            job = c.get(f"/v1/jobs/{job_id}").json()
            if job["state"] in RUNNING and job["counts"].get("processed", 0) >= BATCH:
                break
            assert job["state"] not in TERMINAL and time.monotonic() < deadline, job
            time.sleep(0.02)
    served.stop()  # SIGTERM: uvicorn shuts down, the worker stops between batches
    served.start()
    final = served.wait(token, job_id, timeout=240)
    assert final["state"] == "succeeded", json.dumps(final)  # not "cancelled" by the shutdown
    with served.client(token) as c:
        assert sorted(doc_ids(c, "sci")) == sorted(d["_id"] for d in docs)


def test_one_retry_at_a_time_and_a_deleted_collection_stays_deleted(server: LiveServer) -> None:
    with server.client("alpha:write") as c:
        c.post("/v1/collections", json={"name": "jobs-retry-once"})
        first = c.post("/v1/collections/jobs-retry-once/documents", json={"documents": short_docs(300)}).json()
        c.post(f"/v1/jobs/{first['id']}/cancel")
        assert server.wait_job("alpha:write", first["id"])["state"] in ("cancelled", "succeeded")
        if c.get(f"/v1/jobs/{first['id']}").json()["state"] == "cancelled":
            again = c.post(f"/v1/jobs/{first['id']}/retry")
            assert again.status_code == 202
            twice = c.post(f"/v1/jobs/{first['id']}/retry")
            assert twice.status_code == 409 and again.json()["id"] in twice.json()["error"]
            assert server.wait_job("alpha:write", again.json()["id"])["state"] == "succeeded"
        # a job queued behind a long one, whose collection is deleted before it runs
        c.post("/v1/collections", json={"name": "jobs-doomed"})
        long = c.post("/v1/collections/jobs-retry-once/documents", json={"documents": short_docs(200, 300)}).json()
        doomed = c.post("/v1/collections/jobs-doomed/documents", json={"documents": short_docs(3, 600)}).json()
        assert c.delete("/v1/collections/jobs-doomed").status_code == 204
        server.wait_job("alpha:write", long["id"])
        ended = server.wait_job("alpha:write", doomed["id"])
        if ended["attempts"]:  # it ran after the delete (not before it)
            assert ended["state"] == "failed" and "deleted" in ended["reason"], ended
            assert c.get("/v1/collections/jobs-doomed").status_code == 404
