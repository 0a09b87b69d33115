"""``waypost mcp``: the MCP server over stdio, for MCP clients that launch it (Claude Desktop, IDEs, agents).

Either ``--store DIR``: one local store, full access (its ingestion jobs live as long as the process); or
``--root DIR --key TOKEN``: a server directory, acting for the key's tenant with the key's scopes. Nothing but
MCP messages is written to stdout."""

from __future__ import annotations

import logging
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from waypost.cli.app import app
from waypost.cli.common import (
    LlmOpt,
    ServerCollectionsProfileOpt,
    ServerRouterProfileOpt,
    checked_collection_selector,
    checked_router_profile,
)
from waypost.engine import EngineConfig
from waypost.errors import WaypostError
from waypost.server.tenants import TenantEngines
from waypost.store.control import Tenant

if TYPE_CHECKING:
    from waypost.server.auth import Principal
    from waypost.server.deps import ServerState


class StoreEngines(TenantEngines):
    """``--store``: every tenant (there is one, local) is the store at ``path``."""

    def __init__(self, path: Path, config: EngineConfig) -> None:
        super().__init__(path, config)
        self.path = Path(path)

    def store_path(self, tenant: Tenant) -> Path:
        return self.path


KeyOpt = Annotated[
    str | None,
    typer.Option("--key", envvar="WAYPOST_API_KEY", help="With --root: an API key (waypost key create); its tenant "
                 "and scopes are the server's."),
]  # fmt: skip


@app.command("mcp")
def mcp_command(
    store: Annotated[Path | None, typer.Option("--store", "-s", help="A local store: full access.")] = None,
    root: Annotated[Path | None, typer.Option("--root", "-r", help="A server directory (with --key).")] = None,
    key: KeyOpt = None,
    llm: LlmOpt = "none",
    collections_profile: ServerCollectionsProfileOpt = None,
    router_profile: ServerRouterProfileOpt = None,
) -> None:
    """Serve MCP over stdio: tools waypost_search, waypost_answer, waypost_list_collections,
    waypost_add_document (write keys) and waypost_get_job; documents as waypost://COLLECTION/DOCUMENT."""
    if (store is None) == (root is None):
        raise WaypostError("give either --store DIR (a local store) or --root DIR --key TOKEN (a server's tenant)")
    if root is not None and not key:
        raise WaypostError("--root needs --key TOKEN (or WAYPOST_API_KEY): the key chooses the tenant and scopes")
    selector = checked_collection_selector(collections_profile)
    routing = checked_router_profile(router_profile)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)  # stdout carries the protocol alone
    import anyio

    from waypost.server.mcp import build_mcp_server

    with mcp_state(store, root, key, llm, selector, routing) as (state, principal):
        server = build_mcp_server(state, lambda _ctx: principal)
        anyio.run(server.run_stdio_async)


@contextmanager
def mcp_state(
    store: Path | None,
    root: Path | None,
    key: str | None,
    llm: str,
    collection_selector: str = "embedding",
    router_profile: Path | None = None,
) -> Iterator[tuple[ServerState, Principal]]:
    """The server state and the one principal of this process; closed (running jobs finished) on the way out.
    Unlike ``waypost serve`` it resumes no unfinished jobs: with --root those belong to the server.
    ``collection_selector``: ``EngineConfig.collection_selector`` (how collection auto chooses);
    ``router_profile``: the router profile strategy auto uses (None: the shipped one)."""
    from waypost.route.config import RouterConfig
    from waypost.server.auth import authenticate
    from waypost.server.config import ServerConfig
    from waypost.server.deps import ServerState, local_principal
    from waypost.server.jobs import JobRunner
    from waypost.store.backend import CONTROL_FILE, open_control, store_exists

    if store is not None and not store_exists(store):
        raise WaypostError(f"no waypost store at {store} (create one with: waypost add PATH --store {store})")
    if root is not None and not (root / CONTROL_FILE).is_file():
        raise WaypostError(
            f"no waypost server directory at {root} (create one with: waypost tenant create NAME --root {root})"
        )
    scratch = Path(tempfile.mkdtemp(prefix="waypost-mcp-")) if store is not None else None  # --store: jobs live here
    try:
        config = ServerConfig(
            root=scratch or root or Path("."),
            engine=EngineConfig(
                llm=llm, collection_selector=collection_selector, router=RouterConfig(profile=router_profile)
            ),
        )
        engines = StoreEngines(store, config.engine) if store is not None else TenantEngines(config.root, config.engine)
        control = open_control(config.root)
        runner = JobRunner(control, control, engines, config.root / "spool", config.job_workers)
        state = ServerState(config, control, engines, runner, ready=True)
        try:
            principal = local_principal(state) if store is not None else authenticate(control, key or "")
            if principal is None:
                raise WaypostError("invalid or revoked API key")
            yield state, principal
        finally:
            runner.close(wait=True)
            engines.close()
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
