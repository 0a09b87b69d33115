"""Knowledge-graph benchmark: build on 2wiki-corpus, incremental add and delete, query latency.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_graph.py [--data ../shared/data] [--only build,...]

- build: 2wiki-corpus (6,119 paragraphs) ingested once into a benchmark store (embeddings from the
  shared cache); a full graph build with the offline extractor, per stage, with the entity, relation and
  community counts, the process's peak memory and the graph's bytes in the store.
- incremental: on that graph, add one new paragraph, then delete it; time each graph update (the
  document's own embedding excluded: it is ingest's work) and say whether Leiden re-ran.
- latency: hybrid, hipporag and graph-local on the 2wiki graph, interleaved, 200 queries (a sentence of
  a random paragraph each), query embedding included; medians of p50/p95 over 3 rounds.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from bench_tree import bench_store, sample_queries

from waypost.evaluation.beir import load_corpus
from waypost.evaluation.metrics import percentile
from waypost.evaluation.runner import COLLECTION
from waypost.retrieval.registry import STRATEGIES
from waypost.types import Document

NEW_PARAGRAPH = Document(
    id="bench-graph-new",
    title="Orla Venturi",
    text=(
        "Orla Venturi (born 4 March 1961) is an Irish-Italian cellist and conductor. She studied at the "
        "Royal Irish Academy of Music in Dublin and later led the Turin Chamber Orchestra. Her recording of "
        "the Bach cello suites won the Premio Abbiati in 1994. She is married to the architect Tomas Kerrigan."
    ),
)


def build(data: Path) -> dict[str, Any]:
    engine = bench_store(load_corpus(data / "2wiki-corpus"))
    try:
        live = engine.collection(COLLECTION).graph()
        t0 = time.perf_counter()
        live.rebuild(show_progress=True)
        total = time.perf_counter() - t0
        status = live.status()
        out = {
            "documents": engine.collection(COLLECTION).info.documents,
            "seconds_total": round(total, 2),
            "seconds_per_stage": status.build_seconds,
            "entities": status.entities,
            "named_entities": status.named_entities,
            "relations": status.relations,
            "mentions": status.mentions,
            "synonyms": status.synonyms,
            "communities": status.communities,
            "graph_mb": status.size_mb,
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        }
        print(json.dumps(out), flush=True)
        return out
    finally:
        engine.close()


def incremental(data: Path) -> dict[str, Any]:
    engine = bench_store(load_corpus(data / "2wiki-corpus"))
    try:
        coll = engine.collection(COLLECTION)
        live = coll.graph()
        live.get(show_progress=True)
        out: dict[str, Any] = {}
        for step in ("add", "delete"):
            if step == "add":
                coll.add([NEW_PARAGRAPH])
            else:
                coll.delete([NEW_PARAGRAPH.id])
            t0 = time.perf_counter()
            live.get()
            out[step] = {"seconds": round(time.perf_counter() - t0, 3), **live.last_update}
        print(json.dumps(out), flush=True)
        return out
    finally:
        engine.close()


def latency(data: Path, rounds: int = 3, queries: int = 200) -> dict[str, Any]:
    dataset = load_corpus(data / "2wiki-corpus")
    engine = bench_store(dataset)
    strategies = [s for s in ("hybrid", "hipporag", "graph-local") if s in STRATEGIES]
    try:
        coll = engine.collection(COLLECTION)
        coll.graph().get(show_progress=True)
        texts = sample_queries(dataset, queries)
        for strategy in strategies:
            coll.retrieve(texts[0], strategy)
        per: dict[str, list[dict[str, float]]] = {s: [] for s in strategies}
        for _ in range(rounds):
            times: dict[str, list[float]] = {s: [] for s in strategies}
            for text in texts:
                for strategy in strategies:
                    t0 = time.perf_counter()
                    coll.retrieve(text, strategy, k=10)
                    times[strategy].append((time.perf_counter() - t0) * 1000)
            for strategy, values in times.items():
                per[strategy].append({"p50": percentile(values, 0.5), "p95": percentile(values, 0.95)})
        out = {s: {k: round(statistics.median(r[k] for r in rs), 2) for k in ("p50", "p95")} for s, rs in per.items()}
        print(json.dumps(out), flush=True)
        return out
    finally:
        engine.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--only", default="build,incremental,latency")
    args = parser.parse_args()
    steps = {"build": build, "incremental": incremental, "latency": latency}
    results = {name: steps[name](args.data) for name in args.only.split(",")}
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
