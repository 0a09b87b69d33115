"""MCP over streamable HTTP at ``/mcp``, on the same server, with the same API keys as ``/v1``.

Every HTTP request is authenticated on its own (401 without a valid key) before the MCP session manager sees
it; its tools act for that key's tenant and scopes, and an MCP session can only be used with the key that
opened it. A server on a loopback address accepts only loopback Host headers (DNS rebinding)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from fastapi import FastAPI
from mcp.server import MCPServer, ServerRequestContext
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from waypost.server.auth import Principal
from waypost.server.config import LOOPBACK
from waypost.server.deps import ServerState, local_principal
from waypost.server.guard import bearer_principal, refuse
from waypost.server.mcp import build_mcp_server

log = logging.getLogger(__name__)

PATH = "/mcp"
PRINCIPAL = "waypost.principal"  # the ASGI scope key the endpoint leaves the request's principal under
LOOPBACK_HOSTS = ["127.0.0.1", "127.0.0.1:*", "localhost", "localhost:*", "[::1]", "[::1]:*"]
LOOPBACK_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*",
                    "http://127.0.0.1", "http://localhost", "http://[::1]"]  # fmt: skip


def request_principal(ctx: ServerRequestContext[Any, Any] | None) -> Principal:
    """The principal the endpoint authenticated for the HTTP request that carried this MCP message."""
    request = ctx.request if ctx is not None else None
    principal = request.scope.get(PRINCIPAL) if isinstance(request, Request) else None
    if not isinstance(principal, Principal):
        raise PermissionError("an API key is required: Authorization: Bearer wp_...")
    return principal


def transport_security(state: ServerState) -> TransportSecuritySettings:
    """On a loopback address: loopback Host (any port) and Origin only. Elsewhere every request carries an
    API key a rebinding page cannot attach, and the public host name is not known here, so Host is not checked."""
    if state.config.host not in LOOPBACK:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=list(LOOPBACK_HOSTS),
        allowed_origins=[*LOOPBACK_ORIGINS, *state.config.cors_origins],
    )


class McpEndpoint:
    """The ASGI endpoint at ``/mcp``: authenticates the key, then hands the request to the session manager."""

    def __init__(self, state: ServerState, server: MCPServer[Any]) -> None:
        self.state = state
        self.server = server
        self.manager: StreamableHTTPSessionManager | None = None

    def principal(self, scope: Scope) -> Principal | None:
        if not self.state.config.auth:
            if self.state.local is None:
                self.state.local = local_principal(self.state)
            return self.state.local
        return bearer_principal(self.state, Headers(scope=scope))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        principal = self.principal(scope)
        if principal is None:
            log.debug("MCP request refused: no valid API key")
            await refuse(send, 401, "a valid API key is required: Authorization: Bearer wp_...")
            return
        if self.manager is None:
            await refuse(send, 503, "MCP is not running (the server is starting or stopping)")
            return
        scope[PRINCIPAL] = principal
        # The session manager binds each MCP session to the credential that opened it: the key's id.
        token = AccessToken(token=principal.key.id, client_id=principal.key.id, scopes=list(principal.key.scopes),
                            subject=principal.tenant.id)  # fmt: skip
        scope["user"] = AuthenticatedUser(token)
        await self.manager.handle_request(scope, receive, send)

    def lifespan(self) -> AbstractAsyncContextManager[None]:
        """Runs a fresh session manager for the life of the app (a manager runs only once)."""

        @asynccontextmanager
        async def run() -> AsyncIterator[None]:
            config = self.state.config
            self.server.streamable_http_app(
                streamable_http_path=PATH,
                transport_security=transport_security(self.state),
                max_request_body_size=2 * config.max_file_bytes + (1 << 20),
                host=config.host,
            )
            manager = self.server.session_manager
            async with manager.run():
                self.manager = manager
                try:
                    yield
                finally:
                    self.manager = None

        return run()


def mount_mcp(app: FastAPI, state: ServerState) -> None:
    """Serve MCP at ``/mcp`` (GET, POST, DELETE); ``app.state.mcp_lifespan`` runs its session manager."""
    endpoint = McpEndpoint(state, build_mcp_server(state, request_principal))
    app.router.routes.append(Route(PATH, endpoint, methods=["GET", "POST", "DELETE"], include_in_schema=False))
    lifespan: Callable[[], AbstractAsyncContextManager[None]] = endpoint.lifespan
    app.state.mcp_lifespan = lifespan
