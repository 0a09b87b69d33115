"""kill -9 during a real ingest leaves no half documents; readers keep working while a writer ingests."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from waypost.engine import Engine, EngineConfig
from waypost.ingest.chunker import Chunker

N_DOCS = 120
WRITER = textwrap.dedent(
    """
    import sys
    from waypost.engine import Engine, EngineConfig
    from waypost.ingest.chunker import Chunker
    from waypost.ingest.pipeline import Ingestor, documents_from_paths
    engine = Engine(sys.argv[1], EngineConfig(chunk_tokens=64))
    coll = engine.collection("c", create=True)
    failures = []
    ingestor = Ingestor(engine.store, coll.embedder, Chunker(64), batch_docs=8)
    ingestor.ingest("c", documents_from_paths([sys.argv[2]], failures))
    print("done", flush=True)
    """
)


def make_corpus(folder: Path) -> None:
    folder.mkdir()
    for i in range(N_DOCS):
        body = " ".join(f"Document {i} sentence {j} talks about subject {i * 7 + j} in some detail." for j in range(8))
        (folder / f"doc{i:03d}.md").write_text(f"# Doc {i}\n\n{body}\n")


def count_docs(db: Path) -> int:
    try:
        with sqlite3.connect(db, timeout=30) as conn:
            return int(conn.execute("SELECT count(*) FROM documents").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def start_writer(store: Path, corpus: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(store), str(corpus)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def assert_consistent(store: Path, corpus: Path) -> int:
    db = store / "store.sqlite"
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        rows = conn.execute(
            "SELECT d.id, d.text, count(c.row_id), sum(length(c.embedding)) FROM documents d "
            "LEFT JOIN chunks c ON c.document_id = d.id AND c.collection = d.collection GROUP BY d.id"
        ).fetchall()
        orphans = conn.execute(
            "SELECT count(*) FROM chunks c LEFT JOIN documents d ON d.id = c.document_id WHERE d.id IS NULL"
        ).fetchone()[0]
    assert orphans == 0
    chunker = Chunker(64)
    for doc_id, text, n_chunks, emb_bytes in rows:
        expected = len(chunker.chunk(doc_id, text))
        assert n_chunks == expected, f"{doc_id}: {n_chunks} of {expected} chunks"
        assert emb_bytes == expected * 384 * 4
        assert text == (corpus / doc_id).read_text()
    return len(rows)


@pytest.mark.slow
def test_kill_9_mid_ingest_then_resume(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    make_corpus(corpus)
    store = tmp_path / "store"
    proc = start_writer(store, corpus)
    deadline = time.time() + 120
    while count_docs(store / "store.sqlite") < 16 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert proc.poll() is None, f"writer finished before it could be killed: {proc.communicate()}"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = assert_consistent(store, corpus)
    assert 0 < partial < N_DOCS

    proc = start_writer(store, corpus)
    _out, errs = proc.communicate(timeout=300)
    assert proc.returncode == 0, errs
    assert assert_consistent(store, corpus) == N_DOCS


@pytest.mark.slow
def test_readers_keep_working_while_a_writer_ingests(tmp_path: Path, minilm) -> None:  # type: ignore[no-untyped-def]
    corpus = tmp_path / "corpus"
    make_corpus(corpus)
    store = tmp_path / "store"
    reader = Engine(store, EngineConfig(chunk_tokens=64))
    reader.register_embedder(minilm)
    reader.collection("c", create=True)
    proc = start_writer(store, corpus)
    seen: list[int] = []
    try:
        deadline = time.time() + 240
        while proc.poll() is None and time.time() < deadline:
            coll = reader.collection("c")
            docs = coll.info.documents  # counted first: retrieval then sees at least these documents
            t0 = time.perf_counter()
            result = coll.retrieve("subject 77 in some detail", "hybrid", k=3)
            assert time.perf_counter() - t0 < 10, "a reader was blocked by the writer"
            if docs:
                assert result.hits, "documents are visible but retrieval found nothing"
            seen.append(docs)
            time.sleep(0.2)
    finally:
        _out, errs = proc.communicate(timeout=300)
        reader.close()
    assert proc.returncode == 0, errs
    assert len(set(seen)) >= 3, f"reads did not interleave with the writer: {seen}"
