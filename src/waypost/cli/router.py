"""``waypost router``: the router behind ``--strategy auto`` (its commands join this group)."""

from __future__ import annotations

import typer

from waypost.cli.app import app

router_app = typer.Typer(no_args_is_help=True, help="The router behind --strategy auto.")
app.add_typer(router_app, name="router")
