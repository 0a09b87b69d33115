"""Recall of the HNSW candidate path against exact dense scores, index only (no store): the replicated scifact
vectors of ``bench_scale.py`` (``scale_data.py``), real MiniLM query embeddings of scifact's queries.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_dense_recall.py --rows 1000000 --noise 0.04

For each ``--ef`` the graph is searched for 10 and for 100 candidates (hybrid's depth); recall@10 is the
share of the exact top 10 found among the first 10, source recall@10 the share of the seed chunks the exact
top 10 copy that the first 10 copy too (another copy of the same chunk counts as found). The graph is built
once with the engine's settings (``waypost.index.dense``: M, ef_construction) and kept in ~/.cache/waypost/bench
for the next run; the build time (first run only) and per-query times are reported beside.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import scale_data

from waypost.embeddings.sentence_transformer import SentenceTransformerEmbedder
from waypost.evaluation.beir import load_beir
from waypost.evaluation.runner import default_cache_dir
from waypost.index.dense import GRAPH_ROWS, HNSW_EF_CONSTRUCTION, HNSW_M, DenseIndex, graph_files, load_graphs
from waypost.index.topk import top_k


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    parser.add_argument("--embed-cache", type=Path, default=Path.home() / ".cache/waypost/embedding-cache.sqlite")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--noise", type=float, default=0.04)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--ef", default="100,200,400,800")
    args = parser.parse_args()
    seed = scale_data.seed(args.data, args.embed_cache)
    vectors = scale_data.replicated_vectors(seed, args.rows, args.noise)
    model = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    texts = [q.text for q in load_beir(args.data / "scifact").queries][: args.queries]
    queries = np.stack([model.embed_query(t) for t in texts]).astype(np.float32)
    t0 = time.perf_counter()
    truth = [top_k(vectors @ q, 10)[0] for q in queries]
    exact_ms = (time.perf_counter() - t0) / len(queries) * 1000
    name = f"recall-graphs-{args.rows}-{args.noise}-{HNSW_M}-{HNSW_EF_CONSTRUCTION}-{GRAPH_ROWS}"
    cached = default_cache_dir() / "bench" / name
    t0 = time.perf_counter()
    graphs = load_graphs(cached, vectors.shape[1], len(vectors))
    if graphs is not None:  # built before with these settings: the build time is not measured again
        index = DenseIndex(vectors, graphs=graphs)
        build_s = float("nan")
    else:
        index = DenseIndex(vectors, approximate=True)
        build_s = time.perf_counter() - t0
        cached.mkdir(parents=True, exist_ok=True)
        for graph, file in zip(index.graphs, graph_files(len(vectors)), strict=True):
            graph.save_index(str(cached / file))
    source = np.arange(args.rows) % seed.rows  # the seed chunk each row copies
    base = {"rows": args.rows, "noise": args.noise, "M": HNSW_M, "ef_construction": HNSW_EF_CONSTRUCTION}
    base["graphs"] = len(index.graphs)
    print(json.dumps({**base, "build_s": round(build_s, 1), "exact_scan_ms": round(exact_ms, 2)}), flush=True)
    for ef in [int(x) for x in args.ef.split(",")]:
        index._ef = ef
        for k in (10, 100):
            t0 = time.perf_counter()
            found = [index.approximate_search(q, k)[0][:10] for q in queries]
            ms = (time.perf_counter() - t0) / len(queries) * 1000
            pairs = list(zip(found, truth, strict=True))
            recall = np.mean([len(set(f.tolist()) & set(t.tolist())) / 10 for f, t in pairs])
            by_source = np.mean([len(set(source[f]) & set(source[t])) / len(set(source[t])) for f, t in pairs])
            row = {**base, "ef": max(ef, 2 * k), "k": k, "graph_ms": round(ms, 2), "recall@10": round(float(recall), 4)}
            row["source_recall@10"] = round(float(by_source), 4)  # copies of the same seed chunks count as found
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
