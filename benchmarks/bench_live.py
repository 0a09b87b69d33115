"""Live-index benchmark on a collection of 100,000+ chunks: writes, start-up, and queries during ingest.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_live.py [--data ../shared/data] [--chunks 100000]

The collection replicates scifact and netflix under new document ids until it holds ``--chunks``
chunks. Their embeddings come from the eval embedding cache (``waypost eval`` on both sets fills it),
so building it does not spend 40 minutes embedding. It is kept in ~/.cache/waypost/bench between runs.

1. From-scratch index build of the whole collection (what every write used to cost the next query).
2. Start-up: a fresh process opens the store and answers one hybrid query; the model load is reported
   on its own. Medians of several runs.
3. First query after a write: add one document, then one hybrid query, 20 times; the same for deletes.
   Warm hybrid queries are interleaved with them, so machine noise hits both alike.
4. Queries during ingest: 4 threads run hybrid queries while a fifth ingests 1,000 scifact documents
   (embedded for real: a fresh embedding cache) into the same collection in the same process; query
   p95 is compared with the same 4 threads' p95 when idle.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from waypost.engine import Engine, EngineConfig
from waypost.evaluation.beir import load_beir
from waypost.evaluation.metrics import percentile
from waypost.evaluation.runner import default_cache_dir
from waypost.index.set import IndexSet
from waypost.types import Document

COLLECTION = "scale"


def ms(values: list[float]) -> dict[str, float]:
    return {"p50_ms": round(percentile(values, 0.5), 2), "p95_ms": round(percentile(values, 0.95), 2), "n": len(values)}


def scale_store(data: Path, target: int) -> Path:
    """The replicated collection, built once and kept (a marker file says it is complete)."""
    path = default_cache_dir() / "bench" / f"live-{target}"
    marker = path / "complete.json"
    if marker.exists():
        return path
    config = EngineConfig(embed_cache=default_cache_dir() / "embedding-cache.sqlite")
    engine = Engine(path, config)
    coll = engine.collection(COLLECTION, create=True)
    sources = [load_beir(data / "scifact"), load_beir(data / "netflix")]
    copy = 0
    while coll.info.chunks < target:
        for ds in sources:
            docs = (Document(f"c{copy}:{d.id}", d.text, d.title, d.metadata, d.source) for d in ds.corpus())
            coll.add(docs, show_progress=True, total=ds.corpus_size())
        copy += 1
    coll.retrieve("warm up", "hybrid")  # builds the indexes; closing saves them
    chunks = coll.info.chunks
    engine.close()
    marker.write_text(json.dumps({"chunks": chunks, "copies": copy}))
    return path


STARTUP = """
import json, os, sys, time
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
t0 = time.perf_counter()
from waypost.embeddings.sentence_transformer import SentenceTransformerEmbedder
from waypost.engine import Engine, EngineConfig
model = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
model.embed_query("warm up")
t1 = time.perf_counter()
engine = Engine(sys.argv[1], EngineConfig())
engine.register_embedder(model)
result = engine.collection(sys.argv[2]).retrieve(sys.argv[3], "hybrid", k=10)
t2 = time.perf_counter()
print(json.dumps({"model_load_s": t1 - t0, "open_to_first_answer_s": t2 - t1, "hits": len(result.hits),
                  "loaded_from": engine.indexes.live(sys.argv[2]).loaded_from}))
os._exit(0)
"""


def bench_startup(path: Path, query: str, runs: int) -> dict[str, Any]:
    results = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", STARTUP, str(path), COLLECTION, query], capture_output=True, text=True, check=True
        )
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {
        "runs": runs,
        "model_load_s_median": round(statistics.median(r["model_load_s"] for r in results), 3),
        "open_to_first_answer_s_median": round(statistics.median(r["open_to_first_answer_s"] for r in results), 3),
        "open_to_first_answer_s_max": round(max(r["open_to_first_answer_s"] for r in results), 3),
        "loaded_from": results[-1]["loaded_from"],
    }


def bench_rebuild(engine: Engine) -> dict[str, Any]:
    t0 = time.perf_counter()
    snap = engine.store.snapshot(COLLECTION)
    t1 = time.perf_counter()
    IndexSet.build(COLLECTION, snap)
    t2 = time.perf_counter()
    return {"read_snapshot_s": round(t1 - t0, 2), "build_s": round(t2 - t1, 2), "chunks": len(snap.row_ids)}


def bench_writes(engine: Engine, queries: list[str], extra: list[Document], rounds: int) -> dict[str, Any]:
    coll = engine.collection(COLLECTION)
    for q in queries[:20]:
        coll.retrieve(q, "hybrid")
    warm: list[float] = []
    after_add: list[float] = []
    after_delete: list[float] = []
    added: list[str] = []
    qi = 20

    def timed(q: str) -> float:
        t0 = time.perf_counter()
        coll.retrieve(q, "hybrid", k=10)
        return (time.perf_counter() - t0) * 1000

    for r in range(rounds):
        for _ in range(5):
            warm.append(timed(queries[qi % len(queries)]))
            qi += 1
        doc = extra[r]
        coll.add([Document(f"live-add-{r}:{doc.id}", doc.text, doc.title, doc.metadata)])
        added.append(f"live-add-{r}:{doc.id}")
        after_add.append(timed(queries[qi % len(queries)]))
        qi += 1
    for r in range(rounds):
        for _ in range(5):
            warm.append(timed(queries[qi % len(queries)]))
            qi += 1
        coll.delete([added[r]])
        after_delete.append(timed(queries[qi % len(queries)]))
        qi += 1
    warm_stats, add_stats, del_stats = ms(warm), ms(after_add), ms(after_delete)
    live = engine.indexes.live(COLLECTION)
    live.wait()
    return {
        "warm_hybrid": warm_stats,
        "first_query_after_add": add_stats,
        "first_query_after_delete": del_stats,
        "after_add_p95_over_warm_p95": round(add_stats["p95_ms"] / warm_stats["p95_ms"], 2),
        "after_delete_p95_over_warm_p95": round(del_stats["p95_ms"] / warm_stats["p95_ms"], 2),
        "segments_after": [len(s) for s in live.get().segments],
        "background_errors": live.errors,
    }


def bench_ingest_while_querying(path: Path, queries: list[str], docs: list[Document], idle_s: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        engine = Engine(path, EngineConfig(embed_cache=Path(tmp) / "fresh-cache.sqlite"))
        coll = engine.collection(COLLECTION)
        coll.retrieve("warm up", "hybrid")
        failures: list[str] = []
        lock = threading.Lock()
        phase = {"name": "idle"}
        latencies: dict[str, list[float]] = {"idle": [], "ingest": []}
        stop = threading.Event()

        def query_loop(offset: int) -> None:
            i = offset
            while not stop.is_set():
                q = queries[i % len(queries)]
                i += 4
                name = phase["name"]
                t0 = time.perf_counter()
                try:
                    coll.retrieve(q, "hybrid", k=10)
                except Exception as exc:
                    with lock:
                        failures.append(repr(exc))
                    continue
                with lock:
                    latencies[name].append((time.perf_counter() - t0) * 1000)

        threads = [threading.Thread(target=query_loop, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        time.sleep(idle_s)
        phase["name"] = "ingest"
        t0 = time.perf_counter()
        report = coll.add(docs)
        ingest_s = time.perf_counter() - t0
        stop.set()
        for t in threads:
            t.join()
        coll.delete([d.id for d in docs])
        coll.retrieve("settle", "hybrid")
        engine.close()
    idle, during = ms(latencies["idle"]), ms(latencies["ingest"])
    return {
        "ingested_documents": report.added,
        "ingest_s": round(ingest_s, 1),
        "failed_queries": len(failures),
        "idle": idle,
        "during_ingest": during,
        "p95_during_over_idle": round(during["p95_ms"] / idle["p95_ms"], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[1].parent / "shared" / "data")
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--startup-runs", type=int, default=5)
    parser.add_argument("--only", choices=["rebuild", "startup", "writes", "ingest"], default=None)
    args = parser.parse_args()
    path = scale_store(args.data, args.chunks)
    scifact = load_beir(args.data / "scifact")
    queries = [q.text for q in scifact.queries]
    hotpot = load_beir(args.data / "hotpotqa-100")
    results: dict[str, Any] = {}
    engine = Engine(path, EngineConfig(embed_cache=default_cache_dir() / "embedding-cache.sqlite"))
    results["collection"] = {"chunks": engine.collection(COLLECTION).info.chunks}
    engine.indexes.get(COLLECTION)  # loads the saved indexes (or builds them once; closing saves them)
    if args.only in (None, "rebuild"):
        results["from_scratch_build"] = bench_rebuild(engine)
    if args.only in (None, "writes"):
        results["writes"] = bench_writes(engine, queries, list(hotpot.corpus())[: args.rounds], args.rounds)
    engine.close()
    if args.only in (None, "startup"):
        results["startup"] = bench_startup(path, queries[0], args.startup_runs)
    if args.only in (None, "ingest"):
        docs = [
            Document(f"during-ingest:{d.id}", d.text, d.title, d.metadata)
            for _, d in zip(range(1000), scifact.corpus(), strict=False)
        ]
        results["queries_during_ingest"] = bench_ingest_while_querying(path, queries, docs, idle_s=20.0)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
