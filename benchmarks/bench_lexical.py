"""Which lexical engine: bm25s (scores precomputed with collection statistics baked in) against
waypost's segmented postings (raw term frequencies, statistics over live rows at query time).

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_lexical.py [--data ../shared/data]

On the scifact eval collection (``waypost eval ../shared/data/scifact`` first), in one run:
- query time, p50/p95 over the test queries, chunk-level scoring only (the same work for both);
- agreement: the share of each query's top 10 that both return, and the largest score difference;
- what one added document costs: bm25s must re-index everything (its scores depend on global
  statistics), the segmented index builds a one-document segment.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from waypost.engine import Engine, EngineConfig
from waypost.evaluation.beir import load_beir
from waypost.evaluation.metrics import percentile
from waypost.evaluation.runner import COLLECTION, default_cache_dir, eval_store_dir, prepare
from waypost.index.lexical import FieldStats, Vocabulary, bm25_scores
from waypost.index.segment import Segment
from waypost.text.analyzers import analyzers

K1, B = 0.9, 0.4


def main() -> None:
    import bm25s
    import Stemmer

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[1].parent / "shared" / "data")
    args = parser.parse_args()
    dataset = load_beir(args.data / "scifact")
    config = EngineConfig(embed_cache=default_cache_dir() / "embedding-cache.sqlite")
    engine = Engine(eval_store_dir(dataset, config, default_cache_dir()), config)
    prepare(dataset, engine, show_progress=True)
    snap = engine.store.snapshot(COLLECTION)
    engine.close()
    texts = snap.index_texts
    queries = [q.text for q in dataset.queries]

    stemmer = Stemmer.Stemmer("english")
    t0 = time.perf_counter()
    reference = bm25s.BM25(k1=K1, b=B)
    reference.index(bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)
    bm25s_build = time.perf_counter() - t0

    t0 = time.perf_counter()
    english, vocab = analyzers()("en"), Vocabulary()
    segment = Segment.build("bench", snap, analyzers(), vocab)
    stats = FieldStats.over([(segment.chunks, None)], len(vocab))
    segmented_build = time.perf_counter() - t0

    def ours(query: str) -> np.ndarray:
        ids = vocab.lookup(english.terms(query))
        return bm25_scores([(segment.chunks, 0)], len(segment), ids, stats, K1, B)

    def theirs(query: str) -> np.ndarray:
        tokens = bm25s.tokenize([query], stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False)[0]
        tokens = [t for t in tokens if t in reference.vocab_dict]
        return np.asarray(reference.get_scores(tokens) if tokens else np.zeros(len(texts)), dtype=np.float64)

    ours_ms, theirs_ms, overlap, worst = [], [], [], 0.0
    for q in queries:  # interleaved, so noise hits both alike
        t0 = time.perf_counter()
        a = ours(q)
        t1 = time.perf_counter()
        b = theirs(q)
        t2 = time.perf_counter()
        ours_ms.append((t1 - t0) * 1000)
        theirs_ms.append((t2 - t1) * 1000)
        top_a, top_b = set(np.argsort(-a)[:10].tolist()), set(np.argsort(-b)[:10].tolist())
        overlap.append(len(top_a & top_b) / 10)
        worst = max(worst, float(np.max(np.abs(a - b))))

    one = snap.__class__(
        generation=snap.generation,
        version=snap.version,
        row_ids=snap.row_ids[-1:] + 1,
        document_ids=["bench-new"],
        index_texts=texts[-1:],
        embeddings=snap.embeddings[-1:],
        metadata=[{}],
        document_texts=texts[-1:],
        chunk_texts=snap.chunk_texts[-1:],
        titles={"bench-new": ""},
    )
    t0 = time.perf_counter()
    extra = Segment.build("one", one, analyzers(), vocab)
    FieldStats.over([(segment.chunks, None), (extra.chunks, None)], len(vocab))
    segmented_add = time.perf_counter() - t0
    t0 = time.perf_counter()
    again = bm25s.BM25(k1=K1, b=B)
    again.index(
        bm25s.tokenize([*texts, texts[-1]], stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False
    )
    bm25s_add = time.perf_counter() - t0

    out: dict[str, Any] = {
        "chunks": len(texts),
        "queries": len(queries),
        "build_s": {"bm25s": round(bm25s_build, 2), "segmented": round(segmented_build, 2)},
        "query_ms": {
            "bm25s": {"p50": round(percentile(theirs_ms, 0.5), 3), "p95": round(percentile(theirs_ms, 0.95), 3)},
            "segmented": {"p50": round(percentile(ours_ms, 0.5), 3), "p95": round(percentile(ours_ms, 0.95), 3)},
        },
        "top10_overlap_mean": round(float(np.mean(overlap)), 4),
        "max_abs_score_difference": worst,
        "one_added_document_s": {"bm25s_reindex": round(bm25s_add, 3), "segmented": round(segmented_add, 4)},
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
