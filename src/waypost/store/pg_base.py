"""What every PostgreSQL part of a backend shares: one connection pool per database schema, transactions with
a bounded retry when the server goes away, and schema migrations recorded per component.

A URL selects it: ``postgresql://user@host:port/db`` (schema ``public``) or ``...?schema=NAME`` (a tenant's
own schema; created if missing). Only ``waypost.store`` imports this module."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg_pool import ConnectionPool

from waypost.errors import WaypostError

log = logging.getLogger(__name__)
T = TypeVar("T")

_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
CONNECT_TIMEOUT_S = 10
POOL_TIMEOUT_S = 30.0
RETRY_DELAYS_S = (0.2, 1.0, 3.0)  # a read is retried this often while the server restarts, then it fails


class DatabaseUnavailableError(WaypostError):
    """The PostgreSQL server could not be reached (or went away mid-transaction) within the retry budget."""


def is_postgres_url(location: object) -> bool:
    return isinstance(location, str) and location.startswith(("postgresql://", "postgres://"))


def split_url(url: str) -> tuple[str, str]:
    """``(conninfo URL without waypost's own parameters, schema name)``."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    schema = query.pop("schema", "public")
    if not _SCHEMA_NAME.match(schema):
        raise WaypostError(f"a schema name is lower-case letters, digits and '_', not {schema!r}")
    return urlunsplit(parts._replace(query=urlencode(query))), schema


def redact(url: str) -> str:
    """The URL without its password, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return urlunsplit(parts._replace(netloc=netloc))


class PgDatabase:
    """One schema of one database, shared by the documents, trees, graphs, routes and control parts."""

    def __init__(self, url: str, min_size: int = 1, max_size: int = 10) -> None:
        self.url = url
        self.conninfo, self.schema = split_url(url)
        self.location = redact(url)
        self.pool = ConnectionPool(
            self.conninfo,
            min_size=min_size,
            max_size=max_size,
            kwargs={"connect_timeout": CONNECT_TIMEOUT_S, "autocommit": True},
            configure=self._configure,
            check=ConnectionPool.check_connection,
            timeout=POOL_TIMEOUT_S,
            open=False,
            name=f"waypost:{self.schema}",
        )
        try:
            self.pool.open(wait=True, timeout=POOL_TIMEOUT_S)
        except psycopg.OperationalError as exc:
            raise DatabaseUnavailableError(f"cannot reach PostgreSQL at {self.location}: {exc}") from None
        except Exception as exc:  # psycopg_pool's PoolTimeout: no connection could be made in time
            self.pool.close()
            raise DatabaseUnavailableError(f"cannot reach PostgreSQL at {self.location}: {exc}") from None
        with psycopg.connect(self.conninfo, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S) as conn:
            conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        conn.execute(f'SET search_path TO "{self.schema}", public')
        from pgvector.psycopg import register_vector

        try:
            register_vector(conn)
        except psycopg.ProgrammingError:  # the extension is created right after the first connection
            log.debug("vector type not registered yet on this connection")

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Connection[Any]]:
        """One transaction: committed when the block ends, rolled back if it raises."""
        with self.pool.connection() as conn, conn.transaction():
            yield conn

    def run(self, work: Callable[[psycopg.Connection[Any]], T], retry: bool = True) -> T:
        """``work`` in one transaction; when the server goes away it is retried after short waits (reads
        and idempotent writes only: pass ``retry=False`` otherwise), then ``DatabaseUnavailableError``."""
        delays = RETRY_DELAYS_S if retry else ()
        for attempt in range(len(delays) + 1):
            try:
                with self.transaction() as conn:
                    return work(conn)
            except psycopg.OperationalError as exc:
                if attempt == len(delays):
                    raise DatabaseUnavailableError(f"PostgreSQL at {self.location} is unavailable: {exc}") from None
                log.warning("PostgreSQL connection lost (%s); retrying in %.1f s", exc, delays[attempt])
                time.sleep(delays[attempt])
        raise AssertionError("unreachable")

    def migrate(self, component: str, steps: Sequence[str]) -> int:
        """Apply the ``steps`` (SQL) of ``component`` not yet applied, in order, each recorded in
        ``waypost_schema``; safe when several processes start at once. Returns the version now."""

        def apply(conn: psycopg.Connection[Any]) -> int:
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(current_schema() || ':waypost-migrations'))")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS waypost_schema ("
                " component TEXT PRIMARY KEY, version INTEGER NOT NULL, applied_at DOUBLE PRECISION NOT NULL)"
            )
            row = conn.execute("SELECT version FROM waypost_schema WHERE component = %s", (component,)).fetchone()
            current = int(row[0]) if row else 0
            for version, step in enumerate(steps, start=1):
                if version > current:
                    conn.execute(step)
            if len(steps) > current:
                conn.execute(
                    "INSERT INTO waypost_schema VALUES (%s, %s, %s) ON CONFLICT (component)"
                    " DO UPDATE SET version = EXCLUDED.version, applied_at = EXCLUDED.applied_at",
                    (component, len(steps), time.time()),
                )
            return max(current, len(steps))

        return self.run(apply, retry=False)

    def close(self) -> None:
        self.pool.close()


_shared: dict[str, tuple[PgDatabase, int]] = {}


def open_database(url: str) -> PgDatabase:
    """The process's pool for ``url`` (opened on first use, shared by every part of a backend)."""
    found = _shared.get(url)
    if found is not None:
        _shared[url] = (found[0], found[1] + 1)
        return found[0]
    db = PgDatabase(url)
    _shared[url] = (db, 1)
    return db


def release_database(db: PgDatabase) -> None:
    """Give back one ``open_database``; the last one closes the pool."""
    found = _shared.get(db.url)
    if found is None or found[0] is not db:
        db.close()
        return
    if found[1] <= 1:
        del _shared[db.url]
        db.close()
    else:
        _shared[db.url] = (db, found[1] - 1)
