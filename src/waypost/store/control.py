"""The server's control plane: tenants, their API keys and ingestion jobs, as protocols with typed records.

A server keeps these apart from any tenant's documents (one control store, one document store per tenant).
``waypost.store.backend.open_control`` gives the embedded implementation; every backend passes
``tests/conformance/control_suite.py``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

SCOPES = ("read", "write", "admin")  # each includes the ones before it

# Job states in the only order they may move; the last three end a job.
JOB_STATES = ("queued", "parsing", "chunking", "embedding", "indexing", "succeeded", "failed", "cancelled")
TERMINAL_STATES = frozenset({"succeeded", "failed", "cancelled"})


def claimable(job: JobRecord, owner: str, now: float, take_from: str = "") -> bool:
    """Whether ``owner`` may hold ``job`` now (``JobLog.claim``'s rule, shared by every backend)."""
    if job.finished:
        return False
    return job.owner in ("", owner) or (take_from != "" and job.owner == take_from) or job.lease_until <= now


def state_rank(state: str) -> int:
    """Where ``state`` stands in a job's life; the terminal states share the last rank."""
    if state in TERMINAL_STATES:
        return len(JOB_STATES) - len(TERMINAL_STATES)
    return JOB_STATES.index(state)


class ControlError(Exception):
    """A control-plane rule was broken (a name taken, a job moved backwards); the message says which."""


@dataclass(frozen=True)
class Tenant:
    id: str
    name: str
    created_at: float


@dataclass(frozen=True)
class ApiKey:
    id: str  # the public part of the token, shown in lists and logs
    tenant_id: str
    scopes: tuple[str, ...]
    label: str
    created_at: float
    revoked_at: float | None = None

    def allows(self, scope: str) -> bool:
        """Whether this key may act with ``scope`` (admin implies write, write implies read)."""
        held = max((SCOPES.index(s) for s in self.scopes if s in SCOPES), default=-1)
        return held >= SCOPES.index(scope)


@dataclass
class JobRecord:
    id: str
    tenant_id: str
    collection: str
    state: str
    created_at: float
    updated_at: float
    files: list[dict[str, Any]] = field(default_factory=list)  # {"name", "path", "bytes"} of spooled uploads
    counts: dict[str, int] = field(default_factory=dict)
    errors: list[dict[str, str]] = field(default_factory=list)  # {"source", "error"} per failed file or record
    reason: str = ""  # why it failed or was cancelled
    idempotency_key: str | None = None
    request_hash: str = ""
    attempts: int = 0  # how many times a worker started it (a restart resumes it)
    cancel_requested: bool = False
    retry_of: str | None = None
    owner: str = ""  # the server process that runs it ("host/pid/nonce"; see ``JobLog.claim``)
    lease_until: float = 0.0  # the owner's hold ends then unless renewed

    @property
    def finished(self) -> bool:
        return self.state in TERMINAL_STATES

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "collection": self.collection,
            "state": self.state,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "files": [{"name": f["name"], "bytes": f["bytes"]} for f in self.files],
            "counts": dict(self.counts),
            "errors": list(self.errors),
            "reason": self.reason,
            "attempts": self.attempts,
            "cancel_requested": self.cancel_requested,
            "retry_of": self.retry_of,
        }


# What a job stores beside its columns (id, tenant, collection, state, times, idempotency key), as one document.
JOB_BODY_FIELDS = (
    "files",
    "counts",
    "errors",
    "reason",
    "request_hash",
    "attempts",
    "cancel_requested",
    "retry_of",
    "owner",
    "lease_until",
)


def job_body(job: JobRecord) -> dict[str, Any]:
    return {name: getattr(job, name) for name in JOB_BODY_FIELDS}


def job_from_row(row: Sequence[Any], body: Mapping[str, Any]) -> JobRecord:
    """A job from its columns (id, tenant, collection, state, created, updated, body, key) and its decoded body;
    fields a newer server added to the body are ignored."""
    job_id, tenant_id, collection, state, created, updated, _body, key = row[:8]
    fields = {k: v for k, v in body.items() if k in JOB_BODY_FIELDS}
    return JobRecord(job_id, tenant_id, collection, state, created, updated, idempotency_key=key, **fields)


class TenantDirectory(Protocol):
    """Tenants and the hashes of their API keys (never the keys themselves)."""

    def create_tenant(self, tenant: Tenant) -> Tenant:
        """Add a tenant; a taken name raises ``ControlError``."""
        ...

    def tenant(self, tenant_id: str) -> Tenant | None: ...

    def tenant_by_name(self, name: str) -> Tenant | None: ...

    def tenants(self) -> list[Tenant]: ...

    def add_key(self, key: ApiKey, secret_hash: str) -> None: ...

    def key(self, key_id: str) -> tuple[ApiKey, str] | None:
        """The key with that id and its secret's hash, revoked or not."""
        ...

    def keys(self, tenant_id: str) -> list[ApiKey]: ...

    def revoke_key(self, key_id: str, at: float) -> bool:
        """Revoke a key; False if there is no such key or it was already revoked."""
        ...


class JobLog(Protocol):
    """Ingestion jobs, durable: a restarted server finds every unfinished one."""

    def create_job(self, job: JobRecord) -> tuple[JobRecord, bool]:
        """Store a new job, or return the tenant's job with the same idempotency key; the flag says
        whether it was created."""
        ...

    def job(self, tenant_id: str, job_id: str) -> JobRecord | None:
        """That tenant's job; another tenant's id is ``None``, as an unknown one."""
        ...

    def jobs(self, tenant_id: str, limit: int = 50, offset: int = 0) -> list[JobRecord]:
        """Newest first."""
        ...

    def advance(
        self,
        job_id: str,
        state: str | None = None,
        counts: Mapping[str, int] | None = None,
        errors: Sequence[Mapping[str, str]] | None = None,
        reason: str | None = None,
        at: float | None = None,
    ) -> JobRecord:
        """Move a job forward and update its counts; a state before the current one, or any change to a
        finished job, raises ``ControlError``. ``errors`` replaces the list."""
        ...

    def start_attempt(self, job_id: str) -> JobRecord:
        """Count one more worker start; returns the job."""
        ...

    def request_cancel(self, tenant_id: str, job_id: str) -> JobRecord | None: ...

    def unfinished(self) -> list[JobRecord]:
        """Every tenant's jobs not yet succeeded, failed or cancelled, oldest first."""
        ...

    def claim(self, job_id: str, owner: str, lease_until: float, now: float, take_from: str = "") -> JobRecord | None:
        """Hold an unfinished job for ``owner`` until ``lease_until`` (also: renew its own hold). Refused
        (``None``) while another owner's lease runs past ``now``, unless that owner is ``take_from`` (a
        process the caller knows is dead); a finished or unknown job is ``None`` too."""
        ...


class ControlStore(TenantDirectory, JobLog, Protocol):
    """Both halves of the control plane, as one store provides them."""
