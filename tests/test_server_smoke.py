"""The server end to end on 127.0.0.1: create, upload (a job), find, answer."""

from __future__ import annotations

from tests.server_fixtures import LiveServer


def test_upload_then_retrieve_and_answer(server: LiveServer) -> None:
    with server.client("alpha:write") as c:
        assert c.post("/v1/collections", json={"name": "smoke", "description": "capitals"}).status_code == 201
        files = [
            ("files", ("paris.txt", b"Paris is the capital of France. The Louvre is there.")),
            ("files", ("berlin.md", b"# Berlin\nBerlin is the capital of Germany.")),
        ]
        r = c.post("/v1/collections/smoke/documents", files=files)
        assert r.status_code == 202, r.text
        job = server.wait_job("alpha:write", r.json()["id"])
        assert job["state"] == "succeeded", job
        assert job["counts"]["added"] == 2
        hits = c.post("/v1/retrieve", json={"collection": "smoke", "query": "capital of Germany", "k": 2}).json()
        assert hits["hits"][0]["document_id"] == "berlin.md"
        assert hits["route"] is not None and hits["route"]["pipeline"]
        listed = c.get("/v1/collections/smoke/documents").json()["documents"]
        assert sorted(d["source"] for d in listed) == ["berlin.md", "paris.txt"]  # never the spool path
        answer = c.post("/v1/answer", json={"collection": "smoke", "question": "What is the capital of France?"})
        assert answer.status_code == 200
        assert answer.json()["citations"][0]["document_id"] == "paris.txt"
