"""What a /v1 request is checked for before its body is read: its size, then (with auth on) its API key.
FastAPI reads and parses a JSON body before it runs any dependency, so without this a client with no key
could make the server hold a body of any size. ``/mcp`` checks its key and body size itself."""

from __future__ import annotations

import json
import logging
import re

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from waypost.errors import StoreUnavailableError
from waypost.server.auth import Principal, authenticate
from waypost.server.deps import PRINCIPAL_STATE, ServerState

log = logging.getLogger(__name__)
BODY_METHODS = ("POST", "PUT", "PATCH", "DELETE")
_UPLOAD = re.compile(r"^/v1/collections/[^/]+/documents$")  # files or JSON documents: the upload limit


def body_limit(state: ServerState, method: str, path: str) -> int:
    """The most bytes a request body may hold: an upload's limit on the documents route, else the JSON one."""
    config = state.config
    return config.max_upload_bytes if method == "POST" and _UPLOAD.match(path) else config.max_request_bytes


async def refuse(send: Send, status: int, message: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    """Answer from ASGI code outside the app's routes, as the app's error handlers do: ``{"error", "detail"}``."""
    body = json.dumps({"error": message, "detail": None}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *(extra or [])]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def bearer_principal(state: ServerState, headers: Headers) -> Principal | None:
    """The principal of a request's ``Authorization: Bearer`` key, or None (no key, another scheme, invalid)."""
    kind, _, token = headers.get("authorization", "").partition(" ")
    if kind.lower() != "bearer" or not token.strip():
        return None
    return authenticate(state.control, token.strip())


def _too_large(limit: int) -> str:
    return f"the request body is over the {limit:,}-byte limit"


class RequestGuard:
    """ASGI middleware: 413 for a /v1 body over its limit (by ``Content-Length``, or counted as it arrives),
    401 for a missing or invalid key, both before the route reads the body. The principal it finds is kept
    in the request's state, so the route's dependency does not look the key up again."""

    def __init__(self, app: ASGIApp, state: ServerState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in BODY_METHODS or not scope["path"].startswith("/v1/"):
            await self.app(scope, receive, send)
            return
        limit = body_limit(self.state, scope["method"], scope["path"])
        headers = Headers(scope=scope)
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > limit:
            await refuse(send, 413, _too_large(limit))
            return
        if self.state.config.auth:
            try:
                principal = await run_in_threadpool(self._principal, headers)
            except StoreUnavailableError:  # the control store is down: answered now, as the routes would
                log.warning("request guard: the control store is unavailable", exc_info=True)
                await refuse(send, 503, "the store is unavailable; retry shortly", [(b"retry-after", b"5")])
                return
            if principal is None:
                await refuse(send, 401, "a valid API key is required: Authorization: Bearer wp_...")
                return
            scope.setdefault("state", {})[PRINCIPAL_STATE] = principal
        await self._counted(scope, receive, send, limit)

    def _principal(self, headers: Headers) -> Principal | None:
        return bearer_principal(self.state, headers)

    async def _counted(self, scope: Scope, receive: Receive, send: Send, limit: int) -> None:
        """Runs the app with the body counted as it arrives (a chunked body has no length to read first);
        past ``limit`` the app sees the client gone, and the client gets a 413 instead of its response."""
        received = 0
        over = False
        started = False

        async def counting_receive() -> Message:
            nonlocal received, over
            if over:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    over = True
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if over:
                if not started:
                    started = True
                    await refuse(send, 413, _too_large(limit))
                return  # the app's own answer to a body it never got whole
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counting_receive, guarded_send)
        except Exception:
            if not over:
                raise  # the app's own failure; a cut-off body's is answered below
        if over and not started:
            await refuse(send, 413, _too_large(limit))
