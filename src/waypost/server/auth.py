"""API keys: ``wp_<key id>_<secret>`` bearer tokens, stored as SHA-256 hashes and compared in constant time.

A key belongs to exactly one tenant and carries scopes; the tenant of a request comes from its key alone."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
import uuid
from dataclasses import dataclass

from waypost.store.control import SCOPES, ApiKey, ControlError, Tenant, TenantDirectory

TOKEN_PREFIX = "wp_"
_TOKEN = re.compile(r"^wp_([0-9a-f]{16})_([A-Za-z0-9_-]{20,100})$")
_DUMMY_HASH = hashlib.sha256(b"waypost: no such key").hexdigest()
_TENANT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def hash_secret(secret: str) -> str:
    """Secrets are 256 random bits, so one SHA-256 is enough (no dictionary to guard against)."""
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass(frozen=True)
class Principal:
    """Who a request acts for: a tenant, through one of its keys."""

    tenant: Tenant
    key: ApiKey

    def allows(self, scope: str) -> bool:
        return self.key.allows(scope)


@dataclass(frozen=True)
class IssuedKey:
    key: ApiKey
    token: str  # shown once; only its hash is stored


def create_tenant(directory: TenantDirectory, name: str) -> Tenant:
    if not _TENANT_NAME.match(name):
        raise ControlError(f"a tenant name is 1 to 64 letters, digits, '.', '_' or '-', not {name!r}")
    return directory.create_tenant(Tenant(f"t_{uuid.uuid4().hex[:16]}", name, time.time()))


def find_tenant(directory: TenantDirectory, name_or_id: str) -> Tenant:
    tenant = directory.tenant_by_name(name_or_id) or directory.tenant(name_or_id)
    if tenant is None:
        raise ControlError(f"no tenant {name_or_id!r}")
    return tenant


def create_key(directory: TenantDirectory, tenant: Tenant, scope: str, label: str = "") -> IssuedKey:
    """A new key for ``tenant`` with ``scope`` (read, write or admin; each includes the ones before)."""
    if scope not in SCOPES:
        raise ControlError(f"scope must be one of {', '.join(SCOPES)}, not {scope!r}")
    key_id = secrets.token_hex(8)
    secret = secrets.token_urlsafe(32)
    key = ApiKey(key_id, tenant.id, (scope,), label, time.time())
    directory.add_key(key, hash_secret(secret))
    return IssuedKey(key, f"{TOKEN_PREFIX}{key_id}_{secret}")


def authenticate(directory: TenantDirectory, token: str) -> Principal | None:
    """The principal a bearer token stands for, or None (malformed, unknown, revoked, or its tenant gone).
    Unknown ids are hashed and compared too, so timing does not tell a known id from an unknown one."""
    match = _TOKEN.match(token)
    key_id, secret = (match.group(1), match.group(2)) if match else ("", token)
    found = directory.key(key_id) if key_id else None
    stored = found[1] if found is not None else _DUMMY_HASH
    same = hmac.compare_digest(hash_secret(secret), stored)
    if found is None or not same or found[0].revoked_at is not None:
        return None
    tenant = directory.tenant(found[0].tenant_id)
    return Principal(tenant, found[0]) if tenant is not None else None
