"""bench_crash.py's kill -9 trials against PostgreSQL: the worker ingests, replaces, deletes, merges and updates
trees and graphs with ``EngineConfig(store="postgresql://...")`` and is SIGKILLed at random moments.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_crash_postgres.py [--trials 100] [--seed 0]
        [--ops ingest,delete,merge,tree,graph] [--json] [--data ../shared/data]

It starts its own throwaway cluster (``waypost.store.pg_cluster``); each run of ``--trials-per-store`` trials
gets a fresh database and local working directory. After each kill, before the store is opened, it waits until
the killed worker's server sessions are gone (so nothing of it commits later) and checks the database itself:
- the change log's generations are contiguous from the log's floor to the collection's generation, each with
  its version row (``versions``);
- the log describes the tables: a document's last logged change is its current state (a delete: absent; an
  add or replace: present with exactly the chunk rows logged);
- no chunk without its document, no document without chunks.
Then bench_crash.py's checks run on the reopened engine (every acknowledged commit present and whole, indexes
loaded from the worker's saved state and caught up from the log equal to a rebuild, nothing deleted served,
the interrupted operation finished), and a late process's engine (an empty working directory: indexes rebuilt
from the database) must agree with the database too.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("NUMBA_THREADING_LAYER", "workqueue")
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import argparse
import contextlib
import shutil
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg

from waypost.base import Embedder
from waypost.engine import Engine
from waypost.store.pg_cluster import ThrowawayCluster, postgres_available, throwaway_cluster

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_crash
from crash_checks import COLLECTION, Failure, check_indexes

SESSIONS_GONE_S = 30.0  # how long a killed worker's server sessions may take to end


def wait_for_sessions(url: str, timeout: float = SESSIONS_GONE_S) -> None:
    """Until no other session is connected to the database (a killed client's backends end when they see its
    socket close; one that sent COMMIT commits first)."""
    deadline = time.monotonic() + timeout
    with psycopg.connect(url, autocommit=True) as conn:
        while True:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
                " AND backend_type = 'client backend'"
            ).fetchone()
            if row is None or int(row[0]) == 0:
                return
            if time.monotonic() > deadline:
                raise Failure(f"{row[0]} sessions of the killed worker still connected after {timeout} s")
            time.sleep(0.02)


def check_database(url: str) -> None:
    """The change log contiguous and in agreement with the documents and chunks tables."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET default_transaction_isolation = 'repeatable read'")
        with conn.transaction():
            head_row = conn.execute(
                "SELECT generation, log_floor FROM collections WHERE name = %s", (COLLECTION,)
            ).fetchone()
            if head_row is None:
                return  # killed before the collection was created
            head, floor = int(head_row[0]), int(head_row[1])
            logged = [int(r[0]) for r in conn.execute(
                "SELECT DISTINCT generation FROM change_log WHERE collection = %s ORDER BY 1", (COLLECTION,)
            )]  # fmt: skip
            if logged != list(range(floor + 1, head + 1)):
                raise Failure(f"change log generations {logged[:5]}..{logged[-5:]} are not {floor + 1}..{head}")
            versions = [int(r[0]) for r in conn.execute(
                "SELECT generation FROM versions WHERE collection = %s ORDER BY 1", (COLLECTION,)
            )]  # fmt: skip
            if versions != list(range(floor, head + 1)):
                raise Failure(f"version rows {versions[:5]}..{versions[-5:]} are not {floor}..{head}")
            last: dict[str, tuple[str, list[int]]] = {}
            for doc, op, added in conn.execute(
                "SELECT document_id, op, added_rows FROM change_log WHERE collection = %s ORDER BY generation, seq",
                (COLLECTION,),
            ):
                last[str(doc)] = (str(op), sorted(int(r) for r in added))
            rows: dict[str, list[int]] = {}
            for doc, row_id in conn.execute(
                "SELECT document_id, row_id FROM chunks WHERE collection = %s ORDER BY row_id", (COLLECTION,)
            ):
                rows.setdefault(str(doc), []).append(int(row_id))
            documents = {str(r[0]) for r in conn.execute("SELECT id FROM documents WHERE collection = %s",
                                                         (COLLECTION,))}  # fmt: skip
        if set(rows) != documents:
            raise Failure(f"documents without chunks or chunks without documents: {sorted(set(rows) ^ documents)}")
        for doc, (op, added) in last.items():
            if op == "delete" and doc in documents:
                raise Failure(f"the log's last word on {doc} is a delete, but it is stored")
            if op != "delete" and rows.get(doc) != added:
                raise Failure(f"the log says {doc} has rows {added}; the table holds {rows.get(doc)}")


class PostgresTrials(bench_crash.Trials):
    """The trials on a database of ``cluster`` per store; the store directory is the local working directory."""

    def __init__(
        self, args: argparse.Namespace, work: Path, embedder: Embedder | None, cluster: ThrowawayCluster
    ) -> None:
        self.cluster = cluster
        self.prefix = f"crash_{uuid.uuid4().hex[:6]}"
        super().__init__(args, work, embedder)
        self.url = cluster.create_database(f"{self.prefix}_0")
        self.databases = [f"{self.prefix}_0"]
        self.late_checks = 0

    def new_store(self) -> None:
        super().new_store()
        name = f"{self.prefix}_{self.stores}"
        self.url = self.cluster.create_database(name)
        self.databases.append(name)

    def check_backend(self) -> None:
        assert self.url is not None
        wait_for_sessions(self.url)
        check_database(self.url)

    def check_open(self, engine: Engine, result: bench_crash.TrialResult, inflight: dict[str, Any] | None) -> None:
        super().check_open(engine, result, inflight)
        check_database(self.url or "")
        late = self.work / f"late-{uuid.uuid4().hex[:8]}"  # another machine's empty working directory
        with bench_crash.open_engine(late, self.embedder, url=self.url) as other:
            if other.store.generation(COLLECTION) and other.store.snapshot(COLLECTION).row_ids.size:
                source = check_indexes(other, self.embedder, bench_crash.TOPIC_QUERIES[:2])
                if "rebuilt" not in source:
                    raise Failure(f"a late process's indexes came from {source!r}, not the database")
                self.late_checks += 1
        shutil.rmtree(late, ignore_errors=True)

    def check(self, result: bench_crash.TrialResult, inflight: dict[str, Any] | None) -> None:
        super().check(result, inflight)
        if result.outcome != "ok":  # the trial copies the working directory to --keep: the tables go with it
            dump_database(self.url or "", self.store / "database-dump")

    def drop(self) -> None:
        for name in self.databases:
            self.cluster.drop_database(name)


DUMPED = {
    "collections": "SELECT name, generation, log_floor, nonce FROM collections",
    "versions": "SELECT * FROM versions ORDER BY collection, generation",
    "change_log": "SELECT * FROM change_log ORDER BY seq",
    "log_consumers": "SELECT * FROM log_consumers",
    "documents": "SELECT collection, id, hash, metadata FROM documents ORDER BY collection, id",
    "chunks": 'SELECT row_id, collection, document_id, idx, start, "end" FROM chunks ORDER BY row_id',
}


def dump_database(url: str, folder: Path) -> None:
    """The bookkeeping tables as CSV (no texts or vectors), for diagnosing a failed trial."""
    folder.mkdir(parents=True, exist_ok=True)
    with psycopg.connect(url, autocommit=True) as conn, conn.cursor() as cur:
        for name, query in DUMPED.items():
            with (
                (folder / f"{name}.csv").open("wb") as out,
                cur.copy(f"COPY ({query}) TO STDOUT WITH CSV HEADER") as copy,
            ):
                for block in copy:
                    out.write(block)


def main(
    argv: list[str] | None = None, embedder: Embedder | None = None, cluster: ThrowawayCluster | None = None
) -> dict[str, Any] | None:
    """Run the trials on ``cluster`` (a test's) or on a throwaway cluster of their own."""
    made: list[PostgresTrials] = []

    def make(args: argparse.Namespace, work: Path, embedder: Embedder | None = None) -> PostgresTrials:
        assert cluster is not None
        made.append(PostgresTrials(args, work, embedder, cluster))
        return made[-1]

    with contextlib.ExitStack() as stack:
        if cluster is None:
            if not postgres_available():
                raise SystemExit("PostgreSQL 15 with pgvector is not installed (scripts/install_postgres.sh)")
            cluster = stack.enter_context(throwaway_cluster())
        results = bench_crash.main(argv, embedder, make, description=__doc__)
        if results is not None and made:
            results["backend"] = "postgresql"
            results["late_process_checks"] = made[0].late_checks
            made[0].drop()
            if "--json" not in (argv or sys.argv[1:]):
                print(f"PostgreSQL: a late process's indexes (rebuilt from the database) agreed with it "
                      f"{made[0].late_checks} times")  # fmt: skip
    return results


if __name__ == "__main__":
    main()
