"""A small typed client for a waypost server's ``/v1`` API: ``WaypostClient`` (sync) and ``AsyncWaypostClient``.

    with WaypostClient("http://127.0.0.1:8600", api_key="wp_...") as client:
        job = client.upload_documents("docs", [Document("a", "some text")])
        client.wait_for_job(job.id)
        hits = client.retrieve("docs", "what is x?", k=5).hits

Results are the server's own response models (``waypost.server.models``). A refused request raises a
``ServerError`` carrying the server's message: ``UnauthorizedError`` (401), ``ForbiddenError`` (403),
``NotFoundError`` (404), ``ConflictError`` (409).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from waypost.errors import WaypostError
from waypost.server.models import AnswerOut, CollectionList, CollectionOut, JobOut, RetrieveOut, WhoAmI
from waypost.types import Document

M = TypeVar("M", bound=BaseModel)
DocumentLike = Document | Mapping[str, Any]
TERMINAL = ("succeeded", "failed", "cancelled")
DEFAULT_TIMEOUT = 60.0


class ServerError(WaypostError):
    """The server refused a request; ``status`` is the HTTP status, ``message`` the server's own words."""

    def __init__(self, status: int, message: str, detail: Any = None) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message
        self.detail = detail


class UnauthorizedError(ServerError):
    """401: the API key is missing, malformed, unknown or revoked."""


class ForbiddenError(ServerError):
    """403: the key lacks the scope the call needs (read, write or admin)."""


class NotFoundError(ServerError):
    """404: no such collection, document or job for this key's tenant."""


class ConflictError(ServerError):
    """409: the collection exists already, or an Idempotency-Key was reused for another body."""


class JobFailedError(WaypostError):
    """An ingestion job ended ``failed`` or ``cancelled``; ``job`` is its last state."""

    def __init__(self, job: JobOut) -> None:
        super().__init__(f"job {job.id} ended {job.state}: {job.reason or 'no reason given'}")
        self.job = job


class JobTimeoutError(WaypostError):
    """``wait_for_job`` ran out of time; ``job`` is the last state seen."""

    def __init__(self, job: JobOut, timeout: float) -> None:
        super().__init__(f"job {job.id} still {job.state} after {timeout:g} s")
        self.job = job


ERRORS: dict[int, type[ServerError]] = {
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
}


def check(response: httpx.Response) -> httpx.Response:
    """``response`` if it succeeded; otherwise the matching ``ServerError`` with the server's message."""
    if response.is_success:
        return response
    message, detail = response.text or response.reason_phrase, None
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and "error" in body:
        message, detail = str(body["error"]), body.get("detail")
    raise ERRORS.get(response.status_code, ServerError)(response.status_code, message, detail)


def parse(model: type[M], response: httpx.Response) -> M:
    return model.model_validate(check(response).json())


def document_body(doc: DocumentLike) -> dict[str, Any]:
    if isinstance(doc, Document):
        return {"id": doc.id, "text": doc.text, "title": doc.title, "metadata": dict(doc.metadata)}
    return {key: doc[key] for key in ("id", "text", "title", "metadata") if key in doc}


def retrieve_body(
    collection: str,
    query: str,
    strategy: str,
    k: int,
    filters: Mapping[str, Any] | None,
    params: Mapping[str, Any] | None,
    rerank: str | None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"collection": collection, "query": query, "strategy": strategy, "k": k}
    if filters is not None:
        body["filters"] = dict(filters)
    if params is not None:
        body["params"] = dict(params)
    if rerank is not None:
        body["rerank"] = rerank
    return body


def answer_body(
    collection: str, question: str, strategy: str, k: int, params: Mapping[str, Any] | None
) -> dict[str, Any]:
    body: dict[str, Any] = {"collection": collection, "question": question, "strategy": strategy, "k": k}
    if params is not None:
        body["params"] = dict(params)
    return body


def collection_body(name: str, description: str, language: str) -> dict[str, Any]:
    return {"name": name, "description": description, "language": language}


def upload_headers(idempotency_key: str | None) -> dict[str, str]:
    return {"Idempotency-Key": idempotency_key} if idempotency_key else {}


def finished(job: JobOut, raise_on_failure: bool) -> JobOut | None:
    """``job`` when it is over (raising ``JobFailedError`` if asked and it did not succeed), else None."""
    if job.state not in TERMINAL:
        return None
    if raise_on_failure and job.state != "succeeded":
        raise JobFailedError(job)
    return job


def seg(name: str) -> str:
    """One path segment: a collection name with ``/``, ``#`` or ``?`` in it stays one segment."""
    return quote(name, safe="")


def auth_headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


class WaypostClient:
    """Blocking client; one connection pool, closed by ``close()`` or ``with``."""

    def __init__(
        self, url: str, api_key: str | None = None, timeout: float = DEFAULT_TIMEOUT, http: httpx.Client | None = None
    ) -> None:
        self.url = url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self.http = http or httpx.Client(base_url=self.url, headers=auth_headers(api_key), timeout=timeout)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> WaypostClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def whoami(self) -> WhoAmI:
        return parse(WhoAmI, self.http.get("/v1/whoami"))

    def collections(self) -> list[CollectionOut]:
        return parse(CollectionList, self.http.get("/v1/collections")).collections

    def collection(self, name: str) -> CollectionOut:
        return parse(CollectionOut, self.http.get(f"/v1/collections/{seg(name)}"))

    def create_collection(self, name: str, description: str = "", language: str = "") -> CollectionOut:
        body = collection_body(name, description, language)
        return parse(CollectionOut, self.http.post("/v1/collections", json=body))

    def delete_collection(self, name: str) -> None:
        check(self.http.delete(f"/v1/collections/{seg(name)}"))

    def upload_documents(
        self, collection: str, documents: Sequence[DocumentLike], idempotency_key: str | None = None
    ) -> JobOut:
        """Send documents as JSON; the answer is the ingestion job (poll it with ``wait_for_job``)."""
        body = {"documents": [document_body(d) for d in documents]}
        response = self.http.post(
            f"/v1/collections/{seg(collection)}/documents", json=body, headers=upload_headers(idempotency_key)
        )
        return parse(JobOut, response)

    def job(self, job_id: str) -> JobOut:
        return parse(JobOut, self.http.get(f"/v1/jobs/{seg(job_id)}"))

    def wait_for_job(
        self, job_id: str, timeout: float = 300.0, poll: float = 0.2, raise_on_failure: bool = True
    ) -> JobOut:
        """Poll until the job ends; ``JobFailedError`` if it failed or was cancelled (unless told not to)."""
        deadline = time.monotonic() + timeout
        while True:
            job = self.job(job_id)
            done = finished(job, raise_on_failure)
            if done is not None:
                return done
            if time.monotonic() >= deadline:
                raise JobTimeoutError(job, timeout)
            time.sleep(poll)

    def retrieve(
        self,
        collection: str,
        query: str,
        strategy: str = "auto",
        k: int = 10,
        filters: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        rerank: str | None = None,
    ) -> RetrieveOut:
        body = retrieve_body(collection, query, strategy, k, filters, params, rerank)
        return parse(RetrieveOut, self.http.post("/v1/retrieve", json=body))

    def answer(
        self,
        collection: str,
        question: str,
        strategy: str = "auto",
        k: int = 5,
        params: Mapping[str, Any] | None = None,
    ) -> AnswerOut:
        body = answer_body(collection, question, strategy, k, params)
        return parse(AnswerOut, self.http.post("/v1/answer", json=body))


class AsyncWaypostClient:
    """The same calls for async code. Its connection pool belongs to the event loop it is first used on."""

    def __init__(
        self,
        url: str,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self.http = http or httpx.AsyncClient(base_url=self.url, headers=auth_headers(api_key), timeout=timeout)

    async def aclose(self) -> None:
        await self.http.aclose()

    async def __aenter__(self) -> AsyncWaypostClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def whoami(self) -> WhoAmI:
        return parse(WhoAmI, await self.http.get("/v1/whoami"))

    async def collections(self) -> list[CollectionOut]:
        return parse(CollectionList, await self.http.get("/v1/collections")).collections

    async def collection(self, name: str) -> CollectionOut:
        return parse(CollectionOut, await self.http.get(f"/v1/collections/{seg(name)}"))

    async def create_collection(self, name: str, description: str = "", language: str = "") -> CollectionOut:
        body = collection_body(name, description, language)
        return parse(CollectionOut, await self.http.post("/v1/collections", json=body))

    async def delete_collection(self, name: str) -> None:
        check(await self.http.delete(f"/v1/collections/{seg(name)}"))

    async def upload_documents(
        self, collection: str, documents: Sequence[DocumentLike], idempotency_key: str | None = None
    ) -> JobOut:
        body = {"documents": [document_body(d) for d in documents]}
        response = await self.http.post(
            f"/v1/collections/{seg(collection)}/documents", json=body, headers=upload_headers(idempotency_key)
        )
        return parse(JobOut, response)

    async def job(self, job_id: str) -> JobOut:
        return parse(JobOut, await self.http.get(f"/v1/jobs/{seg(job_id)}"))

    async def wait_for_job(
        self, job_id: str, timeout: float = 300.0, poll: float = 0.2, raise_on_failure: bool = True
    ) -> JobOut:
        deadline = time.monotonic() + timeout
        while True:
            job = await self.job(job_id)
            done = finished(job, raise_on_failure)
            if done is not None:
                return done
            if time.monotonic() >= deadline:
                raise JobTimeoutError(job, timeout)
            await asyncio.sleep(poll)

    async def retrieve(
        self,
        collection: str,
        query: str,
        strategy: str = "auto",
        k: int = 10,
        filters: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        rerank: str | None = None,
    ) -> RetrieveOut:
        body = retrieve_body(collection, query, strategy, k, filters, params, rerank)
        return parse(RetrieveOut, await self.http.post("/v1/retrieve", json=body))

    async def answer(
        self,
        collection: str,
        question: str,
        strategy: str = "auto",
        k: int = 5,
        params: Mapping[str, Any] | None = None,
    ) -> AnswerOut:
        body = answer_body(collection, question, strategy, k, params)
        return parse(AnswerOut, await self.http.post("/v1/answer", json=body))
