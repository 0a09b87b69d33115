"""What every route depends on: the server's state, the caller's principal (from its key alone) and its
tenant's engine. Nothing a client sends besides the key chooses the tenant."""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from waypost.aio import AsyncCollection, AsyncEngine
from waypost.errors import CollectionNotFoundError
from waypost.server.auth import Principal, authenticate
from waypost.server.config import ServerConfig
from waypost.server.jobs import JobRunner
from waypost.server.tenants import LOCAL_TENANT, TenantEngines
from waypost.store.control import ApiKey, ControlStore
from waypost.validation import AUTO_COLLECTION

PRINCIPAL_STATE = "waypost_principal"  # where ``server.guard`` keeps the principal it found
AUTO_ELSEWHERE = "collection auto (waypost chooses) works for retrieve and answer only; name a collection here"

bearer = HTTPBearer(auto_error=False, description="An API key: `waypost key create TENANT --scope read`")


@dataclass
class ServerState:
    config: ServerConfig
    control: ControlStore
    engines: TenantEngines
    runner: JobRunner
    ready: bool = False
    local: Principal | None = None  # the one principal of a --no-auth server
    _async: dict[str, AsyncEngine] = field(default_factory=dict)

    def async_engine(self, principal: Principal) -> AsyncEngine:
        """The tenant's engine for async code; one per tenant, so its thread limit holds across requests."""
        engine = self.engines.engine(principal.tenant)
        found = self._async.get(principal.tenant.id)
        if found is None or found.sync is not engine:
            found = self._async.setdefault(principal.tenant.id, AsyncEngine(engine, self.config.query_threads))
        return found


def server_state(request: Request) -> ServerState:
    state: ServerState = request.app.state.waypost
    return state


def local_principal(state: ServerState) -> Principal:
    from waypost.server.auth import create_tenant

    tenant = state.control.tenant_by_name(LOCAL_TENANT) or create_tenant(state.control, LOCAL_TENANT)
    return Principal(tenant, ApiKey("local", tenant.id, ("admin",), "--no-auth", time.time()))


def unauthorized(message: str) -> HTTPException:
    return HTTPException(401, message, headers={"WWW-Authenticate": "Bearer"})


def current_principal(
    request: Request,
    state: Annotated[ServerState, Depends(server_state)],
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> Principal:
    if not state.config.auth:
        if state.local is None:
            state.local = local_principal(state)
        return state.local
    checked: Principal | None = getattr(request.state, PRINCIPAL_STATE, None)
    if checked is not None:  # the request guard checked this request's key before its body was read
        return checked
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise unauthorized("an API key is required: Authorization: Bearer wp_...")
    principal = authenticate(state.control, credentials.credentials)
    if principal is None:
        raise unauthorized("invalid or revoked API key")
    return principal


def require(scope: str) -> Callable[..., Principal]:
    """A dependency: the caller's principal, if its key holds ``scope`` (403 otherwise)."""

    def check(principal: Annotated[Principal, Depends(current_principal)]) -> Principal:
        if not principal.allows(scope):
            raise HTTPException(403, f"this key lacks the {scope!r} scope")
        return principal

    return check


Reader = Annotated[Principal, Depends(require("read"))]
Writer = Annotated[Principal, Depends(require("write"))]
State = Annotated[ServerState, Depends(server_state)]


def tenant_engine(state: State, principal: Annotated[Principal, Depends(current_principal)]) -> AsyncEngine:
    return state.async_engine(principal)


TenantEngine = Annotated[AsyncEngine, Depends(tenant_engine)]


async def open_collection(engine: AsyncEngine, name: str) -> AsyncCollection:
    """The tenant's collection, or 404 (another tenant's collection is simply not there)."""
    try:
        return await engine.collection(name)
    except CollectionNotFoundError:
        if name == AUTO_COLLECTION:  # a route that takes one collection: say where auto works
            raise HTTPException(404, AUTO_ELSEWHERE) from None
        raise HTTPException(404, f"no collection {name!r}") from None


Handler = Callable[..., Coroutine[Any, Any, Any]]
