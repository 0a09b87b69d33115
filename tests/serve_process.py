"""``waypost serve`` as a real process on 127.0.0.1, for tests that kill it: tenants and keys made with the
``waypost`` command first, then started, SIGKILLed and restarted on the same root."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

import httpx

from tests.llama_server import free_port

TERMINAL = ("succeeded", "failed", "cancelled")
RUNNING = ("parsing", "chunking", "embedding", "indexing")


def child_env() -> dict[str, str]:
    return {**os.environ, "OPENBLAS_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"}


def waypost(*args: str | Path) -> str:
    """Run the ``waypost`` command; its stdout."""
    done = subprocess.run(
        [sys.executable, "-m", "waypost.cli", *map(str, args)],
        capture_output=True, text=True, env=child_env(), timeout=120,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"waypost {' '.join(map(str, args))} failed: {done.stderr}")
    return done.stdout


class ServeProcess:
    def __init__(self, root: Path, *extra: str) -> None:
        self.root = root
        self.extra = extra
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    def key(self, tenant: str, scope: str) -> str:
        """A new key (its token) for ``tenant``, made with the CLI; the tenant too if it is new."""
        tenants = json.loads(waypost("tenant", "list", "--root", self.root, "--json"))
        if tenant not in {t["name"] for t in tenants}:
            waypost("tenant", "create", tenant, "--root", self.root)
        token: str = json.loads(waypost("key", "create", tenant, "--scope", scope, "--root", self.root, "--json"))[
            "token"
        ]
        return token

    def start(self, timeout: float = 180.0) -> None:
        self._log = (self.root.parent / f"serve-{self.port}.log").open("ab")
        cmd = [sys.executable, "-m", "waypost.cli", "serve", "--root", str(self.root), "--port", str(self.port),
               *self.extra]  # fmt: skip
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=child_env())
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"waypost serve exited with {self.proc.returncode}: {self.log_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/readyz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"waypost serve did not become ready: {self.log_text()[-2000:]}")

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs, as when the machine loses power or the OOM killer strikes."""
        if self.proc is not None:
            if self.proc.poll() is None:
                os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
            self.proc = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=30)
        self.kill()  # what a graceful stop left running

    def log_text(self) -> str:
        logs = sorted(self.root.parent.glob("serve-*.log"))
        return "".join(p.read_text(errors="replace") for p in logs)

    def client(self, token: str, timeout: float = 60.0) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {token}"}, timeout=timeout)

    def wait(self, token: str, job_id: str, states: tuple[str, ...] = TERMINAL, timeout: float = 180.0) -> Any:
        """The job once it is in one of ``states`` (or as it is when ``timeout`` runs out)."""
        deadline = time.monotonic() + timeout
        with self.client(token) as c:
            while True:
                job = c.get(f"/v1/jobs/{job_id}").json()
                if job["state"] in states or time.monotonic() > deadline:
                    return job
                time.sleep(0.05)
