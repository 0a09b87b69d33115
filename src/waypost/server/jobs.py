"""Ingestion jobs: uploads are spooled to disk, recorded in the job log, and ingested on worker threads apart
from request handling. States only move forward; a restarted server resumes what it finds unfinished (the
ingest skips documents already written, by content hash) or fails it with a reason."""

from __future__ import annotations

import logging
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from waypost.errors import CollectionNotFoundError, LoaderError, WaypostError
from waypost.ingest.loaders import LoadFailure, load_path
from waypost.ingest.pipeline import IngestReport
from waypost.server.tenants import TenantEngines
from waypost.store.control import ControlError, JobLog, JobRecord, Tenant, TenantDirectory, state_rank
from waypost.types import Document

log = logging.getLogger(__name__)

STAGE_STATES = {"chunking": "chunking", "embedding": "embedding", "writing": "indexing", "written": "indexing"}


class JobCancelled(Exception):
    """Raised inside a running ingest when its job was asked to stop."""


class ServerStopping(Exception):
    """Raised inside a running ingest when the server shuts down: the job stays unfinished and resumes at the
    next start."""


def new_job_id() -> str:
    return f"job_{uuid.uuid4().hex}"


class JobRunner:
    """Runs jobs from a ``JobLog`` on its own thread pool; every state change is written before it is told."""

    def __init__(
        self,
        jobs: JobLog,
        tenants: TenantDirectory,
        engines: TenantEngines,
        spool: Path,
        workers: int = 1,
        max_attempts: int = 3,
    ) -> None:
        self.jobs = jobs
        self.tenants = tenants
        self.engines = engines
        self.spool = Path(spool)
        self.max_attempts = max_attempts
        self._pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="waypost-job")
        self._closed = threading.Event()
        self.on_change: Callable[[JobRecord], None] | None = None  # told after each write (events)

    # -- submission -----------------------------------------------------------------------------
    def spool_dir(self, job_id: str) -> Path:
        return self.spool / job_id

    def submit(self, job: JobRecord) -> None:
        if not self._closed.is_set():
            self._pool.submit(self._run_logged, job.id, job.tenant_id)

    def resume_unfinished(self) -> list[JobRecord]:
        """At start: every job a previous process left unfinished is queued again, or failed with a reason."""
        resumed = []
        for job in self.jobs.unfinished():
            if job.attempts >= self.max_attempts:
                self._finish(job.id, "failed", f"stopped {job.attempts} times while running (the server died)")
            elif any(not Path(f["path"]).is_file() for f in job.files):
                self._finish(job.id, "failed", "the uploaded files of this job are gone; upload them again")
            else:
                resumed.append(job)
                self.submit(job)
        if resumed:
            log.info("resuming %d unfinished ingestion jobs", len(resumed))
        return resumed

    def close(self, wait: bool = True) -> None:
        self._closed.set()
        self._pool.shutdown(wait=wait, cancel_futures=True)

    # -- running ----------------------------------------------------------------------------------
    def _write(self, job_id: str, **changes: Any) -> JobRecord:
        job = self.jobs.advance(job_id, **changes)
        if self.on_change is not None:
            self.on_change(job)
        return job

    def file_exists(self, path: str) -> bool:
        return Path(path).is_file()

    def _finish(self, job_id: str, state: str, reason: str = "", **changes: Any) -> None:
        """End a job. A succeeded job's spooled files go; a failed or cancelled one keeps them for a retry."""
        try:
            job = self._write(job_id, state=state, reason=reason, **changes)
        except ControlError:  # finished meanwhile (cancelled by a request that raced this worker)
            log.debug("job %s was already finished", job_id)
            return
        if state == "succeeded":
            for folder in {Path(f["path"]).parent.parent for f in job.files}:
                if folder.parent == self.spool:
                    shutil.rmtree(folder, ignore_errors=True)

    def _run_logged(self, job_id: str, tenant_id: str) -> None:
        try:
            self.run(job_id, tenant_id)
        except Exception as exc:  # a worker never dies silently: the job says why it failed (details: the log)
            log.exception("ingestion job %s failed", job_id)
            self._finish(job_id, "failed", f"internal error ({type(exc).__name__}); the server log has the details")

    def run(self, job_id: str, tenant_id: str) -> None:
        if self._closed.is_set():
            return
        job = self.jobs.job(tenant_id, job_id)
        if job is None or job.finished:
            return
        tenant = self.tenants.tenant(tenant_id)
        if tenant is None:
            self._finish(job_id, "failed", "the tenant no longer exists")
            return
        job = self.jobs.start_attempt(job_id)
        if job.cancel_requested:
            self._finish(job_id, "cancelled", "cancelled before it started")
            return
        try:
            report = self._ingest(job, tenant)
        except JobCancelled:
            self._finish(job_id, "cancelled", "cancelled while running; documents written before stay")
            return
        except ServerStopping:
            log.info("ingestion job %s interrupted by shutdown; it resumes at the next start", job_id)
            return
        except CollectionNotFoundError:
            self._finish(job_id, "failed", f"collection {job.collection!r} was deleted before the job ran")
            return
        except WaypostError as exc:
            self._finish(job_id, "failed", str(exc))
            return
        errors = [{"source": f.source, "error": f.error} for f in report.failures]
        counts = self._counts(report)
        if report.added + report.updated + report.unchanged == 0 and errors:
            self._finish(job_id, "failed", "no document could be read", counts=counts, errors=errors)
        else:
            self._finish(job_id, "succeeded", counts=counts, errors=errors)

    @staticmethod
    def _counts(report: IngestReport) -> dict[str, int]:
        return {
            "added": report.added,
            "updated": report.updated,
            "unchanged": report.unchanged,
            "chunks": report.chunks,
            "failed": len(report.failures),
        }

    def _check_cancel(self, job: JobRecord) -> None:
        if self._closed.is_set():
            raise ServerStopping
        current = self.jobs.job(job.tenant_id, job.id)
        if current is None or current.cancel_requested:
            raise JobCancelled

    def _documents(self, job: JobRecord, failures: list[LoadFailure], parsed: list[int]) -> Iterator[Document]:
        for spooled in job.files:
            path = Path(spooled["path"])
            try:
                for item in load_path(path, path.parent):
                    if isinstance(item, LoadFailure):
                        failures.append(LoadFailure(_display(item.source, path, spooled["name"]), item.error))
                    else:  # the source names the uploaded file, never the server's spool path
                        yield replace(item, source=_display(item.source or str(path), path, spooled["name"]))
            except LoaderError as exc:
                failures.append(LoadFailure(spooled["name"], _display(str(exc), path, spooled["name"])))
            parsed[0] += 1

    def _ingest(self, job: JobRecord, tenant: Tenant) -> IngestReport:
        engine = self.engines.engine(tenant)
        collection = engine.collection(job.collection)  # deleted meanwhile: the job fails, nothing re-creates it
        resumed = state_rank(job.state) >= state_rank("parsing")  # a restart found it mid-run: states stay forward
        self._write(job.id, state=None if resumed else "parsing", counts={"files": len(job.files)})
        report = IngestReport()
        parsed = [0]
        documents = list(self._documents(job, report.failures, parsed))
        self._check_cancel(job)
        self._write(job.id, counts={"files_parsed": parsed[0], "documents": len(documents)})
        last = [0.0]

        def on_stage(stage: str, progress: IngestReport) -> None:
            self._check_cancel(job)
            state = STAGE_STATES[stage]
            now = time.monotonic()
            current = self.jobs.job(job.tenant_id, job.id)
            moves = current is not None and state_rank(state) > state_rank(current.state)
            if moves or stage == "written" or now - last[0] > 0.5:
                last[0] = now
                counts = self._counts(progress)
                counts["processed"] = progress.added + progress.updated + progress.unchanged
                self._write(job.id, state=state if moves else None, counts=counts)

        collection.add(documents, total=len(documents), report=report, on_stage=on_stage)
        self._check_cancel(job)
        self._write(job.id, state="indexing")
        engine.indexes.get(collection.name)  # the live index has caught up: the documents are searchable
        return report


def _display(text: str, path: Path, name: str) -> str:
    """Messages name the uploaded file, never the server's spool path."""
    return text.replace(str(path), name).replace(str(path.parent), "")
