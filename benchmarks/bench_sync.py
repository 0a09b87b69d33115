"""What ``PRAGMA synchronous=FULL`` would cost ingest against ``NORMAL`` (the store's setting; versions carry a
per-commit nonce instead, so a commit lost on power loss can never make a saved index state match).

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_sync.py [--data ../shared/data] [--docs 2000] [--model]
        [--dir DIR]   # put the stores on the disk to measure (fsync cost is the disk's)

1. Storage only: the scifact documents are chunked as ingest chunks them and written with precomputed vectors
   (random, 384 dimensions: what the store writes does not depend on the values), in ingest's batches of 256
   documents and, as the worst case, one document per commit. Each mode runs ``--repeats`` times on a fresh
   store; medians are reported.
2. With ``--model``: a full ``Collection.add`` with the real embedding model (a fresh embedding cache per run),
   once per mode.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import itertools
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from waypost.base import IngestItem
from waypost.engine import Engine, EngineConfig
from waypost.evaluation.beir import load_beir
from waypost.ingest.chunker import Chunker
from waypost.store.backend import open_backend
from waypost.types import Document

DIM = 384
MODES = ("NORMAL", "FULL")


def set_synchronous(documents: object, mode: str) -> None:
    """The writer connection commits every write: its setting is the one that counts (SQLite backend only)."""
    writer = getattr(documents, "_writer")  # noqa: B009 - the benchmark reaches into the SQLite backend
    writer.execute(f"PRAGMA synchronous={mode}")


def items_of(documents: list[Document], chunk_tokens: int = 200) -> list[IngestItem]:
    chunker = Chunker(max_tokens=chunk_tokens)
    rng = np.random.default_rng(0)
    out = []
    for doc in documents:
        chunks = chunker.chunk(doc.id, doc.text)
        vectors = rng.normal(size=(len(chunks), DIM)).astype(np.float32)
        out.append(IngestItem(doc, chunks, vectors / np.linalg.norm(vectors, axis=1, keepdims=True)))
    return out


def storage_seconds(items: list[IngestItem], mode: str, batch: int, where: Path | None) -> float:
    with tempfile.TemporaryDirectory(dir=where) as tmp, open_backend(tmp) as backend:
        store = backend.documents
        store.create_collection("c", "bench", DIM)
        set_synchronous(store, mode)
        t0 = time.perf_counter()
        for start in range(0, len(items), batch):
            store.write("c", items[start : start + batch])
        return time.perf_counter() - t0


def ingest_seconds(documents: list[Document], mode: str, where: Path | None) -> float:
    with tempfile.TemporaryDirectory(dir=where) as tmp:
        config = EngineConfig(embed_cache=Path(tmp) / "cache.sqlite", background_index_work=False)
        with Engine(Path(tmp) / "store", config) as engine:
            coll = engine.collection("c", create=True)
            set_synchronous(engine.store, mode)
            coll.embedder.embed_documents(["warm up the model"])
            t0 = time.perf_counter()
            coll.add(documents)
            return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", action="store_true", help="also time a full ingest with the real model")
    parser.add_argument("--dir", type=Path, default=None, help="where the stores go (default: the temp dir)")
    args = parser.parse_args()
    corpus = list(itertools.islice(load_beir(args.data / "scifact").corpus(), args.docs))
    items = items_of(corpus)
    report: dict[str, Any] = {"documents": len(items), "chunks": sum(len(i.chunks) for i in items), "storage": {}}
    for batch in (256, 1):
        row: dict[str, float] = {}
        for mode in MODES:
            runs = []
            for _ in range(args.repeats):
                runs.append(storage_seconds(items, mode, batch, args.dir))
            row[f"{mode}_s"] = round(statistics.median(runs), 3)
        row["full_over_normal"] = round(row["FULL_s"] / row["NORMAL_s"], 2)
        row["commits"] = -(-len(items) // batch)
        report["storage"][f"batch_{batch}"] = row
    if args.model:
        timed = {f"{mode}_s": round(ingest_seconds(corpus, mode, args.dir), 2) for mode in MODES}
        timed["full_over_normal"] = round(timed["FULL_s"] / timed["NORMAL_s"], 3)
        report["ingest_with_model"] = timed
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
