"""Grid over BM25 parameters and fusion settings on a *training* split (never the test split).

    .venv/bin/python benchmarks/tune_fusion.py ../shared/data/scifact --split train

Query embeddings are computed once; each configuration then only re-ranks.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from waypost.engine import Engine, EngineConfig
from waypost.evaluation.beir import load_beir
from waypost.evaluation.metrics import ndcg_at, recall_at
from waypost.evaluation.runner import COLLECTION, default_cache_dir, eval_store_dir, prepare
from waypost.index.set import BM25Params, IndexSet
from waypost.index.topk import top_k
from waypost.retrieval.fusion import FusionConfig, FusionMethod, RankedList, fuse


def doc_ranking(positions: np.ndarray, doc_ids: list[str], depth: int = 100) -> list[str]:
    seen: dict[str, None] = {}
    for p in positions:
        seen.setdefault(doc_ids[int(p)], None)
        if len(seen) >= depth:
            break
    return list(seen)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--split", default="train")
    args = parser.parse_args()
    dataset = load_beir(args.dataset, args.split)
    config = EngineConfig(embed_cache=default_cache_dir() / "embedding-cache.sqlite")
    engine = Engine(eval_store_dir(dataset, config, default_cache_dir()), config)
    prepare(dataset, engine, show_progress=True)
    coll = engine.collection(COLLECTION)
    snap = engine.store.snapshot(COLLECTION)
    indexes = IndexSet.build(COLLECTION, snap)  # one segment in snapshot order: positions agree below
    docs = indexes.document_ids
    queries = dataset.queries
    qvecs = coll.embedder.inner.embed_documents([q.text for q in queries])  # type: ignore[attr-defined]
    dense_all = [indexes.dense.scores(v) for v in qvecs]

    def score(rankings: list[list[str]]) -> dict[str, float]:
        nd = [ndcg_at(r, dataset.qrels[q.id], 10) for r, q in zip(rankings, queries, strict=True)]
        r5 = [recall_at(r, dataset.qrels[q.id], 5) for r, q in zip(rankings, queries, strict=True)]
        return {"ndcg@10": round(float(np.mean(nd)), 4), "recall@5": round(float(np.mean(r5)), 4)}

    results = {"dense": score([doc_ranking(top_k(d, 300)[0], docs) for d in dense_all])}
    chunk_only = IndexSet.build(COLLECTION, snap, params=BM25Params(doc_weight=0.0)).bm25
    results["bm25 chunks only (doc_weight=0)"] = score(
        [doc_ranking(top_k(chunk_only.scores(q.text).astype(np.float32), 300)[0], docs) for q in queries]
    )
    for k1, b in [(0.9, 0.4), (1.2, 0.75)]:
        bm25 = IndexSet.build(COLLECTION, snap, params=BM25Params(k1=k1, b=b)).bm25
        sparse_all = [bm25.scores(q.text).astype(np.float32) for q in queries]
        results[f"bm25 k1={k1} b={b}"] = score([doc_ranking(top_k(s, 300)[0], docs) for s in sparse_all])
        for method, alphas in [
            (FusionMethod.RRF, [0.5]),
            (FusionMethod.BORDA, [0.5]),
            (FusionMethod.WEIGHTED, [0.3, 0.4, 0.5, 0.6, 0.7]),
        ]:
            for alpha in alphas:
                cfg = FusionConfig(method=method, alpha=alpha)
                rankings = []
                for d, s in zip(dense_all, sparse_all, strict=True):
                    dp, ds = top_k(d, cfg.depth)
                    sp, ss = top_k(s, cfg.depth)
                    keep = ss > 0
                    pos, _ = fuse(RankedList(dp, ds, d), RankedList(sp[keep], ss[keep], s), cfg)
                    rankings.append(doc_ranking(pos, docs))
                results[f"hybrid {method.value} alpha={alpha} k1={k1} b={b}"] = score(rankings)
    for name, value in sorted(results.items(), key=lambda kv: -kv[1]["ndcg@10"]):
        print(json.dumps({"config": name, **value}))
    engine.close()


if __name__ == "__main__":
    main()
