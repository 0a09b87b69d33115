"""The PostgreSQL repositories of trees and graphs, route telemetry and the control plane: the conformance
suites every backend passes, plus what several processes sharing one database add (each ``PgDatabase`` here
is its own connection pool, as a second server process would have)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from tests.conformance.control_suite import ControlConformance, job
from tests.conformance.graph_suite import GraphRepositoryConformance, make_graph, snapshot
from tests.conformance.route_suite import RouteLogConformance, record
from tests.conformance.tree_suite import TreeRepositoryConformance, loaded, make_tree, same_nodes
from waypost.store.backend import open_control
from waypost.store.control import JOB_STATES, ControlError, state_rank
from waypost.store.pg_base import PgDatabase
from waypost.store.pg_cluster import ThrowawayCluster
from waypost.store.postgres_side import (
    PostgresControl,
    PostgresGraphRepository,
    PostgresRouteLog,
    PostgresTreeRepository,
)


@pytest.fixture
def databases(pg_url: str) -> Iterator[Callable[[], PgDatabase]]:
    """``new()`` opens one more pool on the test's database (another process's view); all closed at the end."""
    opened: list[PgDatabase] = []

    def new() -> PgDatabase:
        opened.append(PgDatabase(pg_url, max_size=4))
        return opened[-1]

    yield new
    for db in opened:
        db.close()


@pytest.fixture
def db(databases: Callable[[], PgDatabase]) -> PgDatabase:
    return databases()


class TestPostgresTrees(TreeRepositoryConformance):
    @pytest.fixture
    def trees(self, db: PgDatabase) -> object:
        return PostgresTreeRepository(db)


class TestPostgresGraphs(GraphRepositoryConformance):
    @pytest.fixture
    def graphs(self, db: PgDatabase) -> object:
        return PostgresGraphRepository(db)


class TestPostgresRoutes(RouteLogConformance):
    @pytest.fixture
    def routes(self, db: PgDatabase) -> object:
        return PostgresRouteLog(db)


class TestPostgresControl(ControlConformance):
    @pytest.fixture
    def control(self, db: PgDatabase) -> object:
        return PostgresControl(db)

    @pytest.fixture
    def reopen(self, databases: Callable[[], PgDatabase]) -> object:
        return lambda: PostgresControl(databases())  # a new pool: nothing cached in the first one


def test_a_schema_holds_its_own_rows(pg_url: str) -> None:
    a, b = PgDatabase(pg_url + "?schema=tenant_a"), PgDatabase(pg_url + "?schema=tenant_b")
    try:
        PostgresTreeRepository(a).save_new("c", make_tree(), "v")
        PostgresRouteLog(a).append([record(1)])
        assert PostgresTreeRepository(b).record("c") is None and PostgresRouteLog(b).count() == 0
        assert PostgresTreeRepository(a).record("c") is not None
    finally:
        a.close()
        b.close()


def test_concurrent_builds_leave_one_whole_tree(databases: Callable[[], PgDatabase]) -> None:
    repos = [PostgresTreeRepository(databases()) for _ in range(2)]
    names: list[str] = []
    errors: list[BaseException] = []

    def build(repo: PostgresTreeRepository, generation: int) -> None:
        try:
            for _ in range(5):
                names.append(repo.save_new("c", make_tree(generation=generation), f"v{generation}"))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=build, args=(repo, i + 1)) for i, repo in enumerate(repos)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    record_ = repos[0].record("c")
    assert record_ is not None and record_.tree in names
    same_nodes(make_tree(), loaded(repos[1], "c"))
    rows = repos[0].db.run(
        lambda conn: conn.execute("SELECT count(*), count(DISTINCT tree) FROM tree_nodes").fetchone()
    )
    assert rows == (6, 1), "the replaced trees' nodes must be gone, the active tree's all there"


def test_concurrent_graph_builds_leave_one_whole_graph(databases: Callable[[], PgDatabase]) -> None:
    repos = [PostgresGraphRepository(databases()) for _ in range(2)]
    errors: list[BaseException] = []

    def build(repo: PostgresGraphRepository) -> None:
        try:
            for _ in range(4):
                repo.save_new("c", make_graph(), "v", "e", "r", {})
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=build, args=(repo,)) for repo in repos]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    found = repos[0].load("c")
    assert found is not None and snapshot(found[0]) == snapshot(make_graph())
    assert repos[1].counts("c")["entities"] == len(make_graph().entities)


def test_two_updates_from_one_generation_one_wins(databases: Callable[[], PgDatabase]) -> None:
    first, second = PostgresTreeRepository(databases()), PostgresTreeRepository(databases())
    name = first.save_new("c", make_tree(), "v")
    results: list[bool] = []
    barrier = threading.Barrier(2)

    def update(repo: PostgresTreeRepository, text: str) -> None:
        tree = loaded(repo, "c")
        tree.nodes[2].text = text
        tree.dirty.add(2)
        tree.generation = 4
        barrier.wait()
        results.append(repo.save_changes("c", name, tree, base_generation=3))

    threads = [threading.Thread(target=update, args=(r, t)) for r, t in ((first, "one"), (second, "two"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False, True]
    assert loaded(first, "c").nodes[2].text in ("one", "two")


def test_two_servers_share_jobs_and_never_move_one_back(databases: Callable[[], PgDatabase]) -> None:
    one, two = PostgresControl(databases()), PostgresControl(databases())
    one.create_job(job("j1", key="k"))
    assert two.job("t1", "j1") is not None and [j.id for j in two.unfinished()] == ["j1"]
    again, created = two.create_job(job("j2", key="k"))
    assert not created and again.id == "j1"  # the idempotency key holds across processes

    # each server pushes every job through its own order of states at the same time; a thread's own successes
    # are in its commit order, so a job moved back (an update made from a stale read) shows as a drop in one list
    forward, backward = list(JOB_STATES[1:5]), list(reversed(JOB_STATES[1:5]))
    jobs = [f"r{i}" for i in range(8)]
    for j in jobs:
        one.create_job(job(j))
    moved: dict[tuple[int, str], list[str]] = {(n, j): [] for n in range(2) for j in jobs}
    barrier = threading.Barrier(2)
    failures: list[BaseException] = []

    def push(n: int, control: PostgresControl, states: list[str]) -> None:
        barrier.wait()
        try:
            for j in jobs:
                for state in states:
                    try:
                        moved[(n, j)].append(control.advance(j, state=state).state)
                    except ControlError as exc:
                        assert "back" in str(exc)
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)

    threads = [threading.Thread(target=push, args=a) for a in ((0, one, forward), (1, two, backward))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    for (n, j), states in moved.items():
        ranks = [state_rank(s) for s in states]
        assert ranks == sorted(ranks), f"{j} moved back under server {n}: {states}"
    for j in jobs:
        assert moved[(1, j)] == ["indexing"], "once at indexing, the other server's earlier states are refused"
        final_one, final_two = one.job("t1", j), two.job("t1", j)
        assert final_one is not None and final_two is not None
        assert final_one.state == final_two.state == "indexing"
    one.advance("r0", state="succeeded")
    with pytest.raises(ControlError, match="already"):
        two.advance("r0", state="indexing")


def test_open_control_takes_a_url(pg_url: str) -> None:
    control = open_control(pg_url + "?schema=control")
    assert isinstance(control, PostgresControl)
    try:
        control.create_job(job("j1"))
        again = open_control(pg_url + "?schema=control")  # one pool per URL in a process
        assert isinstance(again, PostgresControl) and again.db is control.db
        assert [j.id for j in again.unfinished()] == ["j1"]
        again.close()
    finally:
        control.close()
    assert control.db.pool.closed


def test_jobs_survive_a_server_crash(pg_cluster: ThrowawayCluster, db: PgDatabase) -> None:
    control = PostgresControl(db)
    control.create_job(job("j1"))
    control.advance("j1", state="embedding", counts={"documents": 3})
    pg_cluster.restart("immediate")  # the committed state comes back from the WAL
    started = time.perf_counter()
    unfinished = control.unfinished()  # the pool's dead connections are replaced; the read retried
    assert [(j.id, j.state, j.counts) for j in unfinished] == [("j1", "embedding", {"documents": 3})]
    assert time.perf_counter() - started < 10
