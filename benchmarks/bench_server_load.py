"""Server load: query latency per route, idle and while a job ingests, against ``waypost serve`` on 127.0.0.1.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_server_load.py [--data ../shared/data]
        [--base 1000] [--ingest 1000] [--clients 8] [--seconds 30] [--max-ingest-seconds 90] [--json]

Starts ``waypost serve`` as its own process on 127.0.0.1 in a temporary root, makes a tenant and a key with
the ``waypost`` command, and uploads the first ``--base`` scifact documents (read in place) as one job. Then:

1. idle: ``--clients`` threads, each with its own HTTP connection, send scifact queries for ``--seconds``,
   turn by turn over the routes ``retrieve auto``, ``retrieve hybrid``, ``answer`` (extractive: no LLM) and
   ``GET /v1/collections``;
2. under ingest: the same, while one job ingests the next ``--ingest`` scifact documents into the same
   collection; only requests that start while the job runs are counted, and the phase ends with the job
   (or after ``--max-ingest-seconds``).

Reports p50/p95 per route and phase, failed requests (an HTTP error or a status other than 200), and the
ratio of p95 under ingest to p95 idle (the goal: at most 2). Run it on a quiet machine: other processes on
the same cores show up as latency.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from waypost.evaluation.metrics import percentile

ROUTES = ("retrieve auto", "retrieve hybrid", "answer", "collections")
COLL = "scifact"
GOAL = 2.0


def child_env() -> dict[str, str]:
    return {**os.environ, "OPENBLAS_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"}


def waypost(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "waypost.cli", *args], capture_output=True, text=True,
                          env=child_env(), timeout=300)  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"waypost {' '.join(args)} failed: {done.stderr}")
    return done.stdout


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """``waypost serve`` on a free loopback port; its log goes to ``serve.log`` beside the root."""

    def __init__(self, root: Path, extra: list[str]) -> None:
        self.root = root
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        waypost("tenant", "create", "bench", "--root", str(root))
        self.token = json.loads(waypost("key", "create", "bench", "--scope", "write", "--root", str(root), "--json"))[
            "token"
        ]
        self.log = (root.parent / "serve.log").open("wb")
        cmd = [sys.executable, "-m", "waypost.cli", "serve", "--root", str(root), "--port", str(self.port), *extra]
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=child_env())
        deadline = time.monotonic() + 180
        while True:
            if self.proc.poll() is not None:
                raise SystemExit(f"waypost serve exited with {self.proc.returncode}; see {self.log.name}")
            try:
                if httpx.get(f"{self.url}/readyz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise SystemExit("waypost serve did not become ready")
            time.sleep(0.1)

    def client(self, timeout: float = 60.0) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {self.token}"}, timeout=timeout)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def read_jsonl(path: Path, start: int, n: int) -> list[dict[str, Any]]:
    out = []
    with path.open(encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i >= start + n:
                break
            if i >= start:
                out.append(json.loads(line))
    if len(out) < n:
        raise SystemExit(f"{path} has {start + len(out)} lines; {start + n} are needed")
    return out


def upload(c: httpx.Client, docs: list[dict[str, Any]], name: str) -> str:
    body = "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs).encode()
    r = c.post(f"/v1/collections/{COLL}/documents", files=[("files", (name, body))])
    r.raise_for_status()
    job_id: str = r.json()["id"]
    return job_id


def job_state(c: httpx.Client, job_id: str) -> dict[str, Any]:
    job: dict[str, Any] = c.get(f"/v1/jobs/{job_id}").json()
    return job


def wait_job(c: httpx.Client, job_id: str, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        job = job_state(c, job_id)
        if job["state"] in ("succeeded", "failed", "cancelled") or time.monotonic() > deadline:
            return job
        time.sleep(0.2)


@dataclass
class Phase:
    latencies: dict[str, list[float]] = field(default_factory=lambda: {r: [] for r in ROUTES})
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> dict[str, Any]:
        routes = {
            r: {"n": len(v), "p50_ms": round(percentile(v, 0.5), 1), "p95_ms": round(percentile(v, 0.95), 1)}
            for r, v in self.latencies.items()
            if v
        }
        every = [x for v in self.latencies.values() for x in v]
        routes["all"] = {"n": len(every), "p50_ms": round(percentile(every, 0.5), 1),
                         "p95_ms": round(percentile(every, 0.95), 1)}  # fmt: skip
        return {"seconds": round(self.seconds, 1), "failed": len(self.failures),
                "failures": self.failures[:10], "routes": routes}  # fmt: skip


def request(c: httpx.Client, route: str, query: str) -> httpx.Response:
    if route == "retrieve auto":
        return c.post("/v1/retrieve", json={"collection": COLL, "query": query, "strategy": "auto", "k": 10})
    if route == "retrieve hybrid":
        return c.post("/v1/retrieve", json={"collection": COLL, "query": query, "strategy": "hybrid", "k": 10})
    if route == "answer":
        return c.post("/v1/answer", json={"collection": COLL, "question": query, "k": 5})
    return c.get("/v1/collections")


def run_phase(server: Server, clients: int, queries: list[str], keep_going: Callable[[], bool]) -> Phase:
    """``clients`` threads send requests while ``keep_going()``; a request counts if it started then."""
    phase = Phase()
    lock = threading.Lock()

    def client(seed: int) -> None:
        rng = random.Random(seed)
        turn = seed
        with server.client() as c:
            while keep_going():
                route = ROUTES[turn % len(ROUTES)]
                turn += 1
                t0 = time.perf_counter()
                try:
                    r = request(c, route, rng.choice(queries))
                    failed = None if r.status_code == 200 else f"{route}: HTTP {r.status_code} {r.text[:200]}"
                except httpx.HTTPError as exc:
                    failed = f"{route}: {type(exc).__name__}: {exc}"
                ms = (time.perf_counter() - t0) * 1000
                with lock:
                    if failed:
                        phase.failures.append(failed)
                    else:
                        phase.latencies[route].append(ms)

    t0 = time.monotonic()
    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    phase.seconds = time.monotonic() - t0
    return phase


def table(idle: dict[str, Any], busy: dict[str, Any]) -> str:
    lines = [f"{'route':16} {'idle p50':>9} {'idle p95':>9} {'ingest p50':>11} {'ingest p95':>11} {'p95 ratio':>10}"
             f" {'n idle':>7} {'n ingest':>9}"]  # fmt: skip
    for route in (*ROUTES, "all"):
        a, b = idle["routes"].get(route), busy["routes"].get(route)
        if not a or not b:
            continue
        ratio = b["p95_ms"] / a["p95_ms"] if a["p95_ms"] else float("nan")
        lines.append(f"{route:16} {a['p50_ms']:9.1f} {a['p95_ms']:9.1f} {b['p50_ms']:11.1f} {b['p95_ms']:11.1f}"
                     f" {ratio:10.2f} {a['n']:7d} {b['n']:9d}")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    ap.add_argument("--base", type=int, default=1000, help="scifact documents in the collection before the phases")
    ap.add_argument("--ingest", type=int, default=1000, help="scifact documents the job ingests in phase 2")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=30.0, help="length of the idle phase")
    ap.add_argument("--max-ingest-seconds", type=float, default=90.0, help="phase 2 ends here if the job has not")
    ap.add_argument("--serve-arg", action="append", default=[], help="passed on to waypost serve (repeatable)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    corpus = args.data / "scifact" / "corpus.jsonl"
    queries = [json.loads(line)["text"] for line in (args.data / "scifact" / "queries.jsonl").open(encoding="utf-8")]
    base = read_jsonl(corpus, 0, args.base)
    extra = read_jsonl(corpus, args.base, args.ingest)

    tmp = Path(tempfile.mkdtemp(prefix="waypost-load-"))
    server = Server(tmp / "root", args.serve_arg)
    try:
        with server.client(timeout=600) as c:
            c.post("/v1/collections", json={"name": COLL}).raise_for_status()
            t0 = time.monotonic()
            job = wait_job(c, upload(c, base, "base.jsonl"), timeout=1800)
            base_s = time.monotonic() - t0
            if job["state"] != "succeeded":
                raise SystemExit(f"the base ingest did not succeed: {job}")
            for q in queries[:8]:  # warm: the model, the indexes, the router
                request(c, "retrieve auto", q).raise_for_status()
                request(c, "answer", q).raise_for_status()

            end = time.monotonic() + args.seconds
            idle = run_phase(server, args.clients, queries, lambda: time.monotonic() < end)

            job_id = upload(c, extra, "more.jsonl")
            t0 = time.monotonic()
            running = {"on": True}

            def watch() -> None:  # phase 2 lasts while the job runs
                with server.client() as w:
                    while time.monotonic() - t0 < args.max_ingest_seconds:
                        if job_state(w, job_id)["state"] in ("succeeded", "failed", "cancelled"):
                            break
                        time.sleep(0.1)
                running["on"] = False

            watcher = threading.Thread(target=watch, daemon=True)
            watcher.start()
            busy = run_phase(server, args.clients, queries, lambda: running["on"])
            watcher.join()
            final = wait_job(c, job_id, timeout=1800)
            ingest_s = final["updated_at"] - final["created_at"]
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    a, b = idle.summary(), busy.summary()
    ratio = b["routes"]["all"]["p95_ms"] / a["routes"]["all"]["p95_ms"] if a["routes"]["all"]["p95_ms"] else None
    report = {
        "base_documents": args.base, "base_ingest_s": round(base_s, 1), "ingest_documents": args.ingest,
        "ingest_job": {"state": final["state"], "seconds": round(ingest_s, 1), "counts": final["counts"],
                       "finished_within_phase": not running["on"] and busy.seconds < args.max_ingest_seconds},
        "clients": args.clients, "idle": a, "under_ingest": b,
        "p95_ratio": {r: round(b["routes"][r]["p95_ms"] / a["routes"][r]["p95_ms"], 2)
                      for r in (*ROUTES, "all") if r in a["routes"] and r in b["routes"] and a["routes"][r]["p95_ms"]},
        "failed_requests": a["failed"] + b["failed"], "goal_p95_ratio": GOAL,
        "goal_met": ratio is not None and ratio <= GOAL and a["failed"] + b["failed"] == 0,
    }  # fmt: skip
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"base: {args.base} scifact documents ingested in {base_s:.1f}s; {args.clients} clients")
    print(f"idle phase {a['seconds']}s; under ingest {b['seconds']}s while a job ingested {args.ingest} documents "
          f"({final['state']} in {ingest_s:.1f}s)")  # fmt: skip
    print(table(a, b))
    print(f"failed requests: {report['failed_requests']}" + "".join(f"\n  {f}" for f in a["failures"] + b["failures"]))
    verdict = "met" if report["goal_met"] else "NOT met"
    print(f"p95 under ingest / idle (all routes): {ratio:.2f} (goal <= {GOAL}, no failed request): {verdict}")


if __name__ == "__main__":
    main()
