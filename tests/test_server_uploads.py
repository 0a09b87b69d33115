"""Uploads against a real server on 127.0.0.1: files that are too big, empty, binary, not UTF-8, named like
paths or twice, Unicode names, replays and twenty at once. Each gets a clear JSON answer, and the collection
holds exactly what was accepted: nothing lost, nothing twice."""

from __future__ import annotations

import threading
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from tests.server_fixtures import LiveServer, live_server
from waypost.base import Embedder

Files = list[tuple[str, tuple[str, bytes]]]


def make(c: httpx.Client, name: str) -> None:
    assert c.post("/v1/collections", json={"name": name}).status_code == 201


def upload(c: httpx.Client, coll: str, files: Files, **kw: Any) -> httpx.Response:
    return c.post(f"/v1/collections/{coll}/documents", files=files, **kw)


def raw_upload(c: httpx.Client, coll: str, name: bytes, data: bytes) -> httpx.Response:
    """A multipart body written by hand, so the file name reaches the server byte for byte (httpx escapes
    control characters in names)."""
    boundary = b"wpboundary7f3a"
    body = (b"--" + boundary + b'\r\nContent-Disposition: form-data; name="files"; filename="' + name + b'"\r\n'
            b"Content-Type: text/plain\r\n\r\n" + data + b"\r\n--" + boundary + b"--\r\n")  # fmt: skip
    headers = {"Content-Type": f"multipart/form-data; boundary={boundary.decode()}"}
    return c.post(f"/v1/collections/{coll}/documents", content=body, headers=headers)


def doc_ids(c: httpx.Client, coll: str) -> list[str]:
    """Every document id of a collection, page by page; the listing's total must agree."""
    ids: list[str] = []
    while True:
        page = c.get(f"/v1/collections/{coll}/documents", params={"limit": 500, "offset": len(ids)}).json()
        ids += [d["id"] for d in page["documents"]]
        if not page["documents"]:
            assert page["total"] == len(ids)
            assert c.get(f"/v1/collections/{coll}").json()["documents"] == len(ids)
            return ids


def jobs_of(c: httpx.Client, coll: str) -> list[dict[str, Any]]:
    return [j for j in c.get("/v1/jobs", params={"limit": 500}).json()["jobs"] if j["collection"] == coll]


def refused(r: httpx.Response, status: int, *words: str) -> dict[str, Any]:
    """A refusal: the status, the JSON error body and the words that make it clear."""
    assert r.status_code == status, r.text
    body: dict[str, Any] = r.json()
    assert set(body) == {"error", "detail"} and isinstance(body["error"], str)
    for word in words:
        assert word.lower() in body["error"].lower(), body
    return body


def succeeded(server: LiveServer, r: httpx.Response) -> dict[str, Any]:
    assert r.status_code == 202, r.text
    job = server.wait_job("alpha:write", r.json()["id"])
    assert job["state"] == "succeeded", job
    return job


def test_bad_files_are_refused_whole_with_a_clear_reason(server: LiveServer) -> None:
    coll = "uploads_bad"
    good = ("files", ("good.txt", b"A perfectly good file about rivers."))
    cases: list[tuple[Files, int, tuple[str, ...]]] = [
        ([("files", ("empty.txt", b""))], 400, ("empty.txt", "empty")),
        ([("files", ("nul.txt", b"text\x00\x01\x02binary"))], 415, ("nul.txt", "binary")),
        ([("files", ("image.png", b"\x89PNG\r\n\x1a\n\x00\x00"))], 415, ("image.png", "unsupported")),
        ([("files", ("noext", b"some text"))], 415, ("noext", "no extension")),
        ([("files", ("fake.pdf", b"not a pdf at all"))], 415, ("fake.pdf", "not a pdf")),
        ([("files", ("latin1.txt", "café crème".encode("latin-1")))], 422, ("latin1.txt", "utf-8", "byte 3")),
        ([("files", ("bad.md", b"# ok\n\xff\xfe\xfd"))], 422, ("bad.md", "utf-8")),
        ([good, ("files", ("good.txt", b"another body"))], 400, ("good.txt", "twice")),
        ([good, ("files", ("empty.md", b""))], 400, ("empty.md",)),  # one bad file refuses the whole upload
        ([("other", ("x.txt", b"in the wrong field"))], 400, ("files",)),
    ]
    with server.client("alpha:write") as c:
        make(c, coll)
        for files, status, words in cases:
            refused(upload(c, coll, files), status, *words)
        refused(c.post(f"/v1/collections/{coll}/documents", content=b"hello", headers={"Content-Type": "text/plain"}),
                415, "multipart")  # fmt: skip
        refused(c.post(f"/v1/collections/{coll}/documents", json={"documents": []}), 422)
        refused(c.post(f"/v1/collections/{coll}/documents", json={"documents": [{"id": "", "text": "x"}]}), 422)
        refused(upload(c, "no_such_collection", [good]), 404, "no_such_collection")
        assert doc_ids(c, coll) == [] and jobs_of(c, coll) == []  # nothing was kept, no job was started
        with server.client("alpha:read") as reader:
            refused(upload(reader, coll, [good]), 403, "write")
        # a file that passes the checks but holds no text: accepted, and its job fails saying why
        r = upload(c, coll, [("files", ("blank.txt", b"   \n\t  \n"))])
        assert r.status_code == 202
        job = server.wait_job("alpha:write", r.json()["id"])
        assert job["state"] == "failed" and job["reason"] and job["errors"][0]["source"] == "blank.txt", job
        assert "no text" in job["errors"][0]["error"] and "/spool/" not in job["errors"][0]["error"]
        assert doc_ids(c, coll) == []


def test_names_that_are_paths_or_hidden_are_refused_and_nothing_lands_outside(server: LiveServer) -> None:
    coll = "uploads_paths"
    names = ["../escape.txt", "../../etc/passwd.txt", "a/b.txt", "/abs.txt", "..\\win.txt", "dir\\x.txt",
             ".hidden.txt", "..", "rtl\u202etxt.md", "x" * 300 + ".txt"]  # fmt: skip
    raw_names = [b"tab\tname.txt", b"bell\x07.txt", b"nul\x00.txt", b"../raw-escape.txt", b"del\x7f.txt"]
    with server.client("alpha:write") as c:
        make(c, coll)
        for name in names:
            refused(upload(c, coll, [("files", (name, b"sneaky content"))]), 400, "file name")
        for raw in raw_names:
            refused(raw_upload(c, coll, raw, b"sneaky content"), 400)
        assert raw_upload(c, coll, b"plain.txt", b"the hand-made body works").status_code == 202  # the control
        assert len(jobs_of(c, coll)) == 1
        assert server.wait_job("alpha:write", jobs_of(c, coll)[0]["id"])["state"] == "succeeded"
        assert doc_ids(c, coll) == ["plain.txt"]
    stray = [p for p in server.root.parent.rglob("*") if "escape" in p.name or p.name in ("passwd.txt", "abs.txt")]
    assert stray == []


def test_unicode_names_keep_their_name_and_normalise_to_one_document(server: LiveServer) -> None:
    coll = "uploads_unicode"
    names = ["café–日本語.txt", "Ελληνικά notes.md", "emoji 🚀 launch.txt", "שלום.txt"]
    with server.client("alpha:write") as c:
        make(c, coll)
        files = [("files", (n, f"Document named {n}: the text of it.".encode())) for n in names]
        job = succeeded(server, upload(c, coll, files))
        assert job["counts"]["added"] == len(names)
        assert sorted(doc_ids(c, coll)) == sorted(names)
        for name in names:
            doc = c.get(f"/v1/collections/{coll}/documents/{quote(name)}").json()
            assert doc["id"] == name and name in doc["text"]
        # the same name in decomposed form (NFD) is the same document: unchanged, not a second copy
        decomposed = unicodedata.normalize("NFD", names[0])
        assert decomposed != names[0]
        again = succeeded(server, upload(c, coll, [("files", (decomposed, f"Document named {names[0]}: the text of it."
                                                               .encode()))]))  # fmt: skip
        assert again["counts"]["unchanged"] == 1 and again["counts"]["added"] == 0
        refused(upload(c, coll, [("files", (names[0], b"one")), ("files", (decomposed, b"two"))]), 400, "twice")
        assert sorted(doc_ids(c, coll)) == sorted(names)


def test_the_same_file_twice_is_unchanged_and_a_changed_one_updates(server: LiveServer) -> None:
    coll = "uploads_duplicate"
    body = b"The Danube flows through ten countries."
    with server.client("alpha:write") as c:
        make(c, coll)
        first = succeeded(server, upload(c, coll, [("files", ("danube.txt", body))]))
        assert first["counts"]["added"] == 1
        second = succeeded(server, upload(c, coll, [("files", ("danube.txt", body))]))
        assert second["id"] != first["id"]
        assert second["counts"]["unchanged"] == 1 and second["counts"]["added"] == 0
        changed = succeeded(server, upload(c, coll, [("files", ("danube.txt", body + b" It ends in the Black Sea."))]))
        assert changed["counts"]["updated"] == 1 and changed["counts"]["added"] == 0
        assert doc_ids(c, coll) == ["danube.txt"]
        assert "Black Sea" in c.get(f"/v1/collections/{coll}/documents/danube.txt").json()["text"]
        hits = c.post("/v1/retrieve", json={"collection": coll, "query": "Danube countries", "k": 10}).json()["hits"]
        assert {h["document_id"] for h in hits} == {"danube.txt"}
        assert len({h["chunk_id"] for h in hits}) == len(hits)  # the old version's chunks are gone


def test_idempotency_key_replays_the_same_job_and_refuses_another_body(server: LiveServer) -> None:
    coll = "uploads_idempotent"
    files = [("files", ("nile.txt", b"The Nile is the longest river in Africa."))]
    key = {"Idempotency-Key": "upload-nile-1"}
    with server.client("alpha:write") as c:
        make(c, coll)
        first = upload(c, coll, files, headers=key)
        assert first.status_code == 202 and "Idempotent-Replayed" not in first.headers
        replay = upload(c, coll, files, headers=key)
        assert replay.status_code == 202 and replay.headers["Idempotent-Replayed"] == "true"
        assert replay.json()["id"] == first.json()["id"]
        refused(upload(c, coll, [("files", ("nile.txt", b"A different body."))], headers=key), 409, "idempotency")
        refused(upload(c, coll, [("files", ("other.txt", b"The Nile is the longest river in Africa."))],
                       headers=key), 409)  # fmt: skip
        assert server.wait_job("alpha:write", first.json()["id"])["state"] == "succeeded"
        late = upload(c, coll, files, headers=key)  # after the job finished: still the same job
        assert late.json()["id"] == first.json()["id"] and late.json()["state"] == "succeeded"
        assert len(jobs_of(c, coll)) == 1 and doc_ids(c, coll) == ["nile.txt"]
    with server.client("beta:write") as other:  # keys are per tenant: the same key elsewhere is a new upload
        make(other, coll)
        theirs = upload(other, coll, files, headers=key)
        assert theirs.status_code == 202 and theirs.json()["id"] != first.json()["id"]


def test_twenty_concurrent_uploads_are_all_kept_once(server: LiveServer) -> None:
    coll = "uploads_concurrent"
    results: list[httpx.Response] = []
    lock = threading.Lock()

    def send(i: int) -> None:
        # files 0-14 distinct; 15-19 resend 0-4 (same name and body): unchanged, never doubled
        n = i if i < 15 else i - 15
        files = [("files", (f"river-{n:02d}.txt", f"River number {n} runs {n * 7} km to the sea.".encode()))]
        with server.client("alpha:write") as c:
            r = upload(c, coll, files)
        with lock:
            results.append(r)

    with server.client("alpha:write") as c:
        make(c, coll)
        threads = [threading.Thread(target=send, args=(i,)) for i in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert len(results) == 20 and all(r.status_code == 202 for r in results), [r.text for r in results]
        jobs = [server.wait_job("alpha:write", r.json()["id"]) for r in results]
        assert all(j["state"] == "succeeded" for j in jobs), jobs
        assert sum(j["counts"]["added"] for j in jobs) == 15
        assert sum(j["counts"]["added"] + j["counts"]["unchanged"] + j["counts"]["updated"] for j in jobs) == 20
        ids = doc_ids(c, coll)
        assert sorted(ids) == [f"river-{n:02d}.txt" for n in range(15)]  # each once
        hits = c.post("/v1/retrieve", json={"collection": coll, "query": "River number 3", "k": 50}).json()["hits"]
        assert len({h["document_id"] for h in hits}) == len({h["chunk_id"] for h in hits})  # one chunk each


def test_over_size_files_and_requests_are_refused_before_anything_is_kept(tmp_path: Path, minilm: Embedder) -> None:
    with (
        live_server(tmp_path, minilm, max_file_bytes=1000, max_upload_bytes=4000) as srv,
        srv.client("alpha:write") as c,
    ):
        make(c, "small")
        body = refused(upload(c, "small", [("files", ("big.txt", b"a" * 1001))]), 413, "big.txt", "1000")
        assert body["detail"] is None
        refused(upload(c, "small", [("files", ("ok.txt", b"fine")), ("files", ("big.md", b"b" * 5000))]), 413)
        many = [("files", (f"f{i}.txt", b"c" * 900)) for i in range(6)]  # each under, together over the limit
        refused(upload(c, "small", many), 413, "limit")
        docs = {"documents": [{"id": f"d{i}", "text": "word " * 200} for i in range(5)]}
        refused(c.post("/v1/collections/small/documents", json=docs), 413)
        assert doc_ids(c, "small") == [] and jobs_of(c, "small") == []
        assert not any((srv.root / "spool").glob("*/*/*"))  # nothing spooled either
        job = succeeded(srv, upload(c, "small", [("files", ("exact.txt", b"d" * 1000))]))
        assert job["counts"]["added"] == 1 and doc_ids(c, "small") == ["exact.txt"]


def test_concurrent_replays_of_one_idempotency_key_make_one_job(server: LiveServer) -> None:
    coll = "uploads_key_race"
    files = [("files", ("volga.txt", b"The Volga is the longest river in Europe."))]
    ids: list[str] = []
    lock = threading.Lock()

    def send() -> None:
        with server.client("alpha:write") as c:
            r = upload(c, coll, files, headers={"Idempotency-Key": "volga-race"})
        assert r.status_code == 202, r.text
        with lock:
            ids.append(r.json()["id"])

    with server.client("alpha:write") as c:
        make(c, coll)
        threads = [threading.Thread(target=send) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert len(ids) == 8 and len(set(ids)) == 1
        assert server.wait_job("alpha:write", ids[0])["state"] == "succeeded"
        assert len(jobs_of(c, coll)) == 1 and doc_ids(c, coll) == ["volga.txt"]


def test_json_documents_with_the_same_id_twice_are_refused(server: LiveServer) -> None:
    coll = "uploads_json_dupes"
    docs = [{"id": "same", "text": f"version {i} of the same document"} for i in range(3)]
    with server.client("alpha:write") as c:
        make(c, coll)
        refused(c.post(f"/v1/collections/{coll}/documents", json={"documents": docs}), 400, "'same'", "twice")
        assert doc_ids(c, coll) == [] and jobs_of(c, coll) == []
        docs = [{"id": "one", "text": "first", "title": "One", "metadata": {"year": 2001}},
                {"id": "two", "text": "second"}]  # fmt: skip
        job = succeeded(server, c.post(f"/v1/collections/{coll}/documents", json={"documents": docs}))
        assert job["counts"]["added"] == 2 and sorted(doc_ids(c, coll)) == ["one", "two"]
        one = c.get(f"/v1/collections/{coll}/documents/one").json()
        assert one["title"] == "One" and one["metadata"]["year"] == 2001 and one["text"] == "first"


def test_a_chunked_upload_without_length_is_refused(server: LiveServer) -> None:
    def body() -> Iterator[bytes]:
        yield b'{"documents": [{"id": "chunked", "text": "sent in chunks"}]}'

    with server.client("alpha:write") as c:
        c.post("/v1/collections", json={"name": "uploads-chunked"})
        r = c.post(
            "/v1/collections/uploads-chunked/documents", content=body(), headers={"Content-Type": "application/json"}
        )
        assert r.status_code == 411, r.text
        assert "Content-Length" in r.json()["error"]
        assert c.get("/v1/collections/uploads-chunked").json()["documents"] == 0
