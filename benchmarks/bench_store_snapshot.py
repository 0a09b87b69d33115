"""How long ``snapshot()`` takes to read a collection back, SQLite against PostgreSQL (a throwaway local cluster).

``--rows`` chunks of ``--dim`` random unit float32 vectors, ``--per-doc`` chunks per document, about 300
characters of text each, written once per backend; then the best of ``--repeat`` snapshots is reported (the
first read warms the page cache). The PostgreSQL store reads row ids and vectors with one binary ``COPY``
parsed by numpy, and the texts through a server-side cursor.

    PYTHONPATH=src python benchmarks/bench_store_snapshot.py --rows 100000 --dim 384 --json
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from waypost.base import DocumentStore, IngestItem
from waypost.store.pg_cluster import postgres_available, throwaway_cluster
from waypost.store.postgres import PostgresStore
from waypost.store.sqlite import SQLiteStore
from waypost.types import Chunk, Document

WORDS = "pump valve seal bearing motor shaft noise leak pressure flow gauge filter inlet outlet".split()


def items(rows: int, dim: int, per_doc: int, seed: int = 7) -> list[IngestItem]:
    rng = np.random.default_rng(seed)
    out = []
    for d in range(0, rows, per_doc):
        n = min(per_doc, rows - d)
        texts = [" ".join(rng.choice(WORDS, 45)) for _ in range(n)]
        body = "\n".join(texts)
        chunks, start = [], 0
        for i, text in enumerate(texts):
            chunks.append(Chunk(f"doc{d}", i, text, start, start + len(text), 60, ("Section",)))
            start += len(text) + 1
        vecs = rng.normal(size=(n, dim)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        out.append(IngestItem(Document(f"doc{d}", body, f"Title {d}", {"n": d}), chunks, vecs))
    return out


def measure(store: DocumentStore, batch: list[IngestItem], dim: int, repeat: int) -> dict[str, float]:
    store.create_collection("c", "bench", dim)
    started = time.perf_counter()
    for i in range(0, len(batch), 50):
        store.write("c", batch[i : i + 50])
    write_s = time.perf_counter() - started
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        snap = store.snapshot("c")
        best = min(best, time.perf_counter() - started)
    assert len(snap.row_ids) == sum(len(b.chunks) for b in batch)
    return {"write_s": round(write_s, 2), "snapshot_s": round(best, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--per-doc", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    batch = items(args.rows, args.dim, args.per_doc)
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        sqlite = SQLiteStore(Path(tmp) / "store.sqlite")
        results["sqlite"] = measure(sqlite, batch, args.dim, args.repeat)
        sqlite.close()
    if postgres_available():
        with throwaway_cluster(fsync=False) as cluster:
            pg = PostgresStore(cluster.create_database("bench"))
            results["postgres"] = measure(pg, batch, args.dim, args.repeat)
            pg.close()
    out = {"rows": args.rows, "dim": args.dim, **results}
    print(json.dumps(out) if args.json else "\n".join(f"{k}: {v}" for k, v in out.items()))


if __name__ == "__main__":
    main()
