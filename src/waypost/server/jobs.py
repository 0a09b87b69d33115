"""Ingestion jobs: uploads are spooled to disk, recorded in the job log, and ingested on worker threads apart
from request handling. States only move forward; a restarted server resumes what it finds unfinished (the
ingest skips documents already written, by content hash) or fails it with a reason."""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from waypost.errors import CollectionNotFoundError, LoaderError, StoreUnavailableError, WaypostError
from waypost.ingest.loaders import LoadFailure, load_path
from waypost.ingest.pipeline import IngestReport
from waypost.server.tenants import TenantEngines
from waypost.store.control import ControlError, JobLog, JobRecord, Tenant, TenantDirectory, state_rank
from waypost.types import Document

log = logging.getLogger(__name__)

JOB_LEASE_S = 60.0  # a server holds each of its jobs this long, renewing a third of the way; then others may take it
STAGE_STATES = {"chunking": "chunking", "embedding": "embedding", "writing": "indexing", "written": "indexing"}


class JobCancelled(Exception):
    """Raised inside a running ingest when its job was asked to stop."""


class LeaseLost(Exception):
    """Raised inside a running ingest when another server took the job over (this one's lease ran out while
    the control store was unreachable): this worker stops without touching the job."""


class ServerStopping(Exception):
    """Raised inside a running ingest when the server shuts down: the job stays unfinished and resumes at the
    next start."""


def new_job_id() -> str:
    return f"job_{uuid.uuid4().hex}"


def _pid_space() -> str:
    """This boot of this machine and this PID namespace, hashed: two processes whose pids can be compared.
    Empty where it cannot be told (no /proc)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return ""
    return hashlib.sha256(f"{boot}:{namespace}".encode()).hexdigest()[:12]


def process_owner() -> str:
    """A job owner's name: this host, this process, a nonce for each runner, and the PID space."""
    return f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}/{_pid_space()}"


def dead_here(owner: str) -> bool:
    """Whether ``owner`` was a process in this PID space (same host, same boot, same PID namespace) that no
    longer runs: its jobs need not wait for the lease. Containers that share a host name are told apart."""
    parts = owner.split("/")
    if len(parts) != 4:
        return False
    host, pid, _nonce, space = parts
    if host != socket.gethostname() or not space or space != _pid_space() or not pid.isdigit():
        return False
    if int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, someone else's
        return False
    return False


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
        lease_s: float = JOB_LEASE_S,
    ) -> None:
        self.jobs = jobs
        self.tenants = tenants
        self.engines = engines
        self.spool = Path(spool)
        self.max_attempts = max_attempts
        self.lease_s = lease_s
        self.owner = process_owner()
        self._pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="waypost-job")
        self._closed = threading.Event()
        self._held: set[str] = set()  # jobs this runner holds a lease on (queued or running)
        self._held_lock = threading.Lock()
        self._sweeping = False  # set by ``resume_unfinished``: also take over jobs whose owner's lease ran out
        self._heartbeat = threading.Thread(target=self._beat, name="waypost-job-lease", daemon=True)
        self._heartbeat.start()
        self.on_change: Callable[[JobRecord], None] | None = None  # told after each write (events)

    # -- submission -----------------------------------------------------------------------------
    def spool_dir(self, job_id: str) -> Path:
        return self.spool / job_id

    def lease(self) -> dict[str, Any]:
        """The owner fields of a job this server creates: it holds the job from the moment it is stored, so
        no other server's sweep can take it before ``submit``."""
        return {"owner": self.owner, "lease_until": time.time() + self.lease_s}

    def submit(self, job: JobRecord) -> None:
        """Queue a job this server created (with ``lease()``), or an older one it can claim."""
        with self._held_lock:
            if job.id in self._held:
                return  # queued or running already (an idempotent replay)
        if self._closed.is_set() or job.finished:
            return
        if job.owner == self.owner:
            with self._held_lock:
                self._held.add(job.id)
        elif not self._claim(job.id):
            return
        self._pool.submit(self._run_logged, job.id, job.tenant_id)

    def _claim(self, job_id: str, take_from: str = "") -> bool:
        if self._closed.is_set():
            return False
        now = time.time()
        if self.jobs.claim(job_id, self.owner, now + self.lease_s, now, take_from) is None:
            log.debug("job %s is held by another server", job_id)
            return False
        with self._held_lock:
            self._held.add(job_id)
        return True

    def _release(self, job_id: str) -> None:
        with self._held_lock:
            self._held.discard(job_id)

    def resume_unfinished(self) -> list[JobRecord]:
        """Take over every unfinished job no live server holds (left by a process that died or stopped, here
        or, once its lease ran out, elsewhere): queue it again, or fail it with a reason. Called at start; the
        runner then repeats it as its leases are renewed, so a job of a server that dies is taken over."""
        self._sweeping = True
        resumed = []
        for job in self.jobs.unfinished():
            with self._held_lock:
                if job.id in self._held:
                    continue
            if not self._claim(job.id, take_from=job.owner if job.owner and dead_here(job.owner) else ""):
                continue  # a live server runs it
            if job.attempts >= self.max_attempts:
                self._finish(job.id, "failed", f"stopped {job.attempts} times while running (the server died)")
                self._release(job.id)
            elif any(not Path(f["path"]).is_file() for f in job.files):
                self._finish(job.id, "failed", "the uploaded files of this job are gone; upload them again")
                self._release(job.id)
            else:
                resumed.append(job)
                self._pool.submit(self._run_logged, job.id, job.tenant_id)
        if resumed:
            log.info("resuming %d unfinished ingestion jobs", len(resumed))
        return resumed

    def _beat(self) -> None:
        """Renew the leases of held jobs a third of the way through; take over jobs whose lease ran out."""
        while not self._closed.wait(self.lease_s / 3):
            with self._held_lock:
                held = sorted(self._held)
            try:
                for job_id in held:
                    if not self._claim(job_id):  # it ended meanwhile, or another server took it over
                        self._release(job_id)
                if self._sweeping:
                    self.resume_unfinished()
            except Exception:  # the control store is down: try again at the next beat
                log.warning("could not renew the ingestion jobs' leases", exc_info=True)

    def close(self, wait: bool = True) -> None:
        self._closed.set()
        if self._heartbeat.is_alive() and self._heartbeat is not threading.current_thread():
            self._heartbeat.join()  # a beat in progress renews nothing after this
        self._pool.shutdown(wait=wait, cancel_futures=True)
        with self._held_lock:
            held, self._held = sorted(self._held), set()
        now = time.time()
        for job_id in held:  # what this server leaves unfinished, another may take at once
            try:
                self.jobs.claim(job_id, self.owner, 0.0, now)
            except Exception:
                log.warning("could not release job %s", job_id, exc_info=True)

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
        finally:
            if not self._closed.is_set():  # done (or ended); on shutdown ``close`` releases what is left
                self._release(job_id)

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
        except LeaseLost:
            log.warning("ingestion job %s was taken over by another server; this worker stops", job_id)
            return
        except StoreUnavailableError:  # not the job's fault: left unfinished, a sweep resumes it
            log.warning("ingestion job %s paused: the store is unavailable", job_id, exc_info=True)
            return
        except CollectionNotFoundError:
            self._finish(job_id, "failed", f"collection {job.collection!r} was deleted before or while the job ran")
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
        if current.owner not in ("", self.owner):
            raise LeaseLost

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
