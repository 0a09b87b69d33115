"""``waypost serve`` and the control plane it reads: ``waypost tenant ...`` and ``waypost key ...``."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from waypost.cli.app import app, console, err
from waypost.cli.common import (
    JsonOpt,
    LlmOpt,
    ServerCollectionsProfileOpt,
    ServerRouterProfileOpt,
    checked_collection_selector,
    checked_router_profile,
)
from waypost.errors import WaypostError
from waypost.store.control import ControlError, ControlStore

if TYPE_CHECKING:
    from waypost.server.config import ServerConfig

ServerRootOpt = Annotated[
    Path,
    typer.Option(
        "--root", "-r", envvar="WAYPOST_SERVER_ROOT", help="Server directory: control.sqlite and one store per tenant."
    ),
]
DEFAULT_ROOT = Path(".waypost-server")
DatabaseOpt = Annotated[
    str | None,
    typer.Option(
        "--database",
        envvar="WAYPOST_DATABASE",
        help="postgresql://... : keep tenants, keys, jobs and every tenant's store there (a schema each).",
    ),
]

tenant_app = typer.Typer(help="Tenants of a server: each has its own store, reached only with its own keys.")
key_app = typer.Typer(help="API keys: bearer tokens bound to one tenant, with a scope (read, write or admin).")
app.add_typer(tenant_app, name="tenant")
app.add_typer(key_app, name="key")


def _control(root: Path, database: str | None) -> ControlStore:
    from waypost.server.config import ServerConfig
    from waypost.store.backend import open_control

    try:
        return open_control(ServerConfig(root=root, database=database).control_location)
    except ValueError as exc:
        raise WaypostError(str(exc)) from None


@tenant_app.command("create")
def tenant_create(
    name: str, root: ServerRootOpt = DEFAULT_ROOT, database: DatabaseOpt = None, as_json: JsonOpt = False
) -> None:
    """Add a tenant."""
    from waypost.server.auth import create_tenant

    try:
        tenant = create_tenant(_control(root, database), name)
    except ControlError as exc:
        raise WaypostError(str(exc)) from None
    if as_json:
        print(json.dumps({"id": tenant.id, "name": tenant.name}))
    else:
        console.print(f"tenant [bold]{tenant.name}[/] ({tenant.id})")


@tenant_app.command("list")
def tenant_list(root: ServerRootOpt = DEFAULT_ROOT, database: DatabaseOpt = None, as_json: JsonOpt = False) -> None:
    """List tenants."""
    tenants = _control(root, database).tenants()
    if as_json:
        print(json.dumps([{"id": t.id, "name": t.name, "created_at": t.created_at} for t in tenants]))
        return
    for t in tenants:
        console.print(f"{t.name}\t{t.id}")


@key_app.command("create")
def key_create(
    tenant: Annotated[str, typer.Argument(help="Tenant name or id.")],
    scope: Annotated[str, typer.Option(help="read, write (includes read) or admin (includes both).")] = "read",
    label: Annotated[str, typer.Option(help="A note to tell keys apart.")] = "",
    root: ServerRootOpt = DEFAULT_ROOT,
    database: DatabaseOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Create a key; the token is printed once (only its hash is stored)."""
    from waypost.server.auth import create_key, find_tenant

    control = _control(root, database)
    try:
        issued = create_key(control, find_tenant(control, tenant), scope, label)
    except ControlError as exc:
        raise WaypostError(str(exc)) from None
    if as_json:
        print(json.dumps({"key_id": issued.key.id, "token": issued.token, "scopes": list(issued.key.scopes)}))
    else:
        err.print(f"key {issued.key.id} ({scope}) for {tenant}; store the token now, it is not shown again:")
        print(issued.token)


@key_app.command("list")
def key_list(
    tenant: Annotated[str, typer.Argument(help="Tenant name or id.")],
    root: ServerRootOpt = DEFAULT_ROOT,
    database: DatabaseOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List a tenant's keys (ids and scopes, never tokens)."""
    from waypost.server.auth import find_tenant

    control = _control(root, database)
    try:
        keys = control.keys(find_tenant(control, tenant).id)
    except ControlError as exc:
        raise WaypostError(str(exc)) from None
    rows = [
        {"key_id": k.id, "scopes": list(k.scopes), "label": k.label, "revoked": k.revoked_at is not None} for k in keys
    ]
    if as_json:
        print(json.dumps(rows))
        return
    for k in keys:
        console.print(f"{k.id}\t{','.join(k.scopes)}\t{'revoked' if k.revoked_at is not None else 'active'}")


@key_app.command("revoke")
def key_revoke(key_id: str, root: ServerRootOpt = DEFAULT_ROOT, database: DatabaseOpt = None) -> None:
    """Revoke a key by its id (the part after ``wp_``); requests with it get 401 from then on."""
    if not _control(root, database).revoke_key(key_id, time.time()):
        raise WaypostError(f"no active key {key_id!r}")
    console.print(f"revoked {key_id}")


@app.command()
def serve(
    root: ServerRootOpt = DEFAULT_ROOT,
    database: DatabaseOpt = None,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535)] = 8600,
    no_auth: Annotated[bool, typer.Option("--no-auth", help="No keys (loopback only): one local tenant.")] = False,
    cors: Annotated[list[str], typer.Option("--cors", help="An origin allowed to call the API (repeatable).")] = [],  # noqa: B006
    workers: Annotated[int, typer.Option(min=1, help="Ingestion worker threads.")] = 1,
    max_file_mb: Annotated[
        float, typer.Option(min=0.001, max=64.0, help="Largest file an upload may hold, in MiB (64 at most).")
    ] = 32.0,
    llm: LlmOpt = "none",
    collections_profile: ServerCollectionsProfileOpt = None,
    router_profile: ServerRouterProfileOpt = None,
) -> None:
    """Run the HTTP API, the playground (/) and MCP (/mcp) for every tenant of ROOT."""
    import uvicorn

    from waypost.server.app import create_app

    config = serve_config(
        root, database, host, no_auth, tuple(cors), workers, max_file_mb, llm, collections_profile, router_profile
    )
    if no_auth:
        err.print(f"[bold yellow]auth is off[/]: anyone who can reach {host}:{port} acts as the one local tenant")
    err.print(f"waypost serving {root} on http://{host}:{port} (API docs at /docs, playground at /)")
    uvicorn.run(create_app(config), host=host, port=port, log_level="info", timeout_graceful_shutdown=5)


def serve_config(
    root: Path,
    database: str | None,
    host: str,
    no_auth: bool,
    cors: tuple[str, ...],
    workers: int,
    max_file_mb: float,
    llm: str,
    collections_profile: Path | None,
    router_profile: Path | None = None,
) -> ServerConfig:
    """What ``serve`` runs with, checked (bad collections or router profiles first) before anything is served."""
    from waypost.engine import EngineConfig
    from waypost.route.config import RouterConfig
    from waypost.server.config import ServerConfig

    selector = checked_collection_selector(collections_profile)
    router = RouterConfig(profile=checked_router_profile(router_profile))
    try:
        return ServerConfig(
            root=root,
            database=database,
            engine=EngineConfig(llm=llm, collection_selector=selector, router=router),
            auth=not no_auth,
            host=host,
            cors_origins=cors,
            job_workers=workers,
            max_file_bytes=int(max_file_mb * 1024 * 1024),
        )
    except ValueError as exc:
        raise WaypostError(str(exc)) from None
