"""The control-plane contract (``TenantDirectory`` and ``JobLog``): a backend's test provides ``control``
(one object implementing both) and ``reopen`` (the same store opened anew, as after a restart)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from waypost.store.control import ApiKey, ControlError, JobRecord, Tenant


def job(job_id: str, tenant: str = "t1", key: str | None = None, collection: str = "docs") -> JobRecord:
    now = time.time()
    files = [{"name": "a.txt", "path": f"/spool/{job_id}/0/a.txt", "bytes": 3}]
    return JobRecord(job_id, tenant, collection, "queued", now, now, files=files, idempotency_key=key, request_hash="h")


class ControlConformance:
    @pytest.fixture
    def control(self) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    @pytest.fixture
    def reopen(self) -> Callable[[], Any]:  # pragma: no cover - overridden
        raise NotImplementedError

    def test_tenants_have_unique_names(self, control: Any) -> None:
        control.create_tenant(Tenant("t1", "acme", 1.0))
        with pytest.raises(ControlError, match="acme"):
            control.create_tenant(Tenant("t2", "acme", 2.0))
        assert control.tenant("t1") == Tenant("t1", "acme", 1.0)
        assert control.tenant_by_name("acme") == Tenant("t1", "acme", 1.0)
        assert control.tenant("t2") is None and control.tenant_by_name("nobody") is None
        assert [t.id for t in control.tenants()] == ["t1"]

    def test_keys_keep_their_hash_and_revocation(self, control: Any) -> None:
        control.create_tenant(Tenant("t1", "acme", 1.0))
        key = ApiKey("k1", "t1", ("read",), "ci", 5.0)
        control.add_key(key, "hash-1")
        assert control.key("k1") == (key, "hash-1")
        assert control.key("k2") is None
        with pytest.raises(ControlError):
            control.add_key(ApiKey("k3", "no-such-tenant", ("read",), "", 5.0), "h")
        assert control.revoke_key("k1", 9.0) is True
        assert control.revoke_key("k1", 10.0) is False  # already revoked: the first time stays
        revoked, _ = control.key("k1")
        assert revoked.revoked_at == 9.0
        assert [k.id for k in control.keys("t1")] == ["k1"]

    def test_scopes_include_the_weaker_ones(self) -> None:
        admin = ApiKey("k", "t", ("admin",), "", 0.0)
        read = ApiKey("k", "t", ("read",), "", 0.0)
        assert admin.allows("read") and admin.allows("write") and admin.allows("admin")
        assert read.allows("read") and not read.allows("write")

    def test_jobs_are_per_tenant_and_idempotent(self, control: Any) -> None:
        stored, created = control.create_job(job("j1", key="upload-1"))
        assert created and stored.id == "j1"
        again, created = control.create_job(job("j2", key="upload-1"))
        assert not created and again.id == "j1"
        other, created = control.create_job(job("j3", tenant="t2", key="upload-1"))  # keys are per tenant
        assert created and other.id == "j3"
        assert control.job("t1", "j1") is not None
        assert control.job("t2", "j1") is None  # another tenant's id is as unknown as a made-up one
        assert [j.id for j in control.jobs("t1")] == ["j1"]

    def test_states_only_move_forward(self, control: Any) -> None:
        control.create_job(job("j1"))
        control.advance("j1", state="parsing", counts={"files": 1})
        control.advance("j1", state="embedding", counts={"documents": 4})
        with pytest.raises(ControlError, match="back"):
            control.advance("j1", state="parsing")
        done = control.advance("j1", state="succeeded", errors=[{"source": "a.txt", "error": "x"}])
        assert done.finished and done.counts == {"files": 1, "documents": 4}
        assert done.errors == [{"source": "a.txt", "error": "x"}]
        with pytest.raises(ControlError, match="already"):
            control.advance("j1", state="failed")
        with pytest.raises(ControlError):
            control.advance("j1", counts={"documents": 5})

    def test_unfinished_jobs_survive_a_restart(self, control: Any, reopen: Callable[[], Any]) -> None:
        control.create_job(job("j1"))
        control.create_job(job("j2"))
        control.advance("j2", state="embedding")
        control.start_attempt("j2")
        control.create_job(job("j3"))
        control.advance("j3", state="failed", reason="bad")
        control.request_cancel("t1", "j1")
        fresh = reopen()
        unfinished = fresh.unfinished()
        assert [j.id for j in unfinished] == ["j1", "j2"]
        assert unfinished[0].cancel_requested and unfinished[1].attempts == 1
        assert unfinished[1].files == job("j2").files
        assert fresh.job("t1", "j3").reason == "bad"
        assert fresh.request_cancel("t2", "j1") is None

    def test_concurrent_advances_lose_no_count(self, control: Any) -> None:
        control.create_job(job("j1"))
        errors: list[BaseException] = []

        def bump(name: str) -> None:
            try:
                for i in range(20):
                    control.advance("j1", counts={name: i + 1})
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=bump, args=(f"c{n}",)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        assert control.job("t1", "j1").counts == {f"c{n}": 20 for n in range(4)}

    def test_a_job_is_held_by_one_owner_until_its_lease_runs_out(self, control: Any) -> None:
        control.create_job(job("j1"))
        now = 1000.0
        held = control.claim("j1", "a", now + 60, now)
        assert held is not None and (held.owner, held.lease_until) == ("a", now + 60)
        assert control.claim("j1", "b", now + 60, now + 10) is None  # a's lease runs
        assert control.claim("j1", "a", now + 90, now + 30) is not None  # a renews it
        assert control.claim("j1", "b", now + 60, now + 60) is None
        assert control.claim("j1", "b", now + 160, now + 100) is not None  # ran out: b takes it over
        assert control.claim("j1", "c", now + 200, now + 110, take_from="b") is not None  # b is known dead
        assert control.job("t1", "j1").owner == "c"
        control.advance("j1", state="failed")
        assert control.claim("j1", "c", now + 300, now + 120) is None  # a finished job is never held
        assert control.claim("missing", "c", now + 300, now + 120) is None

    def test_concurrent_claims_give_a_job_to_one_owner(self, control: Any) -> None:
        control.create_job(job("j1"))
        now = time.time()
        won: list[str] = []

        def claim(owner: str) -> None:
            if control.claim("j1", owner, now + 60, now) is not None:
                won.append(owner)

        threads = [threading.Thread(target=claim, args=(f"o{i}",)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(won) == 1 and control.job("t1", "j1").owner == won[0]
