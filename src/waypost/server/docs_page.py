"""The API's interactive docs at ``/docs``, served from this server: Swagger UI's files come from the
``swagger-ui-bundle-v2`` wheel under ``/docs-assets``, so the page works offline (FastAPI's own page loads
them from a CDN). Without the wheel, FastAPI's page is served as before."""

from __future__ import annotations

import logging

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from starlette.staticfiles import StaticFiles

log = logging.getLogger(__name__)
ASSETS = "/docs-assets"


def mount_docs(app: FastAPI) -> None:
    """``/docs`` (and its assets) for ``app``, which was made with ``docs_url=None``."""
    try:
        from swagger_ui_bundle import swagger_ui_path
    except ImportError:
        log.info("swagger-ui-bundle-v2 is not installed: /docs loads Swagger UI from its CDN")
        js, css, icon = (
            "https://cdn.jsdelivr.net/npm/swagger-ui-dist@5/swagger-ui-bundle.js",
            "https://cdn.jsdelivr.net/npm/swagger-ui-dist@5/swagger-ui.css",
            "https://fastapi.tiangolo.com/img/favicon.png",
        )
    else:
        app.mount(ASSETS, StaticFiles(directory=str(swagger_ui_path), check_dir=True), name="docs-assets")
        js, css, icon = f"{ASSETS}/swagger-ui-bundle.js", f"{ASSETS}/swagger-ui.css", f"{ASSETS}/favicon-32x32.png"
    title = f"{app.title} API"
    openapi_url = app.openapi_url or "/openapi.json"

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url, title=title, swagger_js_url=js, swagger_css_url=css, swagger_favicon_url=icon
        )
