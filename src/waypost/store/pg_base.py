"""What every PostgreSQL part of a backend shares: one connection pool per database schema, transactions with
a bounded retry when the server goes away, and schema migrations recorded per component.

A URL selects it: ``postgresql://user@host:port/db`` (schema ``public``) or ``...?schema=NAME`` (a tenant's
own schema; created if missing). Only ``waypost.store`` imports this module."""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg_pool import ConnectionPool

from waypost.errors import StoreUnavailableError, WaypostError

log = logging.getLogger(__name__)
T = TypeVar("T")

_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_RESERVED_SCHEMA = re.compile(r"^(pg_|information_schema$)")
CONNECT_TIMEOUT_S = 10
_SECRET_PARAMETERS = ("password", "sslpassword")
# A connection whose server vanished without closing it (a lost host, a cut network) is found dead by TCP
# keepalives within about a minute instead of blocking forever.
KEEPALIVES: dict[str, Any] = {"keepalives": 1, "keepalives_idle": 30, "keepalives_interval": 10, "keepalives_count": 3}
POOL_TIMEOUT_S = 30.0
RETRY_DELAYS_S = (0.2, 1.0, 3.0)  # a read is retried this often while the server restarts, then it fails


class DatabaseUnavailableError(StoreUnavailableError):
    """The PostgreSQL server could not be reached (or went away mid-transaction) within the retry budget."""


def split_url(url: str) -> tuple[str, str]:
    """``(conninfo URL without waypost's own parameters, schema name)``."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    schema = query.pop("schema", "public")
    if not _SCHEMA_NAME.match(schema) or _RESERVED_SCHEMA.match(schema):
        raise WaypostError(
            f"a schema name is lower-case letters, digits and '_' (not pg_... or information_schema), not {schema!r}"
        )
    return urlunsplit(parts._replace(query=urlencode(query))), schema


def redact(url: str) -> str:
    """The URL without its password, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is not None:
        parts = parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@"))
    query = parse_qsl(parts.query)
    if any(key in _SECRET_PARAMETERS for key, _ in query):
        hidden = [(key, "***" if key in _SECRET_PARAMETERS else value) for key, value in query]
        parts = parts._replace(query=urlencode(hidden, safe="*"))
    return urlunsplit(parts)


class PgDatabase:
    """One schema of one database, shared by the documents, trees, graphs, routes and control parts."""

    def __init__(self, url: str, min_size: int = 1, max_size: int = 10) -> None:
        self.url = url
        self.conninfo, self.schema = split_url(url)
        self.location = redact(url)
        self.vector_schema = "public"  # where the vector extension lives (``_prepare`` reads it)
        self.pool = ConnectionPool(
            self.conninfo,
            min_size=min_size,
            max_size=max_size,
            kwargs={"connect_timeout": CONNECT_TIMEOUT_S, "autocommit": True, **KEEPALIVES},
            configure=self._configure,
            check=ConnectionPool.check_connection,
            timeout=POOL_TIMEOUT_S,
            open=False,
            name=f"waypost:{self.schema}",
        )
        self._prepare()  # before the pool: its connections register the vector type when they open
        try:
            self.pool.open(wait=True, timeout=POOL_TIMEOUT_S)
        except Exception as exc:  # psycopg_pool's PoolTimeout: no connection could be made in time
            self.pool.close()
            raise DatabaseUnavailableError(f"cannot reach PostgreSQL at {self.location}: {exc}") from None

    def _prepare(self) -> None:
        """The schema and the vector extension, created if missing; processes starting at once take turns."""
        try:
            with psycopg.connect(self.conninfo, **{"connect_timeout": CONNECT_TIMEOUT_S, **KEEPALIVES}) as conn:
                conn.execute("SELECT pg_advisory_xact_lock(hashtext('waypost:prepare'))")
                # made only when missing: a role without CREATE works once an administrator made them
                if conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (self.schema,)).fetchone() is None:
                    conn.execute(f'CREATE SCHEMA "{self.schema}"')
                if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone() is None:
                    conn.execute("CREATE EXTENSION vector")
                row = conn.execute(
                    "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
                    " WHERE e.extname = 'vector'"
                ).fetchone()
                self.vector_schema = str(row[0]) if row else "public"
        except psycopg.OperationalError as exc:
            raise DatabaseUnavailableError(f"cannot reach PostgreSQL at {self.location}: {exc}") from None
        except psycopg.errors.InsufficientPrivilege as exc:
            raise WaypostError(
                f"PostgreSQL at {self.location}: {exc.diag.message_primary}; an administrator can run"
                f' CREATE SCHEMA "{self.schema}" and CREATE EXTENSION vector beforehand'
            ) from None

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        path = [self.schema] + [s for s in (self.vector_schema, "public") if s != self.schema]
        conn.execute("SET search_path TO " + ", ".join(f'"{s}"' for s in dict.fromkeys(path)))
        from pgvector.psycopg import register_vector

        try:
            register_vector(conn)
        except psycopg.ProgrammingError:
            log.warning("PostgreSQL at %s: the vector type is not visible on this connection", self.location)

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
_shared_lock = threading.Lock()


def open_database(url: str) -> PgDatabase:
    """The process's pool for ``url`` (opened on first use, shared by every part of a backend)."""
    with _shared_lock:
        found = _shared.get(url)
        if found is not None:
            _shared[url] = (found[0], found[1] + 1)
            return found[0]
    db = PgDatabase(url)  # outside the lock: an unreachable server never stalls other URLs' pools
    with _shared_lock:
        found = _shared.get(url)
        if found is None:
            _shared[url] = (db, 1)
            return db
        _shared[url] = (found[0], found[1] + 1)  # another thread opened it meanwhile
    db.close()
    return found[0]


def release_database(db: PgDatabase) -> None:
    """Give back one ``open_database``; the last one closes the pool."""
    with _shared_lock:
        found = _shared.get(db.url)
        if found is not None and found[0] is db and found[1] > 1:
            _shared[db.url] = (db, found[1] - 1)
            return
        if found is not None and found[0] is db:
            del _shared[db.url]
    db.close()
