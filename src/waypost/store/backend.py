"""Where a store lives and what it is made of: the one place that knows the embedded backend is SQLite.

``open_backend(directory)`` gives the documents, trees and graphs of the store kept in ``directory``;
everything outside ``waypost.store`` goes through it and the protocols, never through file names."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from waypost.base import DocumentStore
from waypost.store.control import ControlStore
from waypost.store.protocols import GraphRepository, RouteLog, TreeRepository
from waypost.store.sqlite import SQLiteStore
from waypost.store.sqlite_control import SQLiteControl
from waypost.store.sqlite_graphs import SQLiteGraphRepository
from waypost.store.sqlite_routes import SQLiteRouteLog
from waypost.store.sqlite_trees import SQLiteTreeRepository

SQLITE_FILE = "store.sqlite"  # the system of record and the derived tables, in the store directory


@dataclass(frozen=True)
class Backend:
    """One store: its documents (the system of record), the repositories of derived structures, route telemetry."""

    location: str  # where it lives, for messages
    documents: DocumentStore
    trees: TreeRepository
    graphs: GraphRepository
    routes: RouteLog  # route telemetry (``waypost.route.telemetry``)

    def close(self) -> None:
        self.documents.close()

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def store_exists(directory: str | Path) -> bool:
    """Whether ``directory`` holds a store (reading commands refuse to create one)."""
    return (Path(directory) / SQLITE_FILE).exists()


def open_backend(directory: str | Path) -> Backend:
    """The store kept in ``directory``, created if missing."""
    path = Path(directory) / SQLITE_FILE
    documents = SQLiteStore(path)
    return Backend(str(path), documents, SQLiteTreeRepository(path), SQLiteGraphRepository(path), SQLiteRouteLog(path))


CONTROL_FILE = "control.sqlite"  # a server's tenants, key hashes and jobs, in its root directory


def open_control(location: str | Path) -> ControlStore:
    """The control plane (a ``TenantDirectory`` and a ``JobLog``) kept in the directory ``location``, or in the
    PostgreSQL database a ``postgresql://`` URL names (its ``?schema=``, else ``public``); created if missing."""
    if isinstance(location, str) and location.startswith(("postgresql://", "postgres://")):
        from waypost.store.pg_base import open_database  # psycopg only when PostgreSQL is asked for
        from waypost.store.postgres_side import PostgresControl

        return PostgresControl(open_database(location))
    return SQLiteControl(Path(location) / CONTROL_FILE)


__all__ = ["Backend", "open_backend", "open_control", "store_exists"]
