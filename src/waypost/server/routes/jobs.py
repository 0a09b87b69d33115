"""Ingestion jobs: status, progress as server-sent events, cancel and retry."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

from fastapi import APIRouter, HTTPException, Query
from starlette.responses import StreamingResponse

from waypost.server.deps import Reader, State, TenantEngine, Writer
from waypost.server.jobs import new_job_id
from waypost.server.models import ErrorOut, JobList, JobOut
from waypost.server.sse import sse_event, sse_response
from waypost.server.views import job_out
from waypost.store.control import JobRecord

router = APIRouter(prefix="/v1/jobs", tags=["jobs"], responses={401: {"model": ErrorOut}, 404: {"model": ErrorOut}})
POLL_S = 0.2


async def find_job(state: State, engine: TenantEngine, tenant_id: str, job_id: str) -> JobRecord:
    job = await engine.run(lambda: state.control.job(tenant_id, job_id))
    if job is None:
        raise HTTPException(404, f"no job {job_id!r}")
    return job


@router.get("", response_model=JobList)
async def list_jobs(
    principal: Reader,
    state: State,
    engine: TenantEngine,
    limit: int = Query(50, ge=1, le=500),
    offset: int = Query(0, ge=0, le=1_000_000),
) -> JobList:
    jobs = await engine.run(lambda: state.control.jobs(principal.tenant.id, limit, offset))
    return JobList(jobs=[job_out(j) for j in jobs])


@router.get("/{job_id}", response_model=JobOut)
async def get_job(job_id: str, principal: Reader, state: State, engine: TenantEngine) -> JobOut:
    return job_out(await find_job(state, engine, principal.tenant.id, job_id))


@router.get(
    "/{job_id}/events", response_class=StreamingResponse, responses={200: {"content": {"text/event-stream": {}}}}
)
async def job_events(job_id: str, principal: Reader, state: State, engine: TenantEngine) -> StreamingResponse:
    """``progress`` events (the job as GET returns it) whenever it changes, then ``done`` when it finishes."""
    tenant_id = principal.tenant.id
    first = await find_job(state, engine, tenant_id, job_id)

    async def events() -> AsyncIterator[str]:
        job: JobRecord | None = first
        last = -1.0
        while job is not None:
            if job.updated_at != last or job.finished:
                last = job.updated_at
                yield sse_event("done" if job.finished else "progress", job_out(job).model_dump())
                if job.finished:
                    return
            await asyncio.sleep(POLL_S)
            job = await engine.run(lambda: state.control.job(tenant_id, job_id))

    return sse_response(events(), state.config.heartbeat_s)


@router.post("/{job_id}/cancel", response_model=JobOut)
async def cancel_job(job_id: str, principal: Writer, state: State, engine: TenantEngine) -> JobOut:
    """Ask a job to stop: a queued one is cancelled before it starts, a running one between batches."""
    job = await engine.run(lambda: state.control.request_cancel(principal.tenant.id, job_id))
    if job is None:
        raise HTTPException(404, f"no job {job_id!r}")
    return job_out(job)


@router.post("/{job_id}/retry", status_code=202, response_model=JobOut, responses={409: {"model": ErrorOut}})
async def retry_job(job_id: str, principal: Writer, state: State, engine: TenantEngine) -> JobOut:
    """A new job over the same uploaded files, for a job that failed or was cancelled (documents already
    written are skipped as unchanged)."""
    old = await find_job(state, engine, principal.tenant.id, job_id)
    if old.state not in ("failed", "cancelled"):
        raise HTTPException(409, f"job {job_id} is {old.state}; only failed or cancelled jobs can be retried")
    tenant_jobs = await engine.run(lambda: state.control.jobs(principal.tenant.id, 1000, 0))
    live = [j for j in tenant_jobs if j.retry_of == old.id and j.state not in ("failed", "cancelled")]
    if live:
        raise HTTPException(409, f"job {job_id} already has a retry, {live[0].id} ({live[0].state})")
    if any(not state.runner.file_exists(f["path"]) for f in old.files):
        raise HTTPException(409, "the uploaded files of this job are gone; upload them again")
    now = time.time()
    job = JobRecord(
        new_job_id(), old.tenant_id, old.collection, "queued", now, now, files=list(old.files),
        request_hash=old.request_hash, retry_of=old.id, **state.runner.lease(),
    )  # fmt: skip
    stored, _ = await engine.run(lambda: state.control.create_job(job))
    await engine.run(lambda: state.runner.submit(stored))
    return job_out(stored)
