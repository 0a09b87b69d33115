"""Uploads: files (multipart) or JSON documents, checked whole before anything is kept, spooled to disk,
then ingested by a job (202 with the job). An ``Idempotency-Key`` makes a retried upload a no-op."""

from __future__ import annotations

import hashlib
import json
import shutil
import time
import unicodedata
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Header, HTTPException, Request, Response
from pydantic import BaseModel, ValidationError
from starlette.datastructures import UploadFile

from waypost.ingest.loaders import LOADERS, MAX_FILE_BYTES
from waypost.server.deps import State, TenantEngine, Writer, open_collection
from waypost.server.jobs import new_job_id
from waypost.server.models import DocumentsIn, ErrorOut, JobOut
from waypost.server.views import job_out
from waypost.store.control import JobRecord
from waypost.validation import clean_text

router = APIRouter(prefix="/v1/collections", tags=["documents"])
BINARY_TYPES = {".pdf"}


def inline_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON schema with its nested models written in place: a ``$ref`` here would point at a
    component the OpenAPI document lacks (no route declares these models as its body)."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return resolve(defs[ref.removeprefix("#/$defs/")])
            return {k: resolve(v) for k, v in node.items()}
        if isinstance(node, list):
            return [resolve(v) for v in node]
        return node

    resolved: dict[str, Any] = resolve(schema)
    return resolved


UPLOAD_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {"files": {"type": "array", "items": {"type": "string", "format": "binary"}}},
                    "required": ["files"],
                }
            },
            "application/json": {"schema": inline_schema(DocumentsIn)},
        },
    }
}


class Refused(HTTPException):
    """The whole upload is refused (nothing is kept); ``detail`` names each bad file."""


def check_name(name: str | None) -> str:
    """An uploaded file's name becomes its document id: a plain name, never a path."""
    if not name:
        raise Refused(400, "every uploaded file needs a file name")
    clean = unicodedata.normalize("NFC", name)
    if (
        any(c in clean for c in "/\\\0")
        or clean in (".", "..")
        or clean.startswith(".")
        or any(unicodedata.category(c) in ("Cc", "Cf", "Cs") for c in clean)
        or len(clean.encode("utf-8", "surrogatepass")) > 255
    ):
        raise Refused(400, f"file name {name!r} is not a plain file name (no paths, control characters or dot files)")
    return clean


def check_content(name: str, data: bytes, max_bytes: int) -> None:
    suffix = Path(name).suffix.lower()
    if suffix not in LOADERS:
        raise Refused(415, f"{name}: unsupported type {suffix or '(no extension)'}; supported: {sorted(LOADERS)}")
    if not data:
        raise Refused(400, f"{name}: the file is empty")
    if len(data) > max_bytes:
        raise Refused(413, f"{name}: {len(data)} bytes, over the {max_bytes}-byte limit per file")
    if suffix in BINARY_TYPES:
        if suffix == ".pdf" and not data.startswith(b"%PDF"):
            raise Refused(415, f"{name}: not a PDF file")
        return
    if b"\x00" in data[:65536]:
        raise Refused(415, f"{name}: binary content in a {suffix} file")
    try:
        data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise Refused(422, f"{name}: not valid UTF-8 at byte {exc.start}") from None


async def read_files(request: Request, max_files: int, max_file: int) -> list[tuple[str, bytes]]:
    try:
        form = await request.form(max_files=max_files, max_fields=max_files + 10)
    except Exception as exc:  # starlette raises its own errors for malformed or oversized multipart bodies
        raise Refused(400, f"unreadable multipart body: {exc}") from None
    try:
        uploads = [v for v in form.getlist("files") if isinstance(v, UploadFile)]
        if not uploads:
            raise Refused(400, "a multipart upload sends its files in the field 'files'")
        files: list[tuple[str, bytes]] = []
        seen: set[str] = set()
        for upload in uploads:
            name = check_name(upload.filename)
            if name in seen:
                raise Refused(400, f"{name}: the same file name twice in one upload")
            seen.add(name)
            if upload.size is not None and upload.size > max_file:
                raise Refused(413, f"{name}: {upload.size} bytes, over the {max_file}-byte limit per file")
            data = await upload.read(max_file + 1)
            check_content(name, data, max_file)
            files.append((name, data))
        return files
    finally:
        await form.close()


def without_surrogates(value: Any) -> Any:
    """``value`` (parsed JSON) with each string's lone surrogates replaced by U+FFFD (``clean_text``)."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [without_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {clean_text(k): without_surrogates(v) for k, v in value.items()}
    return value


async def read_documents(request: Request, max_bytes: int) -> list[tuple[str, bytes]]:
    try:
        raw = json.loads(await request.body())  # Python's parser keeps a lone surrogate ("\\ud800"), as files do
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise Refused(422, f"the body is not valid JSON: {exc}") from None
    except RecursionError:
        raise Refused(422, "the body nests too deeply") from None
    try:
        body = DocumentsIn.model_validate(without_surrogates(raw))
    except ValidationError as exc:
        errors = [{k: v for k, v in e.items() if k in ("loc", "msg", "type")} for e in exc.errors()]  # no input echo
        raise Refused(422, json.loads(json.dumps(errors, default=str))) from None
    seen: set[str] = set()
    for d in body.documents:  # as with file names: one upload never holds two versions of a document
        if d.id in seen:
            raise Refused(400, f"document id {d.id!r} appears twice in one upload")
        seen.add(d.id)
    lines = [
        json.dumps({"_id": d.id, "title": d.title, "text": d.text, "metadata": d.metadata}, ensure_ascii=False)
        for d in body.documents
    ]
    data = ("\n".join(lines) + "\n").encode()
    if len(data) > max_bytes:
        raise Refused(413, f"the documents take {len(data)} bytes, over the {max_bytes}-byte limit of one upload file")
    return [("documents.jsonl", data)]


def request_hash(collection: str, files: list[tuple[str, bytes]]) -> str:
    digest = hashlib.sha256(collection.encode())
    for name, data in files:
        digest.update(b"\0" + name.encode() + b"\0" + hashlib.sha256(data).digest())
    return digest.hexdigest()


@router.post(
    "/{name}/documents",
    status_code=202,
    response_model=JobOut,
    openapi_extra=UPLOAD_BODY,
    responses={
        404: {"model": ErrorOut},
        409: {"model": ErrorOut},
        411: {"model": ErrorOut},
        413: {"model": ErrorOut},
        415: {"model": ErrorOut},
        422: {"model": ErrorOut},
    },
)
async def upload(
    name: str,
    request: Request,
    response: Response,
    principal: Writer,
    engine: TenantEngine,
    state: State,
    idempotency_key: str | None = Header(default=None, max_length=200),
) -> JobOut:
    """Add files (multipart field ``files``) or JSON documents to a collection: 202 with the ingestion job."""
    config = state.config
    length = request.headers.get("content-length")
    if length is None or not length.isdigit():  # a chunked body would be spooled whole before any limit
        raise HTTPException(411, "an upload needs a Content-Length header")  # (over the limit: ``server.guard``)
    coll = await open_collection(engine, name)
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    file_limit = min(config.max_file_bytes, MAX_FILE_BYTES)  # what the loaders will read
    if content_type == "multipart/form-data":
        files = await read_files(request, config.max_files, file_limit)
    elif content_type == "application/json":
        files = await read_documents(request, file_limit)
    else:
        raise HTTPException(415, "send files as multipart/form-data (field 'files') or documents as application/json")
    if sum(len(d) for _, d in files) > config.max_upload_bytes:
        raise HTTPException(413, f"the upload is over the {config.max_upload_bytes}-byte limit")
    job_id = new_job_id()
    folder = state.runner.spool_dir(job_id)
    spooled: list[dict[str, Any]] = []
    try:
        for i, (file_name, data) in enumerate(files):
            path = folder / str(i) / file_name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            spooled.append({"name": file_name, "path": str(path), "bytes": len(data)})
        now = time.time()
        digest = request_hash(coll.name, files)
        job = JobRecord(
            job_id, principal.tenant.id, coll.name, "queued", now, now, files=spooled,
            idempotency_key=idempotency_key, request_hash=digest, **state.runner.lease(),
        )  # fmt: skip
        stored, created = await engine.run(lambda: state.control.create_job(job))
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    if not created:
        shutil.rmtree(folder, ignore_errors=True)
        if stored.request_hash != digest:
            raise HTTPException(409, "this Idempotency-Key was used for a different upload")
        response.headers["Idempotent-Replayed"] = "true"
        return job_out(stored)
    await engine.run(lambda: state.runner.submit(stored))
    response.headers["Location"] = f"/v1/jobs/{stored.id}"
    return job_out(stored)
