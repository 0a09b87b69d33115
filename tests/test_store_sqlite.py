from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conformance.control_suite import ControlConformance
from tests.conformance.description_suite import DescriptionConformance
from tests.conformance.graph_suite import GraphRepositoryConformance
from tests.conformance.purge_suite import PurgeConformance
from tests.conformance.route_suite import RouteLogConformance
from tests.conformance.store_suite import Reopen, StoreConformance
from tests.conformance.tree_suite import TreeRepositoryConformance
from waypost.base import DocumentStore
from waypost.store.backend import Backend, open_backend, open_control
from waypost.store.sqlite import SQLiteStore


class TestSQLiteStore(StoreConformance, PurgeConformance, DescriptionConformance):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[SQLiteStore]:
        s = SQLiteStore(tmp_path / "store.sqlite")
        yield s
        s.close()

    @pytest.fixture
    def reopen(self) -> Iterator[Reopen]:
        opened: list[DocumentStore] = []

        def again(store: DocumentStore) -> DocumentStore:
            assert isinstance(store, SQLiteStore)
            store.close()
            opened.append(SQLiteStore(store.path))
            return opened[-1]

        yield again
        for s in opened:
            s.close()

    def test_reopen_keeps_data(self, tmp_path: Path) -> None:
        from tests.conformance.store_suite import DIM, item

        s = SQLiteStore(tmp_path / "x.sqlite")
        s.create_collection("c", "m", DIM)
        s.write("c", [item("d1", "Persisted text.")])
        s.close()
        again = SQLiteStore(tmp_path / "x.sqlite")
        assert again.collection("c").documents == 1
        again.close()


@pytest.fixture
def backend(tmp_path: Path) -> Iterator[Backend]:
    with open_backend(tmp_path / "store") as b:
        yield b


class TestSQLiteTrees(TreeRepositoryConformance):
    """The repositories ``open_backend`` hands out, beside the documents in one SQLite file."""

    @pytest.fixture
    def trees(self, backend: Backend) -> object:
        return backend.trees


class TestSQLiteGraphs(GraphRepositoryConformance):
    @pytest.fixture
    def graphs(self, backend: Backend) -> object:
        return backend.graphs


class TestSQLiteRoutes(RouteLogConformance):
    @pytest.fixture
    def routes(self, backend: Backend) -> object:
        return backend.routes


class TestSQLiteControl(ControlConformance):
    @pytest.fixture
    def control(self, tmp_path: Path) -> object:
        return open_control(tmp_path)

    @pytest.fixture
    def reopen(self, tmp_path: Path) -> object:
        return lambda: open_control(tmp_path)
