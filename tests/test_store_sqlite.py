from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conformance.store_suite import StoreConformance
from waypost.store.sqlite import SQLiteStore


class TestSQLiteStore(StoreConformance):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[SQLiteStore]:
        s = SQLiteStore(tmp_path / "store.sqlite")
        yield s
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
