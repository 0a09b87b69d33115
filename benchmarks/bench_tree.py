"""RAPTOR tree benchmark: build time per phase, storage, incremental updates, query latency, and
delete/re-add cycles.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_tree.py [--data ../shared/data] [--only build,...]

- build: ingest 2wiki-corpus (6,119 paragraphs) and qmsum (95 meetings) into stores under
  ~/.cache/waypost/bench (embeddings from the shared embedding cache), then time a full tree build with
  the offline summarizer, per phase, and compare the tree's bytes with the store's.
- incremental: on the 2wiki tree, add one long document (a qmsum meeting) and one paragraph, and delete
  them again; time the tree update that follows each (embedding excluded) and count the nodes touched.
- latency: hybrid and raptor-collapsed on the 2wiki tree, interleaved, 200 queries (a sentence of a
  random paragraph each); medians of p50/p95 over 3 rounds.
- cycles: on a copy of the hotpotqa-100 eval store, raptor-collapsed Recall@5 before and after 100
  random delete/re-add cycles, each followed by a tree update.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from waypost.engine import Engine, EngineConfig
from waypost.evaluation.beir import BeirDataset, load_beir, load_corpus
from waypost.evaluation.metrics import percentile, recall_at
from waypost.evaluation.runner import COLLECTION, default_cache_dir, eval_store_dir, prepare, ranked_documents
from waypost.types import Document


def bench_store(dataset: BeirDataset) -> Engine:
    """The dataset ingested once into a benchmark store (embeddings from the shared cache)."""
    path = default_cache_dir() / "bench" / f"tree-{dataset.name}-{dataset.fingerprint()}"
    engine = Engine(path, EngineConfig(embed_cache=default_cache_dir() / "embedding-cache.sqlite"))
    prepare(dataset, engine, show_progress=True)
    return engine


def sample_queries(dataset: BeirDataset, count: int, seed: int = 7) -> list[str]:
    """``count`` queries for a corpus without any: a sentence of a random paragraph each."""
    rng = random.Random(seed)
    texts = []
    for doc in rng.sample(list(dataset.corpus()), count):
        sentences = [s for s in doc.text.split(". ") if len(s.split()) > 4] or [doc.text]
        texts.append(rng.choice(sentences)[:200])
    return texts


def store_bytes(engine: Engine) -> int:
    conn = engine.store._conn
    rows = conn.execute(
        "SELECT COALESCE(SUM(LENGTH(text)+LENGTH(embedding)+LENGTH(section)+48),0) FROM chunks"
    ).fetchone()
    docs = conn.execute(
        "SELECT COALESCE(SUM(LENGTH(text)+LENGTH(title)+LENGTH(metadata)+LENGTH(id)+64),0) FROM documents"
    ).fetchone()
    return int(rows[0]) + int(docs[0])


def build(data: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in ("2wiki-corpus", "qmsum"):
        dataset = load_corpus(data / name)
        engine = bench_store(dataset)
        try:
            live = engine.collection(COLLECTION).tree()
            t0 = time.perf_counter()
            tree = live.rebuild(progress=lambda m: print(f"  {m}", flush=True))
            total = time.perf_counter() - t0
            docs = engine.collection(COLLECTION).info.documents
            tree_bytes = engine.trees.trees.size_bytes(COLLECTION)
            base = store_bytes(engine)
            out[name] = {
                "documents": docs,
                "chunks": len(tree.leaf_tokens),
                "nodes": len(tree.nodes),
                "layers": tree.layers(),
                "seconds_total": round(total, 2),
                "seconds_per_phase": tree.stats.seconds,
                "seconds_per_1000_documents": round(total / docs * 1000, 2),
                "tree_mb": round(tree_bytes / 2**20, 2),
                "store_mb": round(base / 2**20, 2),
                "tree_share_of_store": round(tree_bytes / base, 3),
                "tree_mb_per_10000_documents": round(tree_bytes / 2**20 / docs * 10000, 2),
            }
            print(name, json.dumps(out[name]), flush=True)
        finally:
            engine.close()
    return out


def _meeting(data: Path) -> Document:
    row = json.loads((data / "qmsum" / "corpus.jsonl").open().readline())
    return Document("bench-meeting", row["text"], row.get("title", ""), row.get("metadata") or {})


def incremental(data: Path) -> dict[str, Any]:
    engine = bench_store(load_corpus(data / "2wiki-corpus"))
    try:
        coll = engine.collection(COLLECTION)
        live = coll.tree()
        live.get()
        out: dict[str, Any] = {}
        paragraph = Document("bench-paragraph", "Ada Lovelace wrote the first published algorithm for "
                             "Charles Babbage's Analytical Engine in 1843.", "Ada Lovelace")  # fmt: skip
        for label, doc in (("long_document", _meeting(data)), ("paragraph", paragraph)):
            coll.add([doc])  # embedding happens here, outside the measured update
            t0 = time.perf_counter()
            live.get()
            out[f"add_{label}"] = {"seconds": round(time.perf_counter() - t0, 3), **live.last_update}
            coll.delete([doc.id])
            t0 = time.perf_counter()
            live.get()
            out[f"delete_{label}"] = {"seconds": round(time.perf_counter() - t0, 3), **live.last_update}
            print(label, out[f"add_{label}"], out[f"delete_{label}"], flush=True)
        return out
    finally:
        engine.close()


def latency(data: Path, rounds: int = 3, queries: int = 200) -> dict[str, Any]:
    dataset = load_corpus(data / "2wiki-corpus")
    engine = bench_store(dataset)
    try:
        coll = engine.collection(COLLECTION)
        texts = sample_queries(dataset, queries)
        for strategy in ("hybrid", "raptor-collapsed"):
            coll.retrieve(texts[0], strategy)
        per: dict[str, list[dict[str, float]]] = {"hybrid": [], "raptor-collapsed": []}
        for _ in range(rounds):
            times: dict[str, list[float]] = {"hybrid": [], "raptor-collapsed": []}
            for text in texts:
                for strategy in times:
                    t0 = time.perf_counter()
                    coll.retrieve(text, strategy, k=10)
                    times[strategy].append((time.perf_counter() - t0) * 1000)
            for strategy, values in times.items():
                per[strategy].append({"p50": percentile(values, 0.5), "p95": percentile(values, 0.95)})
        out = {s: {k: round(statistics.median(r[k] for r in rs), 2) for k in ("p50", "p95")} for s, rs in per.items()}
        out["added_p95_ms"] = round(out["raptor-collapsed"]["p95"] - out["hybrid"]["p95"], 2)
        print(json.dumps(out), flush=True)
        return out
    finally:
        engine.close()


def cycles(data: Path, count: int = 100) -> dict[str, Any]:
    dataset = load_beir(data / "hotpotqa-100")
    config = EngineConfig(embed_cache=default_cache_dir() / "embedding-cache.sqlite")
    source = eval_store_dir(dataset, config, default_cache_dir())
    if not source.exists():
        Engine(source, config).close()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "store"
        if source.exists():
            shutil.copytree(source, path)
        engine = Engine(path, config)
        try:
            coll, _ = prepare(dataset, engine, show_progress=True)

            def recall5() -> float:
                values = []
                for q in dataset.queries:
                    ranked = ranked_documents(coll, q.text, "raptor-collapsed", 10)
                    values.append(recall_at(ranked, dataset.qrels.get(q.id, {}), 5))
                return round(sum(values) / len(values), 4)

            coll.tree().rebuild()
            before = recall5()
            docs = list(dataset.corpus())
            rng = random.Random(11)
            t0 = time.perf_counter()
            for _ in range(count):
                doc = rng.choice(docs)
                coll.delete([doc.id])
                coll.tree().get()
                coll.add([doc])
                coll.tree().get()
            seconds = time.perf_counter() - t0
            after = recall5()
            status = coll.tree().status()
            out = {
                "recall@5_before": before,
                "recall@5_after": after,
                "cycles": count,
                "seconds": round(seconds, 1),
                "drift": status.drift,
                "problems": len(status.problems),
            }
            print(json.dumps(out), flush=True)
            return out
        finally:
            engine.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    parser.add_argument("--only", default="build,incremental,latency,cycles")
    args = parser.parse_args()
    results: dict[str, Any] = {}
    for part in args.only.split(","):
        results[part] = {"build": build, "incremental": incremental, "latency": latency, "cycles": cycles}[part](
            args.data
        )
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
