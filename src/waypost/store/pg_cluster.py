"""A throwaway PostgreSQL cluster on 127.0.0.1 for tests and benchmarks (``scripts/install_postgres.sh``
installs Debian's PostgreSQL 15 and builds pgvector for it). Run as root, the server runs as the ``postgres``
user, which PostgreSQL requires."""

from __future__ import annotations

import contextlib
import logging
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

log = logging.getLogger(__name__)

PG_BIN = Path("/usr/lib/postgresql/15/bin")
SUPERUSER = "waypost"


def postgres_available(bin_dir: Path = PG_BIN) -> bool:
    """Whether the server binaries and the pgvector extension are installed."""
    if not (bin_dir / "postgres").exists() or not (bin_dir / "initdb").exists():
        return False
    return any(Path("/usr/share/postgresql/15/extension").glob("vector--0.8*.sql"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ThrowawayCluster:
    """``initdb`` into a temporary directory, ``start()`` on a free loopback port, ``stop()`` and remove it.
    ``url(db)`` is a ``postgresql://`` URL; ``create_database(name)`` makes a fresh database with pgvector."""

    def __init__(self, bin_dir: Path = PG_BIN, port: int | None = None) -> None:
        self.bin_dir = bin_dir
        self.port = port or _free_port()
        self.root = Path(tempfile.mkdtemp(prefix="waypost-pg-"))
        self.data = self.root / "data"
        self._as_postgres = os.geteuid() == 0
        self._started = False

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.bin_dir / args[0]), *args[1:]]
        if self._as_postgres:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        return subprocess.run(cmd, check=check, capture_output=True, text=True, timeout=120)

    def init(self) -> None:
        if self._as_postgres:
            self.root.chmod(0o755)
            user = pwd.getpwnam("postgres")
            os.chown(self.root, user.pw_uid, user.pw_gid)
        self._run("initdb", "-D", str(self.data), "-U", SUPERUSER, "--auth=trust", "-E", "UTF8", "--no-sync")

    def start(self, fsync: bool = True) -> None:
        """Start the server; ``fsync=False`` is for benchmarks that never crash it on purpose."""
        if not self.data.exists():
            self.init()
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c max_connections=200 "
            f"-c shared_buffers=256MB -c fsync={'on' if fsync else 'off'}"
        )
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.root / "server.log"), "-w", "start")
        self._started = True

    def stop(self, mode: str = "fast") -> None:
        """``mode``: smart, fast or immediate (a crash: the next start recovers from the WAL)."""
        if self._started:
            self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop", check=False)
            self._started = False

    def restart(self, mode: str = "fast") -> None:
        self.stop(mode)
        self.start()

    def remove(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str, extension: bool = True) -> str:
        """A new empty database, with the vector extension unless ``extension`` is False; returns its URL."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        if extension:
            with psycopg.connect(self.url(name), autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        return self.url(name)

    def drop_database(self, name: str) -> None:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def log_tail(self, lines: int = 40) -> str:
        with contextlib.suppress(OSError):
            return "\n".join((self.root / "server.log").read_text(errors="replace").splitlines()[-lines:])
        return ""


@contextlib.contextmanager
def throwaway_cluster(fsync: bool = True) -> Iterator[ThrowawayCluster]:
    cluster = ThrowawayCluster()
    started = time.perf_counter()
    cluster.start(fsync=fsync)
    log.info("PostgreSQL cluster on 127.0.0.1:%d in %.1f s", cluster.port, time.perf_counter() - started)
    try:
        yield cluster
    finally:
        cluster.remove()
