"""Crash trials: kill -9 at random points of ingest, delete, index merges and saves, tree and graph updates.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_crash.py [--trials 100] [--seed 0]
        [--ops ingest,delete,merge,tree,graph] [--json] [--data ../shared/data] [--spawn]

A worker process runs a scripted random sequence of operations on a real store (real SQLite, the real
all-MiniLM-L6-v2 model, the real spaCy pipeline) over a small slice of scifact and hotpotqa-100, read in
place: ``ingest`` adds new documents and replaces stored ones, ``delete`` deletes, ``merge`` catches the
indexes up (every catch-up merges segments and saves the index state: the merge policy is tiny),
``tree`` and ``graph`` catch the RAPTOR tree and the knowledge graph up (building them the first time).
Before each operation the worker appends a ``begin`` line to a journal and after it returns a ``done``
line, each fsync'ed: a ``done`` line is an acknowledged commit. The parent kills the worker with SIGKILL
at a time drawn uniformly over the expected duration of the trial's target operation, so kills land
inside embeddings, SQLite transactions, merges, index saves and tree and graph catch-ups.

After each kill the parent reopens the store and checks it:
1. every committed document is present and whole (text, every chunk, exact spans, a sane vector) and
   every committed delete absent; a missing one is a LOST COMMIT;
2. the indexes (loaded from the saved state, then caught up) equal a rebuild from the store: the same live
   rows, BM25 and dense scores equal within 1e-6, the same metadata; the tree covers exactly the live
   chunks; the graph cites only live chunks;
3. no deleted or replaced text is served (its unique marker word finds none of its chunks, no tree
   summary or graph entity quotes it);
4. the interrupted operation, run again, finishes, and the store then holds its result.
Anything else failing makes the store INCONSISTENT; it is copied to ``--keep`` for diagnosis.

Workers are forked from a process that loaded the models once (each trial is still its own process, with
its own store connections, killed for real); ``--spawn`` starts a fresh interpreter per trial instead.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# numba's OpenMP layer shares torch's libgomp: once UMAP ran, a forked worker's torch deadlocks in a stale
# OpenMP team; the workqueue layer leaves libgomp alone and restarts its threads after a fork
os.environ.setdefault("NUMBA_THREADING_LAYER", "workqueue")
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import argparse
import dataclasses
import json
import queue
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from waypost.base import Embedder
from waypost.embeddings.cache import CachedEmbedder
from waypost.engine import Collection, Engine, EngineConfig
from waypost.errors import CollectionNotFoundError
from waypost.index.set import MergePolicy

sys.path.insert(0, str(Path(__file__).resolve().parent))  # crash_checks beside this file, however it is run
from crash_checks import (
    CHUNK_TOKENS,
    COLLECTION,
    Failure,
    Lost,
    Model,
    Source,
    captured_warnings,
    check_documents,
    check_graph,
    check_indexes,
    check_not_served,
    check_sqlite,
    check_tree,
    document,
    load_pool,
    marker,
)  # fmt: skip

KINDS = ("ingest", "delete", "merge", "tree", "graph")
MIN_LIVE = 6  # deletes keep at least this many documents (trees and graphs need some)
FIRST_FILL = 12  # documents the first operation on a fresh store adds
# Every catch-up merges the small segments (and tombstones) away and saves the index state.
POLICY = MergePolicy(
    max_small_segments=1, main_merge_rows=8, main_merge_ratio=0.05, dead_ratio=0.05, persist_rows=0,
    persist_generations=1,
)  # fmt: skip
# first guesses of how long each operation takes ("fill": a fresh store's first ingest; "-build": the first tree
# or graph); then the median of the last ones measured
DEFAULT_SECONDS = {"ingest": 1.0, "fill": 4.0, "delete": 0.1, "merge": 0.5, "tree": 0.5, "tree-build": 2.0,
                   "graph": 0.5, "graph-build": 3.0}  # fmt: skip
TOPIC_QUERIES = ["cell protein expression", "university founded city", "risk of disease in patients", "film album"]
ROOT = Path(__file__).resolve().parents[1]


# -- the worker ---------------------------------------------------------------------------------------------
def engine_config(background: bool) -> EngineConfig:
    return EngineConfig(chunk_tokens=CHUNK_TOKENS, merge_policy=POLICY, background_index_work=background)


def open_engine(store: Path, embedder: Embedder, background: bool = False, url: str | None = None) -> Engine:
    """The engine a user would open, with the already-loaded model behind the store's embedding cache
    (``url``: a PostgreSQL store, ``store`` then its local working directory)."""
    engine = Engine(store, dataclasses.replace(engine_config(background), store=url))
    engine.register_embedder(CachedEmbedder(embedder, store / "embedding-cache.sqlite"))
    return engine


def run_op(engine: Engine, coll: Collection, op: dict[str, Any], pool: dict[str, Source]) -> None:
    kind = op["kind"]
    if kind == "ingest":
        coll.add([document(pool[doc_id], version) for doc_id, version in op["docs"]])
    elif kind == "delete":
        coll.delete(list(op["ids"]))
    elif kind == "merge":
        live = engine.indexes.live(COLLECTION)
        live.get()
        live.flush()  # waits for a background merge, then saves whatever is unsaved
    elif kind == "tree":
        coll.tree().get()
    elif kind == "graph":
        coll.graph().get()
    else:
        raise ValueError(f"unknown operation {kind!r}")


def journal_line(fd: int, entry: dict[str, Any]) -> None:
    os.write(fd, (json.dumps(entry) + "\n").encode())
    os.fsync(fd)


def run_worker(request: dict[str, Any], embedder: Embedder, pool: dict[str, Source]) -> None:
    store, plan = Path(request["store"]), request["plan"]
    fd = os.open(request["journal"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    engine = open_engine(store, embedder, background=bool(request["background"]), url=request.get("url"))
    coll = engine.collection(COLLECTION, create=True)
    for i, op in enumerate(plan):
        began = time.time()
        os.write(1, (json.dumps({"begin": i, "pid": os.getpid()}) + "\n").encode())  # the parent times its kill
        journal_line(fd, {"begin": i, "kind": op["kind"], "t": began})
        run_op(engine, coll, op, pool)
        journal_line(fd, {"done": i, "kind": op["kind"], "t": time.time()})
    engine.close()
    journal_line(fd, {"closed": True, "t": time.time()})
    os.close(fd)


def load_models(tree: bool = True) -> Embedder:
    """MiniLM and the spaCy pipeline, warmed up on one thread (a forked child then needs no thread pool)."""
    import torch

    from waypost.embeddings.factory import DEFAULT_MODEL
    from waypost.embeddings.sentence_transformer import SentenceTransformerEmbedder
    from waypost.graph.extract import load_spacy

    torch.set_num_threads(1)
    embedder = SentenceTransformerEmbedder(DEFAULT_MODEL)
    embedder.embed_documents(["warm up"])
    embedder.embed_query("warm up")
    load_spacy()("Warm up in Paris.")
    if not tree:
        return embedder
    # UMAP's numba code compiles on first use (a minute or more on a busy machine): compile it here, once, for
    # every forked worker, rather than inside each worker's first tree build
    from waypost.hierarchy.cluster import ClusterConfig, soft_clusters

    rng = np.random.default_rng(0)
    for n in (30, 60):  # random and spectral initialisation
        vectors = rng.normal(size=(n, embedder.dimension)).astype(np.float32)
        soft_clusters(vectors / np.linalg.norm(vectors, axis=1, keepdims=True), [10] * n, 10_000, ClusterConfig())
    return embedder


def serve_forks(data: Path, sets: list[str], tree: bool) -> None:
    """The fork server: load the models once, then fork one worker per request line on stdin."""
    embedder = load_models(tree)
    pool = {s.id: s for s in load_pool(data, sets)}
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                run_worker(request, embedder, pool)
            except BaseException:
                traceback.print_exc()
                code = 1
            finally:
                sys.stderr.flush()
                os._exit(code)
        print(json.dumps({"pid": pid}), flush=True)
        _pid, status = os.waitpid(pid, 0)
        print(json.dumps({"exit": pid, "code": os.waitstatus_to_exitcode(status)}), flush=True)


def spawn_worker(data: Path, sets: list[str], request_file: Path) -> None:
    embedder = load_models(tree=False)  # a fresh process compiles UMAP when it first builds a tree
    pool = {s.id: s for s in load_pool(data, sets)}
    run_worker(json.loads(request_file.read_text()), embedder, pool)


# -- starting and killing workers ------------------------------------------------------------------------------
class Worker:
    """A running worker: the operations it began (it announces each on its stdout) and, once gone, its exit code."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.begun: queue.Queue[int] = queue.Queue()
        self.exit: queue.Queue[int] = queue.Queue()
        self.code: int | None = None

    def exited(self) -> bool:
        if self.code is None:
            try:
                self.code = self.exit.get_nowait()
            except queue.Empty:
                return False
        return True

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.wait()

    def wait(self, timeout: float = 120.0) -> int:
        if self.code is None:
            self.code = self.exit.get(timeout=timeout)
        return self.code


def _env() -> dict[str, str]:
    paths = [str(ROOT / "src"), *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths)), "OPENBLAS_NUM_THREADS": "1",
            "TOKENIZERS_PARALLELISM": "false"}  # fmt: skip


def _message(line: str) -> dict[str, Any]:
    try:
        found = json.loads(line)
    except json.JSONDecodeError:
        return {}
    return found if isinstance(found, dict) else {}


class ForkServer:
    """One interpreter that loaded the models; each worker is a fork of it."""

    def __init__(self, data: Path, sets: list[str], log: Path, ops: str) -> None:
        self._log = log.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--serve-forks", "--data", str(data),
             "--sets", ",".join(sets), "--ops", ops],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, env=_env(), text=True,
        )  # fmt: skip
        self._lines: queue.Queue[dict[str, Any]] = queue.Queue()
        self._workers: dict[int, Worker] = {}
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()
        self._ready = False  # the server loads its models while this process loads its own

    def _worker(self, pid: int) -> Worker:
        with self._lock:
            return self._workers.setdefault(pid, Worker(pid))

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:  # the server's lines and its workers' (each one short write)
            message = _message(line)
            if "begin" in message:
                self._worker(int(message["pid"])).begun.put(int(message["begin"]))
            elif "exit" in message:
                self._worker(int(message["exit"])).exit.put(int(message["code"]))
            elif message:
                self._lines.put(message)
        self._lines.put({"gone": True})

    def start(self, request: dict[str, Any], _request_file: Path) -> Worker:
        assert self.proc.stdin is not None
        if not self._ready:
            first = self._lines.get(timeout=900)
            if not first.get("ready"):
                raise RuntimeError(f"the fork server did not start: {first}")
            self._ready = True
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        message = self._lines.get(timeout=60)
        if "pid" not in message:
            raise RuntimeError(f"the fork server stopped: {message}")
        return self._worker(int(message["pid"]))

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)
        self._log.close()


class Spawner:
    """A fresh interpreter per worker (each loads the models itself: slower)."""

    def __init__(self, data: Path, sets: list[str], log: Path, _ops: str) -> None:
        self.data = data
        self.sets = sets
        self._log = log.open("ab")

    def start(self, request: dict[str, Any], request_file: Path) -> Worker:
        request_file.write_text(json.dumps(request))
        proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker", str(request_file), "--data", str(self.data),
             "--sets", ",".join(self.sets)],
            stdout=subprocess.PIPE, stderr=self._log, env=_env(), text=True,
        )  # fmt: skip
        worker = Worker(proc.pid)

        def read() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                message = _message(line)
                if "begin" in message:
                    worker.begun.put(int(message["begin"]))
            worker.exit.put(proc.wait())

        threading.Thread(target=read, daemon=True).start()
        return worker

    def close(self) -> None:
        self._log.close()


def read_journal(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    entries = []
    for line in path.read_text().splitlines(keepends=True):
        if line.endswith("\n"):  # a line the kill cut short was never acknowledged
            entries.append(json.loads(line))
    return entries


# -- plans ----------------------------------------------------------------------------------------------------
def plan_op(kind: str, model: Model, pool: list[Source], rng: random.Random) -> dict[str, Any]:
    if kind == "delete" and len(model.versions) - 1 < MIN_LIVE:
        kind = "ingest"
    if kind in ("tree", "graph", "merge") and not model.versions:
        kind = "ingest"
    if kind == "ingest":
        absent = [s.id for s in pool if s.id not in model.versions]
        live = sorted(model.versions)
        n = FIRST_FILL if not model.versions else rng.randint(1, 4)
        docs: dict[str, int] = {}
        for _ in range(n):
            if live and (not absent or rng.random() < 0.35):
                doc_id = rng.choice(live)
            elif absent:
                doc_id = absent.pop(rng.randrange(len(absent)))
            else:
                continue
            docs[doc_id] = model.last_version.get(doc_id, -1) + 1
        return {"kind": "ingest", "docs": sorted(docs.items()), "timing": "ingest" if model.versions else "fill"}
    if kind == "delete":
        n = min(rng.randint(1, 5), len(model.versions) - MIN_LIVE)
        return {"kind": "delete", "ids": rng.sample(sorted(model.versions), n), "timing": "delete"}
    return {"kind": kind, "timing": kind if kind in model.built or kind == "merge" else f"{kind}-build"}


def make_plan(
    target: str, kinds: list[str], model: Model, pool: list[Source], rng: random.Random
) -> tuple[list[dict[str, Any]], int]:
    """A few operations before the target, the target, and a few after (a kill that comes late lands there)."""
    sim = model.copy()
    wanted = [*(rng.choice(kinds) for _ in range(rng.randint(0, 2))), target, *(rng.choice(kinds) for _ in range(3))]
    if not sim.versions:
        wanted.insert(0, "ingest")
    plan = []
    for kind in wanted:
        op = plan_op(kind, sim, pool, rng)
        sim.apply(op)
        plan.append(op)
    target_at = len(wanted) - 4
    return plan, target_at


# -- one trial ------------------------------------------------------------------------------------------------
@dataclass
class TrialResult:
    target: str
    interrupted: str  # the operation in flight when the kill came; "between" or "none" (the worker finished)
    outcome: str  # ok | inconsistent | lost
    detail: str = ""
    index_source: str = ""
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    check_seconds: float = 0.0
    kill_after_s: float = 0.0


class Trials:
    def __init__(self, args: argparse.Namespace, work: Path, embedder: Embedder | None = None) -> None:
        self.args = args
        self.work = work
        self.kinds = [k for k in args.ops.split(",") if k]
        bad = [k for k in self.kinds if k not in KINDS]
        if bad:
            raise SystemExit(f"unknown --ops {bad}: choose from {','.join(KINDS)}")
        self.rng = random.Random(args.seed)
        self.pool_list = load_pool(args.data, args.sets)
        self.pool = {s.id: s for s in self.pool_list}
        self.durations: dict[str, list[float]] = {k: [] for k in DEFAULT_SECONDS}
        log = work / "workers.log"
        launcher = Spawner if args.spawn else ForkServer
        self.launcher: ForkServer | Spawner = launcher(args.data, args.sets, log, args.ops)
        self.embedder = embedder or load_models("tree" in self.kinds)
        self.store = work / "store-0"
        self.url: str | None = None  # a PostgreSQL store (bench_crash_postgres.py); None: SQLite in self.store
        self.model = Model()
        self.stores = 0
        self.on_store = 0

    def new_store(self) -> None:
        self.stores += 1
        self.store = self.work / f"store-{self.stores}"
        self.model = Model()
        self.on_store = 0

    def expected_seconds(self, kind: str) -> float:
        seen = self.durations[kind][-12:]
        return statistics.median(seen) if seen else DEFAULT_SECONDS[kind]

    def trial(self, number: int, target: str) -> TrialResult:
        if self.on_store >= self.args.trials_per_store:
            self.new_store()
        self.on_store += 1
        t0 = time.perf_counter()
        plan, target_at = make_plan(target, self.kinds, self.model, self.pool_list, self.rng)
        journal = self.work / f"journal-{number}.jsonl"
        background = self.rng.random() < 0.3
        request = {"store": str(self.store), "journal": str(journal), "plan": plan, "background": background,
                   "url": self.url}  # fmt: skip
        worker = self.launcher.start(request, self.work / f"request-{number}.json")
        delay: float | None = None
        killed = False
        deadline = time.monotonic() + self.args.worker_timeout
        while not killed and not worker.exited():
            try:
                begun_now = worker.begun.get(timeout=0.05)
            except queue.Empty:
                if time.monotonic() > deadline:
                    worker.kill()
                    return TrialResult(target, "timeout", "inconsistent", "the worker hung")
                continue
            if begun_now >= target_at:  # the target operation has begun: kill somewhere inside it
                delay = self.rng.uniform(0.0, self.expected_seconds(plan[target_at]["timing"]))
                time.sleep(delay)
                worker.kill()
                killed = True
        code = worker.wait()
        worker_s = time.perf_counter() - t0
        entries = read_journal(journal)
        done = {int(e["done"]) for e in entries if "done" in e}
        begun = [int(e["begin"]) for e in entries if "begin" in e]
        for e in entries:
            if "done" in e:
                began = next(b["t"] for b in entries if b.get("begin") == e["done"])
                self.durations[plan[int(e["done"])]["timing"]].append(float(e["t"]) - float(began))
        inflight_at = next((i for i in begun if i not in done), None)
        inflight = plan[inflight_at] if inflight_at is not None else None
        committed = [plan[i] for i in sorted(done)]
        for op in committed:
            self.model.apply(op)
        if not killed:
            interrupted = "none"
        elif inflight is not None:
            interrupted = inflight["kind"]
        else:
            interrupted = "close" if len(done) == len(plan) else "between"
        result = TrialResult(plan[target_at]["kind"], interrupted, "ok", kill_after_s=round(delay or 0.0, 3))
        if not killed and code != 0:
            result.outcome, result.detail = "inconsistent", f"the worker failed (exit {code}); see workers.log"
        else:
            self.check(result, inflight)
        if inflight is not None:
            self.model.apply(inflight)  # finished by the check
        if result.outcome != "ok":
            keep = self.args.keep / f"trial-{number}-{result.outcome}"
            shutil.rmtree(keep, ignore_errors=True)
            shutil.copytree(self.store, keep, dirs_exist_ok=True)
            shutil.copy(journal, keep / "journal.jsonl")
            (keep / "plan.json").write_text(
                json.dumps({"plan": plan, "detail": result.detail, "database": self.url}, indent=1)
            )
            self.new_store()  # go on from a clean store
        journal.unlink(missing_ok=True)
        result.seconds = round(time.perf_counter() - t0, 2)
        result.check_seconds = round(result.seconds - worker_s, 2)
        return result

    def check(self, result: TrialResult, inflight: dict[str, Any] | None) -> None:
        with captured_warnings() as warnings:
            try:
                self.check_backend()
                engine = open_engine(self.store, self.embedder, url=self.url)
                try:
                    self.check_open(engine, result, inflight)
                finally:
                    engine.close()
            except Lost as exc:
                result.outcome, result.detail = "lost", str(exc)
            except Exception as exc:  # anything else a check or the finishing work raised
                result.outcome = "inconsistent"
                result.detail = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=6)}"
        result.warnings = warnings

    def check_backend(self) -> None:
        """The database's own checks, before the store is opened."""
        check_sqlite(self.store)

    def check_open(self, engine: Engine, result: TrialResult, inflight: dict[str, Any] | None) -> None:
        try:
            coll: Collection | None = engine.collection(COLLECTION)
        except CollectionNotFoundError:
            coll = None
        at = check_documents(engine, coll, self.model, inflight, self.pool, self.embedder, self.rng)
        gone = {d: set(v) for d, v in self.model.gone.items()}
        if inflight is not None:  # what the interrupted operation would remove, where it took effect
            after = self.model.copy()
            after.apply(inflight)
            for doc_id, versions in after.gone.items():
                gone.setdefault(doc_id, set()).update(v for v in versions if at.get(doc_id) != v)
        gone_markers = {marker(d, v) for d, vs in gone.items() for v in vs if at.get(d) != v}
        if coll is not None and at:
            live_words = [marker(d, v) for d, v in self.rng.sample(sorted(at.items()), min(3, len(at)))]
            result.index_source = check_indexes(engine, self.embedder, [*TOPIC_QUERIES[:2], *live_words])
            tree = check_tree(engine, coll, gone_markers)
            graph = check_graph(engine, coll, gone_markers)
            recent = dict(self.rng.sample(sorted(gone.items()), min(4, len(gone))))
            check_not_served(coll, recent, at, tree, graph)
        # finish the interrupted work, then the store holds its result
        coll = coll or engine.collection(COLLECTION, create=True)
        if inflight is not None:
            run_op(engine, coll, inflight, self.pool)
            after = self.model.copy()
            after.apply(inflight)
            at = check_documents(engine, coll, after, None, self.pool, self.embedder, self.rng)
            if at != after.versions:
                raise Failure(f"after finishing the {inflight['kind']}, documents are at {at}, not {after.versions}")
            if at:
                check_indexes(engine, self.embedder, TOPIC_QUERIES[2:])


def summary(results: list[TrialResult], kinds: list[str], seconds: float, args: argparse.Namespace) -> dict[str, Any]:
    per_kind = {
        kind: {
            "targeted": sum(1 for r in results if r.target == kind),
            "killed_in": sum(1 for r in results if r.interrupted == kind),
            "inconsistent": sum(1 for r in results if r.interrupted == kind and r.outcome == "inconsistent"),
            "lost_commits": sum(1 for r in results if r.interrupted == kind and r.outcome == "lost"),
        }
        for kind in [*kinds, "between", "close", "none"]
    }
    sources = [r.index_source for r in results if r.index_source]
    return {
        "trials": len(results),
        "kills": sum(1 for r in results if r.interrupted != "none"),
        "inconsistent_stores": sum(1 for r in results if r.outcome == "inconsistent"),
        "lost_commits": sum(1 for r in results if r.outcome == "lost"),
        "per_operation": per_kind,
        "indexes_loaded_from_saved_state": sum(1 for s in sources if s.startswith("state-")),
        "indexes_rebuilt": sum(1 for s in sources if not s.startswith("state-")),
        "trials_with_warnings": sum(1 for r in results if r.warnings),
        "failures": [
            {"target": r.target, "interrupted": r.interrupted, "outcome": r.outcome, "detail": r.detail}
            for r in results
            if r.outcome != "ok"
        ],
        "seconds": round(seconds, 1),
        "seconds_per_trial": round(seconds / max(1, len(results)), 2),
        "seed": args.seed,
        "workers": "spawned" if args.spawn else "forked",
    }


class MakeTrials(Protocol):
    def __call__(self, args: argparse.Namespace, work: Path, embedder: Embedder | None = None) -> Trials: ...


def run(args: argparse.Namespace, embedder: Embedder | None = None, make_trials: MakeTrials = Trials) -> dict[str, Any]:
    started = time.perf_counter()
    args.keep.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="waypost-crash-") as tmp:
        trials = make_trials(args, Path(tmp), embedder)
        results: list[TrialResult] = []
        kills = 0
        try:
            while kills < args.trials and len(results) < 2 * args.trials:
                number = len(results)
                targets = list(trials.kinds)
                random.Random(args.seed + number // len(targets)).shuffle(targets)
                target = targets[number % len(targets)]
                result = trials.trial(number, target)
                results.append(result)
                kills += result.interrupted != "none"
                if not args.json:
                    note = (
                        "" if result.outcome == "ok" else f"  {result.outcome.upper()}: {result.detail.splitlines()[0]}"
                    )
                    print(
                        f"trial {number:3d} target {result.target:<6} killed in {result.interrupted:<7} after "
                        f"{result.kill_after_s:5.2f}s  {result.seconds:5.1f}s (check {result.check_seconds:4.1f}s)  "
                        f"{result.index_source[:24]}{note}",
                        flush=True,
                    )
        finally:
            trials.launcher.close()
            if args.keep_log:
                shutil.copy(Path(tmp) / "workers.log", args.keep / "workers.log")
    return summary(results, trials.kinds, time.perf_counter() - started, args)


def arguments(description: str | None = __doc__) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ops", default=",".join(KINDS), help="target operations, comma-separated")
    parser.add_argument("--json", action="store_true", help="print the counts as JSON only")
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--sets", type=lambda v: v.split(","), default=["scifact", "hotpotqa-100"],
                        help="BEIR sets under --data whose first documents make the corpus")  # fmt: skip
    parser.add_argument("--spawn", action="store_true", help="a fresh interpreter per worker instead of a fork")
    parser.add_argument("--trials-per-store", type=int, default=25, help="then start again from an empty store")
    parser.add_argument("--worker-timeout", type=float, default=300.0)
    parser.add_argument("--keep", type=Path, default=Path(tempfile.gettempdir()) / "waypost-crash-failures",
                        help="where stores that fail a check are copied")  # fmt: skip
    parser.add_argument("--keep-log", action="store_true", help="copy the workers' log to --keep")
    parser.add_argument("--serve-forks", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    return parser


def main(
    argv: list[str] | None = None, embedder: Embedder | None = None, make_trials: MakeTrials = Trials,
    description: str | None = __doc__,
) -> dict[str, Any] | None:  # fmt: skip
    """Run the trials (``embedder``: an already-loaded all-MiniLM-L6-v2 for the checks, as tests have one;
    ``make_trials``: another backend's trials)."""
    args = arguments(description).parse_args(argv)
    if args.serve_forks:
        serve_forks(args.data, args.sets, "tree" in args.ops.split(","))
        return None
    if args.worker is not None:
        spawn_worker(args.data, args.sets, args.worker)
        return None
    results = run(args, embedder, make_trials)
    if args.json:
        print(json.dumps(results, indent=1))
    else:
        print()
        print(table_from(results))
        print(
            f"\n{results['trials']} trials, {results['inconsistent_stores']} inconsistent stores, "
            f"{results['lost_commits']} lost commits; indexes loaded from a saved state "
            f"{results['indexes_loaded_from_saved_state']}, rebuilt {results['indexes_rebuilt']}; "
            f"{results['seconds']} s ({results['seconds_per_trial']} s per trial, workers {results['workers']})"
        )
        for failure in results["failures"]:
            print(f"- {failure['outcome']} ({failure['interrupted']}): {failure['detail']}")
    return results


def table_from(results: dict[str, Any]) -> str:
    rows = [f"{'operation':<10} {'targeted':>8} {'killed in':>9} {'inconsistent':>12} {'lost':>5}"]
    for kind, c in results["per_operation"].items():
        if c["targeted"] or c["killed_in"]:
            rows.append(f"{kind:<10} {c['targeted']:>8} {c['killed_in']:>9} {c['inconsistent']:>12} "
                        f"{c['lost_commits']:>5}")  # fmt: skip
    rows.append(f"{'total':<10} {results['trials']:>8} {results['kills']:>9} {results['inconsistent_stores']:>12} "
                f"{results['lost_commits']:>5}")  # fmt: skip
    return "\n".join(rows)


if __name__ == "__main__":
    main()
