"""The ``waypost`` command line: one module per command group, each registering its commands on ``app``.

The import order below is the order of the commands in ``waypost --help``."""

from __future__ import annotations

# isort: off
from waypost.cli.app import app, main
from waypost.cli import collections, query, stats, evaluate, rerank, tree, graph, router, bench, serve, mcp  # noqa: F401

# isort: on

__all__ = ["app", "main"]
