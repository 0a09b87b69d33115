"""Quality parity between the embedded store and PostgreSQL (issue 28): the same ``waypost eval`` runs on both.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_postgres_parity.py [--json] [--data ../shared/data]
        [--cache-dir ~/.cache/waypost] [--runs scifact:dense,scifact:bm25,...] [--tolerance 0.005]
        [--embeddings-from ~/.cache/waypost/mixed/store/embedding-cache.sqlite]

It starts a throwaway PostgreSQL cluster (``waypost.store.pg_cluster``), then runs, one after the other,
``waypost eval DATA/SET --strategy S --json`` on the embedded store and with ``--store postgresql://...``:
scifact with dense, bm25, hybrid and auto; hotpotqa-100 with hybrid and hipporag. Both backends share eval's
embedding cache (``--cache-dir``/embedding-cache.sqlite): the embedded run embeds the corpus once (or reuses an
earlier eval's cache, or one ``--embeddings-from`` seeds), the PostgreSQL run reads the same vectors. The bar:
nDCG@10 and Recall@5 on PostgreSQL each within ``--tolerance`` of the embedded store's. Prints a table
(nDCG@10 and Recall@5 on each, the difference), or ``--json``; exits 1 when a run misses the bar.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import hashlib
import json
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from waypost.store.backend import database_label
from waypost.store.pg_cluster import postgres_available, throwaway_cluster

ROOT = Path(__file__).resolve().parents[1]
RUNS = "scifact:dense,scifact:bm25,scifact:hybrid,scifact:auto,hotpotqa-100:hybrid,hotpotqa-100:hipporag"
METRICS = ("ndcg@10", "recall@5")


def eval_run(data: Path, name: str, strategy: str, cache_dir: Path, url: str | None) -> dict[str, Any]:
    """One ``waypost eval`` process; its JSON report plus the wall time."""
    cmd = [sys.executable, "-m", "waypost.cli", "eval", str(data / name), "--strategy", strategy, "--json"]
    cmd += ["--cache-dir", str(cache_dir), *(["--store", url] if url else [])]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"}
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    report["seconds"] = round(time.perf_counter() - started, 1)
    return report


def seed_embeddings(source: Path, cache_dir: Path) -> int:
    """Copy the entries of another embedding cache (keyed by model and text, e.g. the mixed benchmark's) that
    eval's cache lacks; returns how many eval's cache then holds."""
    target = cache_dir / "embedding-cache.sqlite"
    target.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(target)
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS embeddings (model TEXT, key TEXT, vector BLOB, PRIMARY KEY (model, key))"
        )
        conn.execute("ATTACH DATABASE ? AS other", (f"file:{source}?mode=ro",))
        conn.execute("INSERT OR IGNORE INTO embeddings SELECT model, key, vector FROM other.embeddings")
        conn.commit()
        conn.execute("DETACH DATABASE other")
        return int(conn.execute("SELECT count(*) FROM embeddings").fetchone()[0])
    finally:
        conn.close()


def compare(args: argparse.Namespace, url: str) -> list[dict[str, Any]]:
    rows = []
    for spec in args.runs.split(","):
        name, strategy = spec.split(":")
        embedded = eval_run(args.data, name, strategy, args.cache_dir, None)
        postgres = eval_run(args.data, name, strategy, args.cache_dir, url)
        row: dict[str, Any] = {"set": name, "strategy": strategy, "queries": embedded.get("queries")}
        for metric in METRICS:
            row[f"{metric} embedded"] = embedded[metric]
            row[f"{metric} postgresql"] = postgres[metric]
        row["ndcg@10 difference"] = round(postgres["ndcg@10"] - embedded["ndcg@10"], 4)
        row["recall@5 difference"] = round(postgres["recall@5"] - embedded["recall@5"], 4)
        row["within tolerance"] = max(abs(row["ndcg@10 difference"]), abs(row["recall@5 difference"])) <= args.tolerance
        row["seconds embedded"], row["seconds postgresql"] = embedded["seconds"], postgres["seconds"]
        rows.append(row)
        if not args.json:
            print(table([row], header=not rows[:-1]), flush=True)
    return rows


def table(rows: list[dict[str, Any]], header: bool = True) -> str:
    lines = []
    if header:
        lines.append(
            f"{'set':<13} {'strategy':<9} {'nDCG@10 embedded':>16} {'nDCG@10 pg':>10} {'diff':>7} "
            f"{'R@5 embedded':>12} {'R@5 pg':>7} {'ok':>3} {'s embedded':>10} {'s pg':>6}"
        )
    for r in rows:
        lines.append(
            f"{r['set']:<13} {r['strategy']:<9} {r['ndcg@10 embedded']:>16.4f} {r['ndcg@10 postgresql']:>10.4f} "
            f"{r['ndcg@10 difference']:>+7.4f} {r['recall@5 embedded']:>12.4f} {r['recall@5 postgresql']:>7.4f} "
            f"{'yes' if r['within tolerance'] else 'NO':>3} {r['seconds embedded']:>10.1f} "
            f"{r['seconds postgresql']:>6.1f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="print the results as JSON only")
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "waypost",
                        help="eval's cache: ingested corpora and the embedding cache both backends share")  # fmt: skip
    parser.add_argument("--runs", default=RUNS, help="SET:STRATEGY pairs, comma-separated")
    parser.add_argument(
        "--tolerance", type=float, default=0.005, help="largest nDCG@10 and Recall@5 difference allowed"
    )
    parser.add_argument("--embeddings-from", type=Path,
                        help="another embedding cache file of the same model whose entries seed eval's")  # fmt: skip
    args = parser.parse_args(argv)
    if args.embeddings_from is not None:
        held = seed_embeddings(args.embeddings_from, args.cache_dir)
        if not args.json:
            print(f"eval's embedding cache holds {held} entries after seeding from {args.embeddings_from}")
    if not postgres_available():
        raise SystemExit("PostgreSQL 15 with pgvector is not installed (scripts/install_postgres.sh)")
    started = time.perf_counter()
    with throwaway_cluster(fsync=False) as cluster:
        url = cluster.create_database("parity")
        try:
            rows = compare(args, url)
        finally:  # the working directories of this throwaway database's stores go with it
            digest = hashlib.sha256(database_label(url).encode("utf-8")).hexdigest()[:12]
            for folder in (args.cache_dir / "eval").glob(f"*-pg-{digest}"):
                shutil.rmtree(folder, ignore_errors=True)
    results = {
        "runs": rows,
        "all_within_tolerance": all(r["within tolerance"] for r in rows),
        "tolerance": args.tolerance,
        "seconds": round(time.perf_counter() - started, 1),
    }
    if args.json:
        print(json.dumps(results, indent=1))
    else:
        print(
            f"\nall within {args.tolerance} (nDCG@10 and Recall@5): {results['all_within_tolerance']};"
            f" {results['seconds']} s"
        )
    return results


if __name__ == "__main__":
    sys.exit(0 if main()["all_within_tolerance"] else 1)
