"""The PostgreSQL documents store: the same conformance suites as SQLite, plus what only a server has to get
right (several processes on one database, concurrent writers, a server that restarts under the store)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli_runner import Cli
from tests.conformance.description_suite import DescriptionConformance
from tests.conformance.purge_suite import PurgeConformance
from tests.conformance.store_suite import DIM, Reopen, StoreConformance, item, many_chunks
from waypost.base import DocumentStore, Embedder
from waypost.engine import Engine, EngineConfig
from waypost.errors import InvalidInputError, WaypostError
from waypost.store.backend import working_directory
from waypost.store.pg_base import DatabaseUnavailableError, PgDatabase
from waypost.store.pg_cluster import ThrowawayCluster
from waypost.store.postgres import PostgresStore


class TestPostgresStore(StoreConformance, PurgeConformance, DescriptionConformance):
    @pytest.fixture
    def store(self, pg_url: str) -> Iterator[PostgresStore]:
        s = PostgresStore(pg_url, log_retention_s=0)  # the suite checks compaction as it happens
        yield s
        s.close()

    @pytest.fixture
    def reopen(self, pg_url: str) -> Iterator[Reopen]:
        opened: list[DocumentStore] = []

        def again(store: DocumentStore) -> DocumentStore:
            assert isinstance(store, PostgresStore)
            store.close()
            opened.append(PostgresStore(pg_url, log_retention_s=0))
            return opened[-1]

        yield again
        for s in opened:
            s.close()


def test_text_postgres_cannot_hold_is_refused_cleanly(pg_url: str) -> None:
    """PostgreSQL's text has no NUL character (SQLite's does): the write is refused whole, nothing half-written."""
    store = PostgresStore(pg_url)
    try:
        store.create_collection("c", "m", DIM)
        with pytest.raises(InvalidInputError, match="NUL"):
            store.write("c", [item("ok", "Fine text."), item("bad", "Nul \x00 inside.")])
        assert store.generation("c") == 0 and store.collection("c").documents == 0
        store.write("c", [item("ok", "Fine text.")])
        assert store.collection("c").documents == 1
    finally:
        store.close()


@pytest.fixture
def databases(pg_url: str) -> Iterator[list[PgDatabase]]:
    """Pools of their own on the test's database, as separate processes would have; closed at the end."""
    opened: list[PgDatabase] = []
    yield opened
    for db in opened:
        db.close()


def store_on(url: str, databases: list[PgDatabase]) -> PostgresStore:
    databases.append(PgDatabase(url, max_size=4))
    return PostgresStore(databases[-1])


def test_a_write_through_one_process_is_in_the_others_change_log(pg_url: str, databases: list[PgDatabase]) -> None:
    first, second = store_on(pg_url, databases), store_on(pg_url, databases)
    first.create_collection("c", "m", DIM)
    since = second.generation("c")
    first.write("c", [item("d1", "Written by the first process.")])
    changes = second.changes("c", since)
    assert changes is not None and [(d, op) for _g, d, op in changes.documents] == [("d1", "add")]
    assert changes.added.chunk_texts == ["Written by the first process."]
    assert changes.version == second.version("c") == first.version("c")
    second.delete("c", ["d1"])
    assert first.get_document("c", "d1") is None and first.generation("c") == since + 2


def test_concurrent_writers_log_contiguous_generations_in_commit_order(
    pg_url: str, databases: list[PgDatabase]
) -> None:
    """Two processes write at once while a third tails the log: the generations run 1..N without a gap, each
    write has its own, and a tailing reader never skips one (it would if a later generation committed first)."""
    stores = [store_on(pg_url, databases) for _ in range(3)]
    stores[0].create_collection("c", "m", DIM)
    per_writer = 25
    errors: list[BaseException] = []
    generations: dict[str, list[int]] = {"a": [], "b": []}

    def writer(name: str, store: PostgresStore) -> None:
        try:
            for i in range(per_writer):
                store.write("c", [item(f"{name}{i}", f"Text {i} of writer {name}.")])
                generations[name].append(store.generation("c"))
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n, s)) for n, s in zip("ab", stores, strict=False)]
    for t in threads:
        t.start()
    tailed: list[tuple[int, str, str]] = []
    seen = 0
    reader = stores[2]
    while True:
        finished = not any(t.is_alive() for t in threads)
        changes = reader.changes("c", seen)
        assert changes is not None
        tailed += changes.documents
        seen = changes.generation
        if finished:
            break
    for t in threads:
        t.join()
    assert not errors, errors
    full = reader.changes("c", 0)
    assert full is not None
    assert [g for g, _d, _op in full.documents] == list(range(1, 2 * per_writer + 1))
    assert tailed == full.documents, "a tailing reader skipped a write that committed after a later generation"
    by_doc = {d: g for g, d, _op in full.documents}
    for name in "ab":  # each writer's own writes in its order, each at the generation it then saw or before
        mine = [by_doc[f"{name}{i}"] for i in range(per_writer)]
        assert mine == sorted(mine) and all(g <= seen for g, seen in zip(mine, generations[name], strict=True))
    assert len(full.added.row_ids) == 2 * per_writer == len(set(full.added.row_ids.tolist()))


def test_a_server_restart_mid_use_fails_cleanly_or_retries(
    pg_url: str, pg_cluster: ThrowawayCluster, databases: list[PgDatabase], caplog: pytest.LogCaptureFixture
) -> None:
    store = store_on(pg_url, databases)
    store.create_collection("c", "m", DIM)
    stop = threading.Event()
    committed: list[str] = []
    outcomes = {"ok": 0, "unavailable": 0}
    unexpected: list[BaseException] = []

    def work() -> None:
        i = 0
        while not stop.is_set():
            try:
                store.write("c", [many_chunks(f"d{i}", 3000)])  # long enough for the crash to land inside one
                committed.append(f"d{i}")
                store.snapshot("c")  # a read: retried while the server comes back
                outcomes["ok"] += 1
            except DatabaseUnavailableError:
                outcomes["unavailable"] += 1
            except BaseException as exc:  # reported by the main thread
                unexpected.append(exc)
                return
            i += 1

    def reached() -> int:  # store calls the restarts reached: failed cleanly, or retried
        return outcomes["unavailable"] + sum("connection lost" in r.getMessage() for r in caplog.records)

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    for _ in range(3):  # a crash that lands between two calls reaches none: crash again, just after a call ends
        done = outcomes["ok"]
        deadline = time.monotonic() + 30
        while outcomes["ok"] == done and not unexpected and time.monotonic() < deadline:
            time.sleep(0.01)
        pg_cluster.restart("immediate")  # a crash: every connection dies, the server recovers from its WAL
        time.sleep(0.5)
        if reached():
            break
    stop.set()
    worker.join(timeout=60)
    assert not worker.is_alive(), "a store call hung across the restart"
    assert not unexpected, unexpected
    assert outcomes["ok"] > 0
    assert reached() >= 1, "the restarts never reached a store call"
    assert set(committed) <= {d.id for d in store.iter_documents("c")}  # what a write reported stayed written
    store.write("c", [item("after", "Written after the restart.")])
    assert store.get_document("c", "after") is not None


def test_a_server_that_is_gone_raises_instead_of_hanging(
    pg_url: str, pg_cluster: ThrowawayCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    from waypost.store import pg_base

    monkeypatch.setattr(pg_base, "POOL_TIMEOUT_S", 1.0)
    monkeypatch.setattr(pg_base, "RETRY_DELAYS_S", (0.2,))
    db = PgDatabase(pg_url, max_size=2)
    store = PostgresStore(db)
    try:
        store.create_collection("c", "m", DIM)
        pg_cluster.stop("immediate")
        try:
            started = time.perf_counter()
            with pytest.raises(DatabaseUnavailableError, match="unavailable"):
                store.write("c", [item("d1", "Never stored.")])
            with pytest.raises(DatabaseUnavailableError):
                store.collection("c")
            assert time.perf_counter() - started < 15
        finally:
            pg_cluster.start()
        back = time.monotonic() + 30  # the pool reconnects with a backoff: the store comes back, not at once
        while True:
            try:
                assert store.collection("c").documents == 0
                break
            except DatabaseUnavailableError:
                assert time.monotonic() < back, "the store never came back after the server did"
    finally:
        store.close()
        db.close()


def test_an_engine_on_postgres_ingests_and_retrieves(
    pg_url: str, tmp_path: Path, minilm: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from waypost.types import Document

    docs = [
        Document("wal", "SQLite keeps a write-ahead log so that readers continue while a writer commits.", "WAL"),
        Document("tides", "The moon's gravity pulls the oceans, which produces two high tides every day.", "Tides"),
        Document("vax", "Vaccines train the immune system to recognise a pathogen.", "Vaccines"),
    ]
    with Engine(tmp_path / "work", EngineConfig(store=pg_url, chunk_tokens=64)) as engine:
        engine.register_embedder(minilm)
        assert isinstance(engine.store, PostgresStore)
        report = engine.collection("kb", create=True).add(docs)
        assert report.added == 3
        result = engine.collection("kb").retrieve("why do the oceans rise twice a day?", "hybrid", k=2)
        assert result.hits[0].document_id == "tides"
    with Engine(tmp_path / "elsewhere", EngineConfig(store=pg_url)) as again:  # another machine's working dir
        again.register_embedder(minilm)
        hit = again.collection("kb").retrieve("readers during a write", "hybrid", k=1).hits[0]
        assert hit.document_id == "wal"
    with pytest.raises(WaypostError, match="working directory of the PostgreSQL store"):
        Engine(tmp_path / "work")  # without its URL the directory is not mistaken for an empty SQLite store
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    with Engine(pg_url) as by_url:  # the URL as the path: that database, never a directory named "postgresql:"
        assert isinstance(by_url.store, PostgresStore) and by_url.config.store == pg_url
        assert by_url.path == working_directory(pg_url) and by_url.path.is_relative_to(tmp_path / "home")
        assert "kb" in {info.name for info in by_url.collections()}
    assert not Path("postgresql:").exists()
    with pytest.raises(InvalidInputError, match="two stores"):
        Engine(pg_url, EngineConfig(store=pg_url + "_other"))
    with pytest.raises(InvalidInputError, match="as text"):
        Engine(Path(pg_url))  # a Path folds "//": it would name a local directory


def test_the_cli_adds_and_queries_a_postgres_store(pg_url: str, tmp_path: Path, cli: Cli) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tides.md").write_text("# Tides\n\nThe moon's gravity pulls the oceans: two high tides a day.\n")
    (docs / "bees.md").write_text("# Bees\n\nHoney bees dance to tell the hive where the flowers are.\n")
    env = {"HOME": str(tmp_path / "home")}
    added = cli("add", docs, "--store", pg_url, "--json", env=env)
    assert added.exit_code == 0, added.stderr
    queried = cli("query", "how do bees share where flowers are", "--store", pg_url, "--json", env=env)
    assert queried.exit_code == 0, queried.stderr
    assert "bees" in json.loads(queried.stdout)["hits"][0]["document_id"]
    by_env = cli("query", "moon and oceans", "--strategy", "bm25", "--json", env={**env, "WAYPOST_STORE": pg_url})
    assert by_env.exit_code == 0, by_env.stderr
    assert "tides" in json.loads(by_env.stdout)["hits"][0]["document_id"]
    assert list((tmp_path / "home" / ".cache" / "waypost" / "pg").iterdir()), "no local working directory"
    missing = cli("query", "x", "--store", pg_url.rsplit("/", 1)[0] + "/postgres", env=env)
    assert missing.exit_code != 0 and "no waypost store" in missing.stderr


def test_a_connection_lost_mid_ingest_keeps_committed_batches_and_a_rerun_finishes(
    pg_url: str, tmp_path: Path, minilm: Embedder
) -> None:
    """The server drops the ingest's connection inside a batch's write transaction: the batches written
    before it stay, the broken one is not half-written, and running the same ingest again writes the rest."""
    import psycopg

    from waypost.types import Document

    docs = [Document(f"d{i:03d}", f"Note {i} about topic {i % 7}: the measured value was {i * 3}.") for i in range(600)]
    killed: list[int] = []

    def kill_the_write() -> None:  # terminate the backend that holds the ingest's open write transaction
        with psycopg.connect(pg_url.split("?")[0], autocommit=True) as conn:
            deadline = time.monotonic() + 10
            while not killed and time.monotonic() < deadline:
                rows = conn.execute(
                    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
                    " AND backend_xid IS NOT NULL"  # a transaction that has written something
                ).fetchall()
                for (pid,) in rows:
                    if conn.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone() == (True,):
                        killed.append(pid)

    batches: list[int] = []
    killer: list[threading.Thread] = []

    def on_stage(stage: str, report: object) -> None:
        if stage == "writing":
            batches.append(1)
            if len(batches) == 2:  # the second batch's write is the one that loses its connection
                killer.append(threading.Thread(target=kill_the_write))
                killer[0].start()

    with Engine(tmp_path / "work", EngineConfig(store=pg_url, chunk_tokens=64)) as engine:
        engine.register_embedder(minilm)
        coll = engine.collection("kb", create=True)
        with pytest.raises(DatabaseUnavailableError):
            coll.add(docs, on_stage=on_stage)
        killer[0].join()
        assert killed, "the write transaction was never seen"
        written = {d.id for d in engine.store.iter_documents("kb")}
        assert written == {d.id for d in docs[:256]}  # the first batch committed; the broken one left nothing
        again = coll.add(docs)
        assert (again.unchanged, again.added) == (256, 344)
        stored = {d.id: d for d in engine.store.iter_documents("kb")}
        assert sorted(stored) == sorted(d.id for d in docs)
        assert all(stored[d.id].text == d.text for d in docs)
        hit = coll.retrieve("the measured value was 1500", "bm25", k=1).hits[0]
        assert hit.document_id == "d500"


def test_compaction_keeps_recent_changes_for_processes_that_lag(pg_url: str) -> None:
    store = PostgresStore(pg_url)  # the default retention
    try:
        store.create_collection("c", "m", DIM)
        for i in range(3):
            store.write("c", [item(f"d{i}", f"Text {i}.")])
        store.acknowledge("c", "flat-indexes", 3)  # the only consumer applied everything ...
        assert store.log_floor("c") == 0 and store.changes("c", 0) is not None  # ... but the changes are recent
        store.log_retention_s = 0.2
        time.sleep(0.3)
        store.write("c", [item("d3", "Text 3.")])
        store.acknowledge("c", "flat-indexes", 3)
        assert store.log_floor("c") == 3  # the old ones go; the one inside the window stays
        changes = store.changes("c", 3)
        assert changes is not None and [doc for _, doc, _ in changes.documents] == ["d3"]
    finally:
        store.close()


def test_a_process_that_lags_catches_up_from_the_log_after_another_saved_and_compacted(
    pg_url: str, tmp_path: Path, minilm: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two engines on one database, each with its own working directory (two machines): when one saves its
    indexes and compacts the log, the other, a few writes behind, catches up instead of rebuilding."""
    from waypost.index.set import IndexSet
    from waypost.types import Document

    with (
        Engine(tmp_path / "a", EngineConfig(store=pg_url, chunk_tokens=64)) as a,
        Engine(tmp_path / "b", EngineConfig(store=pg_url, chunk_tokens=64)) as b,
    ):
        a.register_embedder(minilm)
        b.register_embedder(minilm)
        a.collection("kb", create=True).add([Document("tides", "The moon pulls the oceans: two tides a day.")])
        assert b.collection("kb").retrieve("tides", "bm25", k=1).hits[0].document_id == "tides"
        a.collection("kb").add([Document("bees", "Honey bees dance to show where the flowers are.")])
        a.collection("kb").retrieve("bees", "bm25", k=1)  # a's indexes catch up ...
        a.indexes.live("kb").flush()  # ... and are saved and acknowledged: every consumer is past b's state
        assert a.store.consumers("kb")["flat-indexes"] == 2
        builds: list[int] = []
        original = IndexSet.build
        monkeypatch.setattr(IndexSet, "build", staticmethod(lambda *x, **k: builds.append(1) or original(*x, **k)))
        assert b.collection("kb").retrieve("bees dancing", "bm25", k=1).hits[0].document_id == "bees"
        assert builds == [], "the lagging process rebuilt its indexes instead of catching up"


def test_a_database_without_the_extension_gets_it_and_stores_vectors_at_once(pg_cluster: ThrowawayCluster) -> None:
    name = "t_bare"
    url = pg_cluster.create_database(name, extension=False)
    try:
        store = PostgresStore(f"{url}?schema=team_a")  # the schema and the extension are made on first use
        try:
            store.create_collection("c", "m", DIM)
            store.write("c", [item("d1", "Vectors on the pool's very first connection.")])
            snapshot = store.snapshot("c")
            assert snapshot.embeddings.shape == (1, DIM)
        finally:
            store.close()
    finally:
        pg_cluster.drop_database(name)


@pytest.mark.parametrize("schema", ["Team", "a;drop", "pg_catalog", "pg_temp", "information_schema", "x" * 64, ""])
def test_a_schema_name_that_is_not_a_plain_tenant_name_is_refused(schema: str) -> None:
    from waypost.store.pg_base import split_url

    with pytest.raises(WaypostError, match="schema name"):
        split_url(f"postgresql://u@127.0.0.1/db?schema={schema}")


def test_messages_never_show_a_password() -> None:
    from waypost.store.pg_base import redact, split_url

    assert redact("postgresql://u:s3cret@h/db?schema=a") == "postgresql://u:***@h/db?schema=a"
    hidden = redact("postgresql://u@h/db?password=s3cret&sslpassword=k3y&schema=a")
    assert "s3cret" not in hidden and "k3y" not in hidden and "schema=a" in hidden
    assert split_url("postgresql://u@h/db?schema=team_a&sslmode=disable") == (
        "postgresql://u@h/db?sslmode=disable",
        "team_a",
    )
