"""A real waypost server on 127.0.0.1 for tests: uvicorn on a thread of the test process (so it shares the
session's embedding model), two tenants with a key of every scope, and helpers to wait for jobs."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from tests.llama_server import free_port
from waypost.base import Embedder
from waypost.embeddings.factory import _shared as shared_embedders
from waypost.embeddings.factory import share_embedder, unshare_embedder
from waypost.engine import EngineConfig
from waypost.server.app import create_app
from waypost.server.auth import create_key, create_tenant
from waypost.server.config import ServerConfig
from waypost.store.backend import open_control

TERMINAL = ("succeeded", "failed", "cancelled")


@dataclass
class LiveServer:
    url: str
    root: Path
    keys: dict[str, str] = field(default_factory=dict)  # "alpha:write" -> token
    config: ServerConfig | None = None

    def headers(self, who: str) -> dict[str, str]:
        """``who`` is ``tenant:scope``, e.g. ``alpha:write``."""
        return {"Authorization": f"Bearer {self.keys[who]}"}

    def client(self, who: str | None = None, timeout: float = 60.0) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=self.headers(who) if who else {}, timeout=timeout)

    def wait_job(self, who: str, job_id: str, timeout: float = 120.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self.client(who) as c:
            while True:
                job: dict[str, Any] = c.get(f"/v1/jobs/{job_id}").json()
                if job["state"] in TERMINAL or time.monotonic() > deadline:
                    return job
                time.sleep(0.1)

    def add_key(self, tenant: str, scope: str) -> str:
        control = open_control(self.config.control_location if self.config else self.root)
        found = control.tenant_by_name(tenant) or create_tenant(control, tenant)
        return create_key(control, found, scope).token


@contextmanager
def live_server(root: Path, embedder: Embedder, **config: Any) -> Iterator[LiveServer]:
    """Serve ``root`` on a free loopback port until the block ends; tenants alpha and beta, each with keys
    ``read``, ``write`` and ``admin``."""
    nested = shared_embedders.get(embedder.model_id) is embedder  # a server started inside another's lifetime
    share_embedder(embedder)
    control = open_control(ServerConfig(root=root, database=config.get("database")).control_location)
    keys: dict[str, str] = {}
    for name in ("alpha", "beta"):
        tenant = control.tenant_by_name(name) or create_tenant(control, name)
        for scope in ("read", "write", "admin"):
            keys[f"{name}:{scope}"] = create_key(control, tenant, scope).token
    engine = config.pop("engine", EngineConfig(chunk_tokens=64))
    server_config = ServerConfig(root=root, engine=engine, heartbeat_s=config.pop("heartbeat_s", 1.0), **config)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(server_config), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="waypost-test-server", daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.05)
    try:
        yield LiveServer(url, root, keys, server_config)
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        if not nested:  # the outer server's tenants may still open engines with it
            unshare_embedder(embedder.model_id)
