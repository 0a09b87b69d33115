"""The web playground: a static, dependency-free page at ``/`` with its assets under ``/static``.

The page holds no data, so it is served without a key; every API call it makes carries the key the user
signs in with. Only ``/`` and ``/static/*`` are taken: ``/v1``, ``/docs``, ``/openapi.json``, ``/healthz``,
``/readyz`` and ``/mcp`` stay the API's."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from starlette.staticfiles import StaticFiles

STATIC = Path(__file__).parent / "static"
# Everything the page loads comes from this server; API calls go to the same origin.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
PAGE_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def mount_playground(app: FastAPI) -> None:
    """Serve the playground's index at ``/`` and its files under ``/static``."""

    @app.get("/", include_in_schema=False)
    async def playground() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html; charset=utf-8", headers=PAGE_HEADERS)

    app.mount("/static", StaticFiles(directory=STATIC, check_dir=True), name="playground-static")
