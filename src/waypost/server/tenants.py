"""One engine per tenant, each on its own store directory: nothing below the routes reaches a global engine."""

from __future__ import annotations

import logging
import threading
from dataclasses import replace
from pathlib import Path

from waypost.engine import Engine, EngineConfig
from waypost.store.backend import in_schema
from waypost.store.control import Tenant

log = logging.getLogger(__name__)

LOCAL_TENANT = "local"  # the one tenant of a ``--no-auth`` server


class TenantEngines:
    """Opens each tenant's engine on first use and keeps it open until ``close``."""

    def __init__(self, root: Path, config: EngineConfig, database: str | None = None) -> None:
        self.root = Path(root) / "tenants"
        self.config = config
        self.database = database  # postgresql://...: each tenant's store is its own schema there
        self._engines: dict[str, Engine] = {}
        self._lock = threading.Lock()
        self._closed = False

    def store_path(self, tenant: Tenant) -> Path:
        if not tenant.id or any(c in tenant.id for c in "/\\.\0"):
            raise ValueError(f"unusable tenant id {tenant.id!r}")
        return self.root / tenant.id

    def engine(self, tenant: Tenant) -> Engine:
        with self._lock:
            if self._closed:
                raise RuntimeError("the server is shutting down")
            engine = self._engines.get(tenant.id)
            if engine is None:
                path = self.store_path(tenant)
                path.mkdir(parents=True, exist_ok=True)
                config = self.config
                if self.database is not None:
                    config = replace(config, store=in_schema(self.database, tenant.id))
                engine = Engine(path, config)
                self._engines[tenant.id] = engine
                log.info("opened the store of tenant %s at %s", tenant.name, path)
            return engine

    def close(self) -> None:
        with self._lock:
            self._closed = True
            engines, self._engines = list(self._engines.values()), {}
        for engine in engines:
            try:
                engine.close()
            except Exception:  # one tenant's failure to close must not keep the others open
                log.exception("closing a tenant engine failed")
