"""Speed benchmark: medians and percentiles, each beside a baseline measured in the same run.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_latency.py [--data ../shared/data]

1. Hybrid query latency on scifact (query embedding included) vs the bare model's query encoding.
2. Metadata pre-filter time on netflix (filters extracted from the 80 queries) vs a Python scan.
3. Ingest throughput (chunk, embed, store) vs the bare model encoding the same chunk texts.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from waypost.engine import Engine, EngineConfig
from waypost.evaluation.beir import load_beir
from waypost.evaluation.metrics import percentile
from waypost.evaluation.runner import COLLECTION, default_cache_dir, eval_store_dir, prepare
from waypost.ingest.chunker import Chunker
from waypost.types import index_text


def ms(values: list[float]) -> dict[str, float]:
    return {"p50_ms": round(percentile(values, 0.5), 3), "p95_ms": round(percentile(values, 0.95), 3)}


def open_eval(data: Path, name: str) -> tuple[Engine, Any, Any]:
    dataset = load_beir(data / name)
    config = EngineConfig(embed_cache=default_cache_dir() / "embedding-cache.sqlite")
    engine = Engine(eval_store_dir(dataset, config, default_cache_dir()), config)
    prepare(dataset, engine, show_progress=True)
    return engine, engine.collection(COLLECTION), dataset


def bench_query(data: Path) -> dict[str, Any]:
    engine, coll, dataset = open_eval(data, "scifact")
    queries = [q.text for q in dataset.queries]
    coll.retrieve(queries[0], "hybrid")  # build indexes, load model
    bare = coll.embedder.inner if hasattr(coll.embedder, "inner") else coll.embedder
    embed_ms, hybrid_ms, bm25_ms = [], [], []
    for q in queries:  # interleaved, so machine noise hits all three alike
        t0 = time.perf_counter()
        bare.embed_query(q)
        t1 = time.perf_counter()
        coll.retrieve(q, "hybrid", k=10)
        t2 = time.perf_counter()
        coll.retrieve(q, "bm25", k=10)
        t3 = time.perf_counter()
        embed_ms.append((t1 - t0) * 1000)
        hybrid_ms.append((t2 - t1) * 1000)
        bm25_ms.append((t3 - t2) * 1000)
    engine.close()
    return {
        "queries": len(queries),
        "hybrid": ms(hybrid_ms),
        "bm25": ms(bm25_ms),
        "bare_query_embedding": ms(embed_ms),
        "hybrid_over_embedding_p50": round(statistics.median(hybrid_ms) / statistics.median(embed_ms), 2),
    }


def bench_prefilter(data: Path) -> dict[str, Any]:
    engine, coll, dataset = open_eval(data, "netflix")
    indexes = engine.indexes.get(COLLECTION)
    extractor = coll.extractor()
    filters = [f for f in (extractor.extract(q.text).filter for q in dataset.queries) if f is not None]
    metadata = [d.metadata for d in coll.documents()]
    from waypost.filters.model import conditions

    def scan(flt: Any) -> int:  # baseline: evaluate the same AND of conditions row by row
        conds = conditions(flt)
        hits = 0
        for meta in metadata:
            ok = True
            for c in conds:
                v = meta.get(c.field)
                vals = v if isinstance(v, list) else [v]
                if c.op.value == "eq":
                    ok = any(str(x).casefold() == str(c.value).casefold() for x in vals)
                else:
                    ok = any(
                        isinstance(x, (int, float))
                        and {"gt": x > c.value, "gte": x >= c.value, "lt": x < c.value, "lte": x <= c.value}.get(
                            c.op.value, False
                        )
                        for x in vals
                    )
                if not ok:
                    break
            hits += ok
        return hits

    index_ms, scan_ms = [], []
    for flt in filters:
        t0 = time.perf_counter()
        mask = indexes.metadata.mask(flt)
        t1 = time.perf_counter()
        n = scan(flt)
        t2 = time.perf_counter()
        assert int(mask.sum()) == n, (str(flt), int(mask.sum()), n)
        index_ms.append((t1 - t0) * 1000)
        scan_ms.append((t2 - t1) * 1000)
    engine.close()
    return {
        "filters": len(filters),
        "items": len(indexes),
        "prefilter_index": ms(index_ms),
        "python_scan_baseline": ms(scan_ms),
        "speedup_p50": round(statistics.median(scan_ms) / statistics.median(index_ms), 1),
    }


def bench_ingest(data: Path, n_docs: int) -> dict[str, Any]:
    dataset = load_beir(data / "scifact")
    docs = [d for _, d in zip(range(n_docs), dataset.corpus(), strict=False)]
    chunker = Chunker(200)
    texts = [index_text(d.title, c.section, c.text) for d in docs for c in chunker.chunk(d.id, d.text)]
    from waypost.embeddings.sentence_transformer import SentenceTransformerEmbedder

    model = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    model.embed_documents(texts[:32])  # warm up
    bare_s, ingest_s = [], []
    for _ in range(3):
        t0 = time.perf_counter()
        model.embed_documents(texts)
        bare_s.append(time.perf_counter() - t0)
        with tempfile.TemporaryDirectory() as tmp:  # fresh store and fresh embedding cache: nothing is reused
            engine = Engine(Path(tmp) / "store", EngineConfig(embed_cache=Path(tmp) / "cache.sqlite"))
            engine.register_embedder(model)
            t1 = time.perf_counter()
            engine.collection("bench", create=True).add(docs)
            ingest_s.append(time.perf_counter() - t1)
            engine.close()
    bare, full = statistics.median(bare_s), statistics.median(ingest_s)
    return {
        "documents": len(docs),
        "chunks": len(texts),
        "bare_model_chunks_per_s": round(len(texts) / bare, 1),
        "ingest_chunks_per_s": round(len(texts) / full, 1),
        "ingest_over_bare": round(bare / full, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[1].parent / "shared" / "data")
    parser.add_argument("--ingest-docs", type=int, default=300)
    parser.add_argument("--only", choices=["query", "prefilter", "ingest"], default=None)
    args = parser.parse_args()
    results: dict[str, Any] = {}
    if args.only in (None, "query"):
        results["query_latency_scifact"] = bench_query(args.data)
    if args.only in (None, "prefilter"):
        results["prefilter_netflix"] = bench_prefilter(args.data)
    if args.only in (None, "ingest"):
        results["ingest_throughput"] = bench_ingest(args.data, args.ingest_docs)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
