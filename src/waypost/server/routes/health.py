"""Liveness and readiness, without auth; ``whoami`` tells a key's tenant and scopes."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from waypost.server.auth import Principal
from waypost.server.deps import State, current_principal
from waypost.server.models import ErrorOut, WhoAmI

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", responses={503: {"description": "starting or stopping"}})
async def readyz(state: State) -> JSONResponse:
    if not state.ready:
        return JSONResponse({"status": "starting"}, status_code=503)
    return JSONResponse({"status": "ready"})


@router.get("/v1/whoami", response_model=WhoAmI, tags=["auth"], responses={401: {"model": ErrorOut}})
async def whoami(principal: Annotated[Principal, Depends(current_principal)]) -> WhoAmI:
    return WhoAmI(tenant=principal.tenant.name, key_id=principal.key.id, scopes=list(principal.key.scopes))
