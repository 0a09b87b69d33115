"""Language analysis cost: ingest throughput beside the bare embedder, and query-side analysis time.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_languages.py [--data ../shared/data]

1. Ingest (language detection, chunking, embedding, writing) of scifact's first 300 documents (English)
   and of the 240 xquad-th and xquad-zh paragraphs, each into a fresh store with a fresh embedding
   cache, beside the bare model encoding the same chunk texts in the same run (median of 3); then the
   index build the first query does (every chunk through its language's analyzer), also beside it.
2. Query-side analysis (language identification among the collection's languages, then the analyzer)
   per query of xquad-{en,de,th,zh}, p50/p95, beside the whole hybrid query for scale.
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
from waypost.ingest.chunker import Chunker
from waypost.text.analyzers import analyzers
from waypost.text.language import detector
from waypost.types import index_text


def bench_ingest(data: Path, name: str, n_docs: int, model: Any) -> dict[str, Any]:
    dataset = load_beir(data / name)
    docs = [d for _, d in zip(range(n_docs), dataset.corpus(), strict=False)]
    chunker = Chunker(200)
    texts = [index_text(d.title, c.section, c.text) for d in docs for c in chunker.chunk(d.id, d.text)]
    model.embed_documents(texts[:16])
    bare_s, ingest_s, index_s = [], [], []
    for _ in range(3):
        t0 = time.perf_counter()
        model.embed_documents(texts)
        bare_s.append(time.perf_counter() - t0)
        with tempfile.TemporaryDirectory() as tmp:
            engine = Engine(Path(tmp) / "store", EngineConfig(embed_cache=Path(tmp) / "cache.sqlite"))
            engine.register_embedder(model)
            t1 = time.perf_counter()
            engine.collection("bench", create=True).add(docs)
            t2 = time.perf_counter()
            engine.indexes.get("bench")  # what the first query does: analyze every chunk into segments
            t3 = time.perf_counter()
            ingest_s.append(t2 - t1)
            index_s.append(t3 - t2)
            engine.close()
    bare, full, index = statistics.median(bare_s), statistics.median(ingest_s), statistics.median(index_s)
    return {
        "index_build_s": round(index, 3),
        "ingest_and_index_over_bare": round(bare / (full + index), 3),
        "documents": len(docs),
        "chunks": len(texts),
        "bare_model_chunks_per_s": round(len(texts) / bare, 1),
        "ingest_chunks_per_s": round(len(texts) / full, 1),
        "ingest_over_bare": round(bare / full, 3),
    }


def bench_query_analysis(data: Path, lang: str) -> dict[str, Any]:
    queries = [q.text for q in load_beir(data / f"xquad-{lang}").queries]
    among = {lang: 0.97, "en": 0.03} if lang != "en" else {"en": 0.97, "de": 0.03}  # a mixed collection
    analyzer = analyzers()
    detect = detector()
    for q in queries[:20]:  # load models and segmenters
        analyzer(detect.detect(q, among=among, prior=among)).terms(q)
    single, mixed = [], []
    for q in queries:
        t0 = time.perf_counter()
        analyzer(lang).terms(q)  # one-language collection: no identification needed
        t1 = time.perf_counter()
        analyzer(detect.detect(q, among=among, prior=among)).terms(q)
        t2 = time.perf_counter()
        single.append((t1 - t0) * 1000)
        mixed.append((t2 - t1) * 1000)
    return {
        "queries": len(queries),
        "one_language_collection": {
            "p50_ms": round(percentile(single, 0.5), 3),
            "p95_ms": round(percentile(single, 0.95), 3),
        },
        "mixed_collection_with_identification": {
            "p50_ms": round(percentile(mixed, 0.5), 3),
            "p95_ms": round(percentile(mixed, 0.95), 3),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[1].parent / "shared" / "data")
    parser.add_argument("--only", choices=["ingest", "query"], default=None)
    args = parser.parse_args()
    from waypost.embeddings.sentence_transformer import SentenceTransformerEmbedder

    out: dict[str, Any] = {}
    if args.only in (None, "query"):
        out["query_analysis"] = {lang: bench_query_analysis(args.data, lang) for lang in ("en", "de", "th", "zh")}
    if args.only in (None, "ingest"):
        model = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
        out["ingest"] = {
            "en (scifact)": bench_ingest(args.data, "scifact", 300, model),
            "th (xquad-th)": bench_ingest(args.data, "xquad-th", 240, model),
            "zh (xquad-zh)": bench_ingest(args.data, "xquad-zh", 240, model),
        }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
