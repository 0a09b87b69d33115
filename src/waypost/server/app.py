"""The ASGI application: ``create_app(ServerConfig(root=...))``; ``waypost serve`` runs it with uvicorn."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from waypost import __version__
from waypost.errors import CollectionNotFoundError, ModelMismatchError, StoreUnavailableError, WaypostError
from waypost.server.config import ServerConfig
from waypost.server.deps import ServerState
from waypost.server.docs_page import mount_docs
from waypost.server.guard import RequestGuard
from waypost.server.jobs import JobRunner
from waypost.server.models import ErrorOut
from waypost.server.routes import answer, collections, health, jobs, query, uploads
from waypost.server.tenants import TenantEngines
from waypost.store.backend import open_control
from waypost.store.control import ControlError

log = logging.getLogger(__name__)
STATIC = Path(__file__).parent / "static"
API_ERRORS: dict[int | str, dict[str, Any]] = {  # what any /v1 route may answer besides its own codes
    400: {"model": ErrorOut, "description": "Bad input (an unusable name, filter or parameter)"},
    401: {"model": ErrorOut, "description": "Missing, invalid or revoked API key"},
    403: {"model": ErrorOut, "description": "The key lacks the scope this route needs"},
    404: {"model": ErrorOut, "description": "No such collection, document or job (for this key's tenant)"},
    422: {"model": ErrorOut, "description": "The request does not match the API's schema"},
}


def _error(status: int, message: str, detail: Any = None) -> JSONResponse:
    return JSONResponse({"error": message, "detail": detail}, status_code=status)


MAX_SCHEMA_ERRORS = 20  # schema errors listed in one 422
MAX_MESSAGE_CHARS = 2_000  # an error message's length; what a client sent is cut there
_LOOKED_IN = re.compile(r"\s*\(looked in [^)]*\)")


def without_paths(message: str, root: Path) -> str:
    """A library message as a client may read it: no server directories (the root, home, where it looked)."""
    message = _LOOKED_IN.sub("", message)
    for path in sorted({str(Path(root).resolve()), str(Path(root)), str(Path.home())}, key=len, reverse=True):
        if path not in ("", ".", "/"):
            message = message.replace(path, "…")
    return message


def _cut(value: Any, limit: int) -> Any:
    return value[:limit] + "…" if isinstance(value, str) and len(value) > limit else value


def short_error(error: Mapping[str, Any]) -> dict[str, Any]:
    """A schema error as a client reads it: where, what and which kind, each cut short (a key a client sent
    may be a megabyte long); never the input itself."""
    return {
        "loc": [_cut(part, 100) for part in error.get("loc", ())],
        "msg": _cut(error.get("msg", ""), 500),
        "type": error.get("type", ""),
    }


def add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(HTTPException)  # starlette's: FastAPI raises it too (a body it cannot parse, 404, 405)
    async def http_error(_: Request, exc: HTTPException) -> JSONResponse:
        if isinstance(exc.detail, str):
            message = exc.detail
        elif exc.status_code == 422:  # a list of schema errors (an upload's JSON documents), as FastAPI's own
            message = "the request does not match the API's schema"
        else:
            message = "the request was refused"
        detail = None if isinstance(exc.detail, str) else exc.detail
        response = _error(exc.status_code, message, detail)
        if exc.headers:
            response.headers.update(exc.headers)
        return response

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [short_error(e) for e in exc.errors()[:MAX_SCHEMA_ERRORS]]
        message = "the request does not match the API's schema"
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if request.method in ("POST", "PUT", "PATCH") and content_type != "application/json":
            message += f"; send JSON with Content-Type: application/json (got {content_type or 'none'!r})"
        return _error(422, message, errors)

    @app.exception_handler(WaypostError)
    async def waypost_error(request: Request, exc: WaypostError) -> JSONResponse:
        if isinstance(exc, CollectionNotFoundError):
            return _error(404, "no such collection")  # the library's message names the store's location
        if isinstance(exc, ModelMismatchError):
            return _error(409, str(exc))
        if isinstance(exc, StoreUnavailableError):  # the database is down or restarting: not the request's fault
            log.warning("store unavailable: %s", exc)
            response = _error(503, "the store is unavailable; retry shortly")
            response.headers["Retry-After"] = "5"
            return response
        message = without_paths(str(exc), request.app.state.waypost.config.root)
        if len(message) > MAX_MESSAGE_CHARS:  # a huge name or value sent is not echoed whole
            message = message[:MAX_MESSAGE_CHARS] + f"… ({len(message):,} characters)"
        return _error(400, message)  # bad input

    @app.exception_handler(ControlError)
    async def control_error(_: Request, exc: ControlError) -> JSONResponse:
        return _error(409, str(exc))

    @app.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error")
        return _error(500, f"internal error ({type(exc).__name__}); the server log has the details")


def create_app(config: ServerConfig) -> FastAPI:
    control = open_control(config.control_location)
    engines = TenantEngines(config.root, config.engine, config.database)
    runner = JobRunner(
        control,
        control,
        engines,
        config.root / "spool",
        config.job_workers,
        config.max_job_attempts,
        config.job_lease_s,
    )
    state = ServerState(config, control, engines, runner)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        runner.resume_unfinished()
        state.ready = True
        mcp_lifespan = getattr(app.state, "mcp_lifespan", None)
        try:
            if mcp_lifespan is not None:
                async with mcp_lifespan():
                    yield
            else:
                yield
        finally:
            state.ready = False
            runner.close(wait=True)
            engines.close()

    app = FastAPI(
        title="waypost",
        version=__version__,
        description="Adaptive retrieval over your documents: collections, ingestion jobs, retrieval "
        "(`auto` picks the pipeline), comparisons and cited answers. Every /v1 route takes an API key.",
        lifespan=lifespan,
        docs_url=None,  # ``server.docs_page``: Swagger UI from this server, not a CDN
    )
    app.state.waypost = state
    add_error_handlers(app)
    app.add_middleware(RequestGuard, state=state)  # inside CORS, so its 401 and 413 carry CORS headers
    if config.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(config.cors_origins),
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=[
                "Authorization", "Content-Type", "Idempotency-Key",
                "Mcp-Session-Id", "Mcp-Protocol-Version", "Last-Event-ID",
            ],
            expose_headers=["Mcp-Session-Id", "Location", "Idempotent-Replayed"],
        )  # fmt: skip
    app.include_router(health.router)
    for module in (collections, uploads, jobs, query, answer):
        app.include_router(module.router, responses=API_ERRORS)
    mount_docs(app)
    mount_extras(app, state)
    return app


def mount_extras(app: FastAPI, state: ServerState) -> None:
    """The playground at ``/`` and MCP at ``/mcp``, when their modules are present."""
    try:
        from waypost.server.playground import mount_playground
    except ImportError:
        log.debug("no playground module")
    else:
        mount_playground(app)
    try:
        from waypost.server.mcp_http import mount_mcp
    except ImportError:
        log.debug("no MCP module")
    else:
        mount_mcp(app, state)
