"""The control plane (tenants, API key hashes, ingestion jobs) in one SQLite file beside the tenants' stores."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from waypost.store.control import (
    JOB_STATES,
    ApiKey,
    ControlError,
    JobRecord,
    Tenant,
    claimable,
    job_body,
    job_from_row,
    state_rank,
)
from waypost.store.tables import SideTables

SCHEMA = """
CREATE TABLE IF NOT EXISTS tenants (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS api_keys (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants(id),
    secret_hash TEXT NOT NULL,
    scopes TEXT NOT NULL,
    label TEXT NOT NULL,
    created_at REAL NOT NULL,
    revoked_at REAL
);
CREATE INDEX IF NOT EXISTS api_keys_by_tenant ON api_keys(tenant_id);
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    collection TEXT NOT NULL,
    state TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    body TEXT NOT NULL,
    idempotency_key TEXT,
    seq INTEGER NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS jobs_idempotent ON jobs(tenant_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS jobs_by_tenant ON jobs(tenant_id, seq);
CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs(state, seq);
"""


def _job_row(job: JobRecord) -> tuple[Any, ...]:
    body = json.dumps(job_body(job), sort_keys=True)
    return (job.id, job.tenant_id, job.collection, job.state, job.created_at, job.updated_at, body, job.idempotency_key)


def _job(row: sqlite3.Row | tuple[Any, ...]) -> JobRecord:
    return job_from_row(row, json.loads(row[6]))


_JOB_COLUMNS = "id, tenant_id, collection, state, created_at, updated_at, body, idempotency_key"


class SQLiteControl(SideTables):
    """``TenantDirectory`` and ``JobLog`` in one file (``control.sqlite`` in the server's directory)."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = self._connect()
        try:
            conn.executescript(SCHEMA)
        finally:
            conn.close()

    # tenants and keys
    def create_tenant(self, tenant: Tenant) -> Tenant:
        with self._transaction(write=True) as conn:
            try:
                conn.execute("INSERT INTO tenants VALUES (?,?,?)", (tenant.id, tenant.name, tenant.created_at))
            except sqlite3.IntegrityError:
                raise ControlError(f"a tenant named {tenant.name!r} already exists") from None
        return tenant

    def tenant(self, tenant_id: str) -> Tenant | None:
        with self._transaction(write=False) as conn:
            row = conn.execute("SELECT id, name, created_at FROM tenants WHERE id=?", (tenant_id,)).fetchone()
        return Tenant(*row) if row else None

    def tenant_by_name(self, name: str) -> Tenant | None:
        with self._transaction(write=False) as conn:
            row = conn.execute("SELECT id, name, created_at FROM tenants WHERE name=?", (name,)).fetchone()
        return Tenant(*row) if row else None

    def tenants(self) -> list[Tenant]:
        with self._transaction(write=False) as conn:
            rows = conn.execute("SELECT id, name, created_at FROM tenants ORDER BY created_at, id").fetchall()
        return [Tenant(*r) for r in rows]

    def add_key(self, key: ApiKey, secret_hash: str) -> None:
        with self._transaction(write=True) as conn:
            if conn.execute("SELECT 1 FROM tenants WHERE id=?", (key.tenant_id,)).fetchone() is None:
                raise ControlError(f"no tenant {key.tenant_id!r}")
            conn.execute(
                "INSERT INTO api_keys VALUES (?,?,?,?,?,?,?)",
                (key.id, key.tenant_id, secret_hash, ",".join(key.scopes), key.label, key.created_at, key.revoked_at),
            )

    @staticmethod
    def _key(row: tuple[Any, ...]) -> ApiKey:
        key_id, tenant_id, scopes, label, created, revoked = row
        return ApiKey(key_id, tenant_id, tuple(s for s in scopes.split(",") if s), label, created, revoked)

    def key(self, key_id: str) -> tuple[ApiKey, str] | None:
        with self._transaction(write=False) as conn:
            row = conn.execute(
                "SELECT id, tenant_id, scopes, label, created_at, revoked_at, secret_hash FROM api_keys WHERE id=?",
                (key_id,),
            ).fetchone()
        return (self._key(row[:6]), row[6]) if row else None

    def keys(self, tenant_id: str) -> list[ApiKey]:
        with self._transaction(write=False) as conn:
            rows = conn.execute(
                "SELECT id, tenant_id, scopes, label, created_at, revoked_at FROM api_keys WHERE tenant_id=?"
                " ORDER BY created_at, id",
                (tenant_id,),
            ).fetchall()
        return [self._key(r) for r in rows]

    def revoke_key(self, key_id: str, at: float) -> bool:
        with self._transaction(write=True) as conn:
            cur = conn.execute("UPDATE api_keys SET revoked_at=? WHERE id=? AND revoked_at IS NULL", (at, key_id))
            return cur.rowcount > 0

    # jobs
    def create_job(self, job: JobRecord) -> tuple[JobRecord, bool]:
        with self._transaction(write=True) as conn:
            if job.idempotency_key is not None:
                row = conn.execute(
                    f"SELECT {_JOB_COLUMNS} FROM jobs WHERE tenant_id=? AND idempotency_key=?",
                    (job.tenant_id, job.idempotency_key),
                ).fetchone()
                if row is not None:
                    return _job(row), False
            seq = conn.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM jobs").fetchone()[0]
            conn.execute(f"INSERT INTO jobs({_JOB_COLUMNS}, seq) VALUES (?,?,?,?,?,?,?,?,?)", (*_job_row(job), seq))
        return job, True

    def job(self, tenant_id: str, job_id: str) -> JobRecord | None:
        with self._transaction(write=False) as conn:
            row = conn.execute(
                f"SELECT {_JOB_COLUMNS} FROM jobs WHERE id=? AND tenant_id=?", (job_id, tenant_id)
            ).fetchone()
        return _job(row) if row else None

    def jobs(self, tenant_id: str, limit: int = 50, offset: int = 0) -> list[JobRecord]:
        with self._transaction(write=False) as conn:
            rows = conn.execute(
                f"SELECT {_JOB_COLUMNS} FROM jobs WHERE tenant_id=? ORDER BY seq DESC LIMIT ? OFFSET ?",
                (tenant_id, max(0, limit), max(0, offset)),
            ).fetchall()
        return [_job(r) for r in rows]

    def _load(self, conn: sqlite3.Connection, job_id: str) -> JobRecord:
        row = conn.execute(f"SELECT {_JOB_COLUMNS} FROM jobs WHERE id=?", (job_id,)).fetchone()
        if row is None:
            raise ControlError(f"no job {job_id!r}")
        return _job(row)

    def _save(self, conn: sqlite3.Connection, job: JobRecord) -> None:
        conn.execute(
            "UPDATE jobs SET state=?, updated_at=?, body=? WHERE id=?",
            (job.state, job.updated_at, _job_row(job)[6], job.id),
        )

    def advance(
        self,
        job_id: str,
        state: str | None = None,
        counts: Mapping[str, int] | None = None,
        errors: Sequence[Mapping[str, str]] | None = None,
        reason: str | None = None,
        at: float | None = None,
    ) -> JobRecord:
        with self._transaction(write=True) as conn:
            job = self._load(conn, job_id)
            if job.finished:
                raise ControlError(f"job {job_id} already {job.state}")
            if state is not None:
                if state not in JOB_STATES:
                    raise ControlError(f"unknown job state {state!r}")
                if state_rank(state) < state_rank(job.state):
                    raise ControlError(f"job {job_id} cannot move back from {job.state} to {state}")
                job.state = state
            if counts is not None:
                job.counts.update({k: int(v) for k, v in counts.items()})
            if errors is not None:
                job.errors = [dict(e) for e in errors]
            if reason is not None:
                job.reason = reason
            job.updated_at = time.time() if at is None else at
            self._save(conn, job)
        return job

    def start_attempt(self, job_id: str) -> JobRecord:
        with self._transaction(write=True) as conn:
            job = self._load(conn, job_id)
            job.attempts += 1
            job.updated_at = time.time()
            self._save(conn, job)
        return job

    def request_cancel(self, tenant_id: str, job_id: str) -> JobRecord | None:
        with self._transaction(write=True) as conn:
            row = conn.execute(
                f"SELECT {_JOB_COLUMNS} FROM jobs WHERE id=? AND tenant_id=?", (job_id, tenant_id)
            ).fetchone()
            if row is None:
                return None
            job = _job(row)
            if not job.finished and not job.cancel_requested:
                job.cancel_requested = True
                job.updated_at = time.time()
                self._save(conn, job)
        return job

    def unfinished(self) -> list[JobRecord]:
        with self._transaction(write=False) as conn:
            rows = conn.execute(
                f"SELECT {_JOB_COLUMNS} FROM jobs WHERE state NOT IN ('succeeded','failed','cancelled') ORDER BY seq"
            ).fetchall()
        return [_job(r) for r in rows]

    def claim(self, job_id: str, owner: str, lease_until: float, now: float, take_from: str = "") -> JobRecord | None:
        with self._transaction(write=True) as conn:
            row = conn.execute(f"SELECT {_JOB_COLUMNS} FROM jobs WHERE id=?", (job_id,)).fetchone()
            if row is None:
                return None
            job = _job(row)
            if not claimable(job, owner, now, take_from):
                return None
            job.owner, job.lease_until = owner, lease_until
            self._save(conn, job)
        return job
