"""What a server is started with; read from the command line or given in code, never from the environment."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from waypost.engine import EngineConfig
from waypost.store.backend import is_database_url

LOOPBACK = ("127.0.0.1", "::1", "localhost")
CONTROL_SCHEMA = "waypost_control"


@dataclass
class ServerConfig:
    root: Path  # control.sqlite, tenants/<tenant id>/ (each tenant's store), spool/ (uploads of unfinished jobs)
    engine: EngineConfig = field(default_factory=EngineConfig)  # every tenant's engine is made from this
    database: str | None = None  # postgresql://...: control plane and tenants' stores there, a schema each
    auth: bool = True  # False only on a loopback address (``waypost serve --no-auth``): one local tenant
    host: str = "127.0.0.1"
    cors_origins: tuple[str, ...] = ()  # closed by default
    max_file_bytes: int = 32 * 1024 * 1024
    max_upload_bytes: int = 128 * 1024 * 1024  # one request, all files together
    max_request_bytes: int = 1024 * 1024  # any other /v1 request body (a query, its filter, a feedback)
    max_files: int = 1000
    job_workers: int = 1  # ingestion runs on its own threads, apart from request handling
    max_job_attempts: int = 3  # a job whose worker died this often (kill -9 mid-run) fails instead of resuming
    job_lease_s: float = 60.0  # a server holds its jobs this long between renewals; then another may take them
    heartbeat_s: float = 10.0  # server-sent events: a comment line this often while nothing else is sent
    query_threads: int = 8  # retrieval and answers run on a thread pool of this size
    max_k: int = 100

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        if self.database is not None and not is_database_url(self.database):
            raise ValueError("the server's database is a postgresql:// URL")
        if not self.auth and self.host not in LOOPBACK:
            raise ValueError(f"--no-auth is only allowed on a loopback address, not {self.host!r}")

    @property
    def control_location(self) -> str | Path:
        """Where tenants, key hashes and jobs live: the database's ``waypost_control`` schema, or ``root``."""
        from waypost.store.backend import in_schema

        return in_schema(self.database, CONTROL_SCHEMA) if self.database else self.root
