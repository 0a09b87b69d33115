"""Scale benchmark: a collection of 100k or 1M chunks on SQLite (embedded) and on PostgreSQL (a throwaway
local cluster), from bulk ingest to the first query after a write.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_scale.py --chunks 100000 [--json]
    ... --chunks 1000000 --backends sqlite,postgres --paths default

The collection is scifact's real chunks and MiniLM vectors replicated under new document ids, each copy's
vectors moved by Gaussian noise (``--noise``, renormalised; see ``scale_data.py``). The default 0.04 puts two
copies of one chunk at cosine 0.62, about as close as scifact's nearest chunks of different documents (median
0.67): copies look like other documents on the topic, not duplicates. Per backend:

1. ingest: IngestItems with precomputed vectors bulk-written through the store's ``write`` (rows/s);

then once per ``--paths`` entry (``default``: the engine's ``exact_dense_below``; ``graph``: HNSW candidates
at any size; ``exact``: full scans at any size):

2. build: a fresh process opens the engine and builds every index from the store (snapshot read, BM25,
   metadata, the HNSW graphs past ``exact_dense_below``), then saves them; ``answering_after_s`` is when
   its first query could be answered (a rebuild that needs graphs, at least ``exact_dense_below`` and
   100,000 chunks, answers by exact dense scores while its graphs are built in the background),
   ``build_total_s`` when the graphs were ready and saved;
3. query: a fresh process measures start-up to the first hybrid answer (model load apart), warm hybrid
   p50/p95 with the real MiniLM query embedding, dense recall@10 of the graph path against exact
   (unfiltered, and under filters keeping 50%, 10% and 1%), filtered hybrid latency, the first query after
   adding (embedded for real) or deleting one document, and resident memory (this process; for
   PostgreSQL also the server's PSS).

Each phase runs in its own process under ``--phase-timeout`` seconds; a phase that times out is reported
as such and the rest goes on. PostgreSQL runs with ``fsync=off`` (a benchmark cluster never crashed on
purpose); everything else is the default configuration.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import shutil
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

COLLECTION = "scale"
MODEL = "all-MiniLM-L6-v2"
PATHS = {"default": None, "graph": 0, "exact": 10**12}  # --paths: exact_dense_below per query phase


def rss_mb() -> dict[str, float]:
    """This process's resident memory now and at its peak (MiB)."""
    out: dict[str, float] = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = round(int(value.split()[0]) / 1024, 1)
    return {"rss_mb": out.get("VmRSS", 0.0), "peak_rss_mb": out.get("VmHWM", 0.0)}


def server_pss_mb(data_dir: str) -> float:
    """Proportional set size of the PostgreSQL postmaster and its children (shared buffers counted once)."""
    root = int((Path(data_dir) / "postmaster.pid").read_text().split()[0])
    total = 0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if int(proc.name) != root and ppid != root:
                continue
            for line in (proc / "smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return round(total / 1024, 1)


def percentiles(values: list[float]) -> dict[str, float]:
    from waypost.evaluation.metrics import percentile

    return {"p50_ms": round(percentile(values, 0.5), 2), "p95_ms": round(percentile(values, 0.95), 2), "n": len(values)}


def engine_config(store: str | None, exact_below: int | None) -> Any:
    from waypost.engine import EngineConfig

    config = EngineConfig(store=store)
    if exact_below is not None:
        config.exact_dense_below = exact_below
    return config


# -- phases (each in its own process) ---------------------------------------------------------------------
def phase_ingest(args: argparse.Namespace) -> dict[str, Any]:
    import scale_data

    from waypost.store.backend import open_backend

    seed = scale_data.seed(args.data, args.embed_cache)
    backend = open_backend(Path(args.path), args.store)
    store = backend.documents
    store.create_collection(COLLECTION, MODEL, int(seed.vectors.shape[1]))
    write_s = made_s = 0.0
    rows = docs = 0
    t0 = time.perf_counter()
    for batch in scale_data.replicated_items(seed, args.chunks, args.noise):
        t1 = time.perf_counter()
        made_s += t1 - t0
        store.write(COLLECTION, batch)
        t0 = time.perf_counter()
        write_s += t0 - t1
        rows += sum(len(i.chunks) for i in batch)
        docs += len(batch)
    store.close()
    return {
        "chunks": rows,
        "documents": docs,
        "write_s": round(write_s, 1),
        "rows_per_s": round(rows / write_s),
        "making_items_s": round(made_s, 1),
        **rss_mb(),
    }


def phase_build(args: argparse.Namespace) -> dict[str, Any]:
    from waypost.engine import Engine
    from waypost.index import dense

    timed: dict[str, float] = {"hnsw_build_s": 0.0}
    original = dense.build_hnsw

    def build_hnsw(*a: Any, **k: Any) -> Any:  # the graph's share of the build
        t = time.perf_counter()
        try:
            return original(*a, **k)
        finally:
            timed["hnsw_build_s"] += time.perf_counter() - t

    dense.build_hnsw = build_hnsw  # type: ignore[assignment]
    engine = Engine(Path(args.path), engine_config(args.store, args.exact_below))
    snapshot = engine.store.snapshot

    def timed_snapshot(name: str) -> Any:
        t = time.perf_counter()
        try:
            return snapshot(name)
        finally:
            timed["snapshot_s"] = time.perf_counter() - t

    engine.store.snapshot = timed_snapshot  # type: ignore[method-assign]
    t0 = time.perf_counter()
    state = engine.indexes.get(COLLECTION)
    answering = time.perf_counter() - t0  # a large rebuild answers (exact dense scores) before its graphs exist
    engine.indexes.live(COLLECTION).wait()  # the graphs, built on the worker thread, then the save
    total = time.perf_counter() - t0
    state = engine.indexes.get(COLLECTION)
    memory = rss_mb()
    t1 = time.perf_counter()
    engine.close()
    return {
        "chunks": len(state),
        "graphs": len(state.segments[0].dense.graphs),
        "snapshot_s": round(timed.get("snapshot_s", 0.0), 1),
        "hnsw_build_s": round(timed["hnsw_build_s"], 1),
        "answering_after_s": round(answering, 1),
        "build_total_s": round(total, 1),
        "save_s": round(time.perf_counter() - t1, 1),
        "index_dir_mb": round(
            sum(f.stat().st_size for f in (Path(args.path) / "indexes").rglob("*") if f.is_file()) / 2**20
        ),
        **memory,
    }


def recall_report(state: Any, vectors: list[Any]) -> dict[str, Any]:
    """Dense recall@10 of the graph path against exact scores, unfiltered and filtered, with timings."""
    import numpy as np

    from waypost.filters.model import Condition, Op
    from waypost.index.dense import QueryScores
    from waypost.index.topk import top_k

    if not state.dense.approximate:
        return {"path": "exact (every query reads every score: recall 1 by construction)"}
    filters = {
        "none": None,
        "bucket<50 (50%)": Condition("bucket", Op.LT, 50),
        "bucket<10 (10%)": Condition("bucket", Op.LT, 10),
        "bucket=3 (1%)": Condition("bucket", Op.EQ, 3),
    }
    out: dict[str, Any] = {"path": "graph"}
    for name, flt in filters.items():
        mask = state.live if flt is None else state.metadata.mask(flt)
        if flt is not None and state.live is not None:
            mask = mask & state.live
        rec10, rec100, graph_ms, exact_ms = [], [], [], []
        for v in vectors:
            t = time.perf_counter()
            truth = top_k(state.dense.scores(v), 10, mask)[0]
            exact_ms.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            found = QueryScores(state.dense, v).top(10, mask)[0]
            graph_ms.append((time.perf_counter() - t) * 1000)
            deep = QueryScores(state.dense, v).top(100, mask)[0][:10]  # what hybrid asks (depth 100)
            rec10.append(len(set(found.tolist()) & set(truth.tolist())) / max(1, len(truth)))
            rec100.append(len(set(deep.tolist()) & set(truth.tolist())) / max(1, len(truth)))
        out[name] = {
            "rows": int(mask.sum()) if mask is not None else len(state),
            "recall@10": round(float(np.mean(rec10)), 4),
            "recall@10_of_top100": round(float(np.mean(rec100)), 4),
            "graph_p50_ms": round(float(np.median(graph_ms)), 2),
            "exact_scan_p50_ms": round(float(np.median(exact_ms)), 2),
        }
    return out


def phase_query(args: argparse.Namespace) -> dict[str, Any]:
    from waypost.embeddings.sentence_transformer import SentenceTransformerEmbedder
    from waypost.engine import Engine
    from waypost.evaluation.beir import load_beir
    from waypost.filters.model import Condition, Op

    queries = [q.text for q in load_beir(args.data / "scifact").queries]
    extra = list(load_beir(args.data / "hotpotqa-100").corpus())[: args.rounds]
    t0 = time.perf_counter()
    model = SentenceTransformerEmbedder(MODEL)
    model.embed_query("warm up")
    model_rss = rss_mb()["rss_mb"]  # what the process holds before the collection is opened
    t1 = time.perf_counter()
    engine = Engine(Path(args.path), engine_config(args.store, args.exact_below))
    engine.register_embedder(model)
    coll = engine.collection(COLLECTION)
    coll.retrieve(queries[0], "hybrid", k=10)
    t2 = time.perf_counter()
    state = engine.indexes.get(COLLECTION)
    out: dict[str, Any] = {
        "model_load_s": round(t1 - t0, 2),
        "startup_to_first_answer_s": round(t2 - t1, 2),
        "loaded_from": engine.indexes.live(COLLECTION).loaded_from,
        "dense_path": "graph" if state.dense.approximate else "exact",
        "chunks": len(state),
    }

    def timed(q: str, **kw: Any) -> float:
        t = time.perf_counter()
        coll.retrieve(q, "hybrid", k=10, **kw)
        return (time.perf_counter() - t) * 1000

    for q in queries[1:11]:
        timed(q)
    stages: dict[str, list[float]] = {}
    warm: list[float] = []
    embed_only: list[float] = []
    for q in queries[11 : 11 + args.queries]:
        t = time.perf_counter()
        model.embed_query(q + " ")  # the bare model on (almost) the same text: the baseline, interleaved
        embed_only.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        result = coll.retrieve(q, "hybrid", k=10)
        warm.append((time.perf_counter() - t) * 1000)
        for stage, value in result.explanation.timings_ms.items():
            stages.setdefault(stage, []).append(value)
    out["hybrid"] = percentiles(warm)
    out["embed_query_alone"] = percentiles(embed_only)
    out["hybrid_without_embedding"] = percentiles([w - e for w, e in zip(warm, stages["embed_query"], strict=True)])
    out["hybrid_stage_p50_ms"] = {k: round(sorted(v)[len(v) // 2], 2) for k, v in stages.items()}
    bucket10 = Condition("bucket", Op.LT, 10)
    out["hybrid_filtered_10pct"] = percentiles([timed(q, filters=bucket10) for q in queries[11 : 11 + args.queries]])
    vectors = [model.embed_query(q) for q in queries[11 : 11 + args.recall_queries]]
    out["recall"] = recall_report(state, vectors)
    out["writes"] = writes(coll, queries, extra, args.rounds, timed)
    out["memory"] = {**rss_mb(), "rss_before_open_mb": model_rss, **index_bytes(engine.indexes.get(COLLECTION))}
    if args.pg_data:
        out["memory"]["postgres_server_pss_mb"] = server_pss_mb(args.pg_data)
    engine.close()
    return out


def writes(coll: Any, queries: list[str], extra: list[Any], rounds: int, timed: Any) -> dict[str, Any]:
    from waypost.types import Document

    warm: list[float] = []
    after_add: list[float] = []
    after_delete: list[float] = []
    qi = 200
    added = []
    for r in range(rounds):
        for _ in range(5):
            warm.append(timed(queries[qi % len(queries)]))
            qi += 1
        doc = extra[r]
        doc_id = f"scale-add-{r}:{doc.id}"
        coll.add([Document(doc_id, doc.text, doc.title, {"bucket": 0})])
        added.append(doc_id)
        after_add.append(timed(queries[qi % len(queries)]))
        qi += 1
    for doc_id in added:
        for _ in range(5):
            warm.append(timed(queries[qi % len(queries)]))
            qi += 1
        coll.delete([doc_id])
        after_delete.append(timed(queries[qi % len(queries)]))
        qi += 1
    w, a, d = percentiles(warm), percentiles(after_add), percentiles(after_delete)
    return {
        "warm_hybrid": w,
        "first_query_after_add": a,
        "first_query_after_delete": d,
        "after_add_p95_over_warm_p95": round(a["p95_ms"] / w["p95_ms"], 2),
        "after_delete_p95_over_warm_p95": round(d["p95_ms"] / w["p95_ms"], 2),
    }


def index_bytes(state: Any) -> dict[str, float]:
    """What the biggest parts of the derived indexes hold (MiB): vectors, the HNSW graph, BM25 postings."""
    from waypost.index.dense import HNSW_M

    vectors = sum(s.dense.vectors.nbytes for s in state.segments)
    graph = 0
    for s in state.segments:
        for g in s.dense.graphs:
            dim = s.dense.vectors.shape[1]
            per_item = dim * 4 + 2 * HNSW_M * 4 + 4 + 8  # vector, level-0 links and count, label
            graph += g.get_current_count() * int(per_item * (1 + 1 / HNSW_M))  # upper layers
    postings = 0
    for s in state.segments:
        for p in (s.chunks, s.documents):
            postings += sum(getattr(p, a).nbytes for a in vars(p) if hasattr(getattr(p, a), "nbytes"))
    return {
        "vectors_mb": round(vectors / 2**20, 1),
        "hnsw_graph_mb_estimate": round(graph / 2**20, 1),
        "bm25_postings_mb": round(postings / 2**20, 1),
    }


# -- orchestration ----------------------------------------------------------------------------------------
def run_phase(phase: str, args: argparse.Namespace, path: Path, store: str | None, **extra: Any) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--phase", phase, "--path", str(path), "--chunks", str(args.chunks)]
    cmd += ["--data", str(args.data), "--embed-cache", str(args.embed_cache), "--noise", str(args.noise)]
    cmd += ["--queries", str(args.queries), "--recall-queries", str(args.recall_queries), "--rounds", str(args.rounds)]
    if store:
        cmd += ["--store", store]
    for key, value in extra.items():
        if value is not None:
            cmd += [f"--{key.replace('_', '-')}", str(value)]
    t0 = time.perf_counter()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=args.phase_timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {args.phase_timeout} s"}
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["phase_s"] = round(time.perf_counter() - t0, 1)
    print(f"  {phase} {extra or ''}: {json.dumps(result)}", file=sys.stderr, flush=True)
    return result


def run_backend(backend: str, args: argparse.Namespace) -> dict[str, Any]:
    from waypost.store.pg_cluster import postgres_available, throwaway_cluster

    path = args.workdir / f"{backend}-{args.chunks}"
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    out: dict[str, Any] = {}
    with ExitStack() as stack:
        store = pg_data = None
        if backend == "postgres":
            if not postgres_available():
                return {"error": "PostgreSQL with pgvector is not installed"}
            cluster = stack.enter_context(throwaway_cluster(fsync=False))
            store, pg_data = cluster.create_database("bench"), str(cluster.data)
        print(f"{backend} at {args.chunks} chunks", file=sys.stderr, flush=True)
        out["ingest"] = run_phase("ingest", args, path, store)
        if "error" in out["ingest"]:
            return out
        for name in args.paths:  # each path's indexes built from scratch, then queried by a fresh process
            shutil.rmtree(path / "indexes", ignore_errors=True)
            out[f"build_{name}"] = run_phase("build", args, path, store, exact_below=PATHS[name])
            out[f"query_{name}"] = run_phase("query", args, path, store, exact_below=PATHS[name], pg_data=pg_data)
        out["store_mb"] = store_size(path, store)
    if not args.keep:
        shutil.rmtree(path, ignore_errors=True)
    return out


def store_size(path: Path, store: str | None) -> float:
    if store is None:
        return round(sum(f.stat().st_size for f in path.glob("*.sqlite*")) / 2**20)
    import psycopg

    with psycopg.connect(store) as conn:
        row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
    return round(int(row[0]) / 2**20) if row else 0.0


def table(results: dict[str, Any]) -> str:
    lines = [
        "| backend | path | ingest rows/s | build s (graph s) | start-up s | hybrid p50/p95 ms | after write p95 ms "
        "(x warm) | recall@10 (hybrid depth) | RSS MB | PG PSS MB |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for backend, r in results.items():  # hybrid: with the query embedding (the bare model's p95 beside it)
        if not isinstance(r, dict) or "ingest" not in r:
            continue
        ing = r["ingest"]
        for key, q in r.items():
            if not key.startswith("query_"):
                continue
            b = r.get(f"build_{key[6:]}", {})
            if "error" in q:
                lines.append(f"| {backend} | {key[6:]} | {ing.get('rows_per_s')} | | | {q['error']} | | | | |")
                continue
            rec = q["recall"]
            recall = (
                "1 (exact)"
                if rec["path"] != "graph"
                else f"{rec['none']['recall@10']} ({rec['none']['recall@10_of_top100']})"
            )
            w = q["writes"]
            lines.append(
                f"| {backend} | {key[6:]} ({q['dense_path']}) | {ing.get('rows_per_s')} | {b.get('build_total_s')} "
                f"({b.get('hnsw_build_s')}) | {q['startup_to_first_answer_s']} | {q['hybrid']['p50_ms']} / "
                f"{q['hybrid']['p95_ms']} | {w['first_query_after_add']['p95_ms']} "
                f"({w['after_add_p95_over_warm_p95']}) "
                f"| {recall} | {q['memory']['rss_mb']} | {q['memory'].get('postgres_server_pss_mb', '')} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = Path(__file__).resolve().parents[1]
    parser.add_argument("--data", type=Path, default=here.parent / "shared" / "data")
    parser.add_argument(
        "--embed-cache", type=Path, default=Path.home() / ".cache" / "waypost" / "embedding-cache.sqlite"
    )
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--paths", default="default", help="comma list of default, graph, exact")
    parser.add_argument("--noise", type=float, default=0.04)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--recall-queries", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--phase-timeout", type=int, default=3600)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/waypost-bench-scale"))
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--phase", choices=["ingest", "build", "query"], help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    parser.add_argument("--store", help=argparse.SUPPRESS)
    parser.add_argument("--exact-below", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--pg-data", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        phases = {"ingest": phase_ingest, "build": phase_build, "query": phase_query}
        print(json.dumps(phases[args.phase](args)))
        os._exit(0)  # the model's threads and the pools need no orderly exit
    args.paths = [p for p in args.paths.split(",") if p]
    results: dict[str, Any] = {"chunks": args.chunks, "noise": args.noise, "cores": os.cpu_count()}
    for backend in args.backends.split(","):
        results[backend] = run_backend(backend, args)
    print(json.dumps(results, indent=2) if args.json else table(results))


if __name__ == "__main__":
    main()
