"""The control plane (tenants, API key hashes, ingestion jobs) in PostgreSQL, as ``sqlite_control``; several
server processes may share it. A job moves only forward: every change reads the job ``FOR UPDATE`` (a row
lock held to commit), so two processes never both act on the state they read; an idempotency key is unique
per tenant (a unique index: two processes creating with one key get one job)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

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
from waypost.store.pg_base import PgDatabase, release_database

MIGRATIONS = [
    """
    CREATE TABLE tenants (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        created_at DOUBLE PRECISION NOT NULL
    );
    CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL REFERENCES tenants(id),
        secret_hash TEXT NOT NULL,
        scopes TEXT NOT NULL,
        label TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        revoked_at DOUBLE PRECISION
    );
    CREATE INDEX api_keys_by_tenant ON api_keys(tenant_id);
    CREATE TABLE jobs (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        collection TEXT NOT NULL,
        state TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL,
        body JSONB NOT NULL,
        idempotency_key TEXT,
        seq BIGSERIAL NOT NULL
    );
    CREATE UNIQUE INDEX jobs_idempotent ON jobs(tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
    CREATE INDEX jobs_by_tenant ON jobs(tenant_id, seq);
    CREATE INDEX jobs_by_state ON jobs(state, seq);
    """
]

_JOB_COLUMNS = "id, tenant_id, collection, state, created_at, updated_at, body, idempotency_key"
_UNFINISHED = "state NOT IN ('succeeded','failed','cancelled')"

Conn = psycopg.Connection[Any]


def _body(job: JobRecord) -> Jsonb:
    return Jsonb(job_body(job))


def _job(row: tuple[Any, ...]) -> JobRecord:
    return job_from_row(row, row[6])


def _key(row: tuple[Any, ...]) -> ApiKey:
    key_id, tenant_id, scopes, label, created, revoked = row
    return ApiKey(key_id, tenant_id, tuple(s for s in scopes.split(",") if s), label, created, revoked)


def _lock_job(conn: Conn, job_id: str) -> JobRecord:
    row = conn.execute(f"SELECT {_JOB_COLUMNS} FROM jobs WHERE id=%s FOR UPDATE", (job_id,)).fetchone()
    if row is None:
        raise ControlError(f"no job {job_id!r}")
    return _job(row)


def _save(conn: Conn, job: JobRecord) -> None:
    conn.execute(
        "UPDATE jobs SET state=%s, updated_at=%s, body=%s WHERE id=%s", (job.state, job.updated_at, _body(job), job.id)
    )


class PostgresControl:
    """``TenantDirectory`` and ``JobLog`` in one schema of a PostgreSQL database. It holds one reference to
    ``db`` (from ``open_database``), given back by ``close``."""

    def __init__(self, db: PgDatabase) -> None:
        self.db = db
        self.location = db.location
        db.migrate("control", MIGRATIONS)

    def close(self) -> None:
        release_database(self.db)

    # tenants and keys
    def create_tenant(self, tenant: Tenant) -> Tenant:
        def write(conn: Conn) -> None:
            try:
                conn.execute("INSERT INTO tenants VALUES (%s,%s,%s)", (tenant.id, tenant.name, tenant.created_at))
            except psycopg.errors.UniqueViolation:
                raise ControlError(f"a tenant named {tenant.name!r} already exists") from None

        self.db.run(write, retry=False)
        return tenant

    def tenant(self, tenant_id: str) -> Tenant | None:
        row = self.db.run(
            lambda conn: conn.execute("SELECT id, name, created_at FROM tenants WHERE id=%s", (tenant_id,)).fetchone()
        )
        return Tenant(*row) if row else None

    def tenant_by_name(self, name: str) -> Tenant | None:
        row = self.db.run(
            lambda conn: conn.execute("SELECT id, name, created_at FROM tenants WHERE name=%s", (name,)).fetchone()
        )
        return Tenant(*row) if row else None

    def tenants(self) -> list[Tenant]:
        rows = self.db.run(
            lambda conn: conn.execute("SELECT id, name, created_at FROM tenants ORDER BY created_at, id").fetchall()
        )
        return [Tenant(*r) for r in rows]

    def add_key(self, key: ApiKey, secret_hash: str) -> None:
        def write(conn: Conn) -> None:
            if conn.execute("SELECT 1 FROM tenants WHERE id=%s FOR SHARE", (key.tenant_id,)).fetchone() is None:
                raise ControlError(f"no tenant {key.tenant_id!r}")
            conn.execute(
                "INSERT INTO api_keys VALUES (%s,%s,%s,%s,%s,%s,%s)",
                (key.id, key.tenant_id, secret_hash, ",".join(key.scopes), key.label, key.created_at, key.revoked_at),
            )

        self.db.run(write, retry=False)

    def key(self, key_id: str) -> tuple[ApiKey, str] | None:
        row = self.db.run(
            lambda conn: conn.execute(
                "SELECT id, tenant_id, scopes, label, created_at, revoked_at, secret_hash FROM api_keys WHERE id=%s",
                (key_id,),
            ).fetchone()
        )
        return (_key(row[:6]), row[6]) if row else None

    def keys(self, tenant_id: str) -> list[ApiKey]:
        rows = self.db.run(
            lambda conn: conn.execute(
                "SELECT id, tenant_id, scopes, label, created_at, revoked_at FROM api_keys WHERE tenant_id=%s"
                " ORDER BY created_at, id",
                (tenant_id,),
            ).fetchall()
        )
        return [_key(r) for r in rows]

    def revoke_key(self, key_id: str, at: float) -> bool:
        def write(conn: Conn) -> bool:
            cur = conn.execute("UPDATE api_keys SET revoked_at=%s WHERE id=%s AND revoked_at IS NULL", (at, key_id))
            return cur.rowcount > 0

        return self.db.run(write, retry=False)

    # jobs
    def create_job(self, job: JobRecord) -> tuple[JobRecord, bool]:
        def write(conn: Conn) -> tuple[JobRecord, bool]:
            row = conn.execute(
                f"INSERT INTO jobs({_JOB_COLUMNS}) VALUES (%s,%s,%s,%s,%s,%s,%s,%s)"
                " ON CONFLICT (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING RETURNING id",
                (job.id, job.tenant_id, job.collection, job.state, job.created_at, job.updated_at, _body(job),
                 job.idempotency_key),
            ).fetchone()  # fmt: skip
            if row is not None:
                return job, True
            # the key is taken: that job (committed, or waited for by the insert above) is the answer
            found = conn.execute(
                f"SELECT {_JOB_COLUMNS} FROM jobs WHERE tenant_id=%s AND idempotency_key=%s",
                (job.tenant_id, job.idempotency_key),
            ).fetchone()
            if found is None:  # pragma: no cover - the conflicting row was deleted meanwhile (jobs never are)
                raise ControlError(f"job with idempotency key {job.idempotency_key!r} vanished; retry")
            return _job(found), False

        return self.db.run(write, retry=False)

    def job(self, tenant_id: str, job_id: str) -> JobRecord | None:
        row = self.db.run(
            lambda conn: conn.execute(
                f"SELECT {_JOB_COLUMNS} FROM jobs WHERE id=%s AND tenant_id=%s", (job_id, tenant_id)
            ).fetchone()
        )
        return _job(row) if row else None

    def jobs(self, tenant_id: str, limit: int = 50, offset: int = 0) -> list[JobRecord]:
        rows = self.db.run(
            lambda conn: conn.execute(
                f"SELECT {_JOB_COLUMNS} FROM jobs WHERE tenant_id=%s ORDER BY seq DESC LIMIT %s OFFSET %s",
                (tenant_id, max(0, limit), max(0, offset)),
            ).fetchall()
        )
        return [_job(r) for r in rows]

    def advance(
        self,
        job_id: str,
        state: str | None = None,
        counts: Mapping[str, int] | None = None,
        errors: Sequence[Mapping[str, str]] | None = None,
        reason: str | None = None,
        at: float | None = None,
    ) -> JobRecord:
        def write(conn: Conn) -> JobRecord:
            job = _lock_job(conn, job_id)
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
            _save(conn, job)
            return job

        return self.db.run(write, retry=False)

    def start_attempt(self, job_id: str) -> JobRecord:
        def write(conn: Conn) -> JobRecord:
            job = _lock_job(conn, job_id)
            job.attempts += 1
            job.updated_at = time.time()
            _save(conn, job)
            return job

        return self.db.run(write, retry=False)

    def request_cancel(self, tenant_id: str, job_id: str) -> JobRecord | None:
        def write(conn: Conn) -> JobRecord | None:
            row = conn.execute(
                f"SELECT {_JOB_COLUMNS} FROM jobs WHERE id=%s AND tenant_id=%s FOR UPDATE", (job_id, tenant_id)
            ).fetchone()
            if row is None:
                return None
            job = _job(row)
            if not job.finished and not job.cancel_requested:
                job.cancel_requested = True
                job.updated_at = time.time()
                _save(conn, job)
            return job

        return self.db.run(write, retry=False)

    def unfinished(self) -> list[JobRecord]:
        rows = self.db.run(
            lambda conn: conn.execute(f"SELECT {_JOB_COLUMNS} FROM jobs WHERE {_UNFINISHED} ORDER BY seq").fetchall()
        )
        return [_job(r) for r in rows]

    def claim(self, job_id: str, owner: str, lease_until: float, now: float, take_from: str = "") -> JobRecord | None:
        def write(conn: Conn) -> JobRecord | None:
            row = conn.execute(f"SELECT {_JOB_COLUMNS} FROM jobs WHERE id=%s FOR UPDATE", (job_id,)).fetchone()
            if row is None:
                return None
            job = _job(row)
            if not claimable(job, owner, now, take_from):
                return None
            job.owner, job.lease_until = owner, lease_until
            _save(conn, job)
            return job

        return self.db.run(write, retry=False)
