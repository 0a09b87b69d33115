"""Where a store lives and what it is made of: the one place that knows the embedded backend is SQLite and
the server backend PostgreSQL.

``open_backend(directory)`` gives the documents, trees and graphs of the store kept in ``directory`` (or, with
a ``postgresql://`` URL, in that database); everything outside ``waypost.store`` goes through it and the
protocols, never through file names."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from waypost.base import DocumentStore
from waypost.errors import WaypostError
from waypost.store.control import ControlStore
from waypost.store.protocols import GraphRepository, RouteLog, TreeRepository
from waypost.store.sqlite import SQLiteStore
from waypost.store.sqlite_control import SQLiteControl
from waypost.store.sqlite_graphs import SQLiteGraphRepository
from waypost.store.sqlite_routes import SQLiteRouteLog
from waypost.store.sqlite_trees import SQLiteTreeRepository

SQLITE_FILE = "store.sqlite"  # the system of record and the derived tables, in the store directory
DATABASE_MARKER = "database"  # in the working directory of a PostgreSQL store: which one (no password)


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


def is_database_url(location: object) -> bool:
    """Whether ``location`` names a PostgreSQL database (``postgresql://...``) rather than a directory."""
    return isinstance(location, str) and location.startswith(("postgresql://", "postgres://"))


def database_label(url: str) -> str:
    """``url`` without its password: what messages, logs and local directory names may show."""
    from waypost.store.pg_base import redact

    return redact(url)


def working_directory(url: str) -> Path:
    """Where an engine on the database ``url`` keeps its local state (indexes, caches) when no directory is
    given: ``~/.cache/waypost/pg/`` and a digest of the URL without its password."""
    digest = hashlib.sha256(database_label(url).encode("utf-8")).hexdigest()[:16]
    return Path.home() / ".cache" / "waypost" / "pg" / digest


def store_exists(directory: str | Path, url: str | None = None) -> bool:
    """Whether ``directory`` holds a store, or with ``url`` whether that database can be reached and holds
    waypost's documents (reading commands refuse to create one)."""
    if url is None:
        return (Path(directory) / SQLITE_FILE).exists()
    from waypost.store.postgres_schema import documents_exist

    return documents_exist(url)


def open_backend(directory: str | Path, url: str | None = None) -> Backend:
    """The store kept in ``directory``, created if missing; with ``url`` (``postgresql://...``) the one in that
    database, ``directory`` being the local working directory of whoever opens it (indexes, caches)."""
    directory = Path(directory)
    marker = directory / DATABASE_MARKER
    if url is None:
        if marker.exists():
            raise WaypostError(
                f"{directory} is the working directory of the PostgreSQL store {marker.read_text().strip()}: "
                "open that store by its URL"
            )
        path = directory / SQLITE_FILE
        documents: DocumentStore = SQLiteStore(path)
        return Backend(
            str(path), documents, SQLiteTreeRepository(path), SQLiteGraphRepository(path), SQLiteRouteLog(path)
        )
    if not is_database_url(url):
        raise WaypostError(f"a store URL starts with postgresql://, not {database_label(url)!r}")
    if (directory / SQLITE_FILE).exists():
        raise WaypostError(f"{directory} holds an embedded store: give a PostgreSQL store its own working directory")
    from waypost.store.postgres import PostgresStore  # psycopg only when PostgreSQL is asked for
    from waypost.store.postgres_side import PostgresGraphRepository, PostgresRouteLog, PostgresTreeRepository

    store = PostgresStore(url)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        marker.write_text(store.location + "\n", encoding="utf-8")
        db = store.db
        return Backend(
            store.location, store, PostgresTreeRepository(db), PostgresGraphRepository(db), PostgresRouteLog(db)
        )
    except BaseException:
        store.close()
        raise


def in_schema(url: str, schema: str) -> str:
    """``url`` with its ``?schema=`` set to ``schema``: how one database holds several stores (a server's
    control plane, and one schema per tenant)."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    query["schema"] = schema
    return urlunsplit(parts._replace(query=urlencode(query)))


CONTROL_FILE = "control.sqlite"  # a server's tenants, key hashes and jobs, in its root directory


def open_control(location: str | Path) -> ControlStore:
    """The control plane (a ``TenantDirectory`` and a ``JobLog``) kept in the directory ``location``, or in the
    PostgreSQL database a ``postgresql://`` URL names (its ``?schema=``, else ``public``); created if missing."""
    if isinstance(location, str) and location.startswith(("postgresql://", "postgres://")):
        from waypost.store.pg_base import open_database  # psycopg only when PostgreSQL is asked for
        from waypost.store.postgres_side import PostgresControl

        return PostgresControl(open_database(location))
    return SQLiteControl(Path(location) / CONTROL_FILE)


__all__ = [
    "Backend",
    "database_label",
    "in_schema",
    "is_database_url",
    "open_backend",
    "open_control",
    "store_exists",
]
