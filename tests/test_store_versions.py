"""A version names one write history. With ``synchronous=NORMAL`` a power loss can drop the store's last
commits while a derived index saved at that generation (fsynced) survives; once new writes bring the
store back to the same generation, that saved state must not be served: results equal a rebuild."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

from tests.test_live_indexes import assert_same, make_doc, memo  # noqa: F401 - memo is a fixture
from waypost.base import Embedder
from waypost.engine import Engine, EngineConfig
from waypost.store.backend import SQLITE_FILE


def store_files(directory: Path) -> list[Path]:
    """The SQLite file and its WAL and shared-memory companions, as a power loss would leave them."""
    return sorted(directory.glob(f"{SQLITE_FILE}*"))


def test_a_saved_index_state_of_lost_commits_is_never_served(tmp_path: Path, memo: Embedder) -> None:  # noqa: F811
    config = EngineConfig(chunk_tokens=32, background_index_work=False)
    store = tmp_path / "store"
    rng = random.Random(21)

    engine = Engine(store, config)
    engine.register_embedder(memo)
    coll = engine.collection("c", create=True)
    coll.add([make_doc(rng, f"d{i}") for i in range(8)])
    coll.retrieve("granite", "hybrid")
    engine.close()
    durable = tmp_path / "durable"  # what reached the disk: the store as of generation 1
    durable.mkdir()
    for f in store_files(store):
        shutil.copy2(f, durable / f.name)

    engine = Engine(store, config)
    engine.register_embedder(memo)
    coll = engine.collection("c")
    coll.add([make_doc(rng, f"d{i}") for i in range(8, 12)])
    coll.add([make_doc(rng, f"d{i}") for i in range(12, 16)])
    coll.retrieve("granite", "hybrid")
    lost_generation, lost_version = engine.store.generation("c"), engine.store.version("c")
    engine.close()  # saves the index state of generation 3 (its manifest is fsynced)
    assert any(p.name.startswith(f"state-{lost_generation:012d}") for p in (store / "indexes").rglob("state-*"))

    # power loss: the store's last two commits are gone, the saved index state stays
    for f in store_files(store):
        f.unlink()
    for f in store_files(durable):
        shutil.copy2(f, store / f.name)

    engine = Engine(store, config)
    engine.register_embedder(memo)
    coll = engine.collection("c")
    other = random.Random(99)
    coll.add([make_doc(other, f"e{i}") for i in range(3)])  # different documents, the same row ids
    coll.add([make_doc(other, f"e{i}") for i in range(3, 9)])
    assert engine.store.generation("c") == lost_generation
    assert engine.store.version("c") != lost_version
    live = engine.indexes.live("c")
    live.get()
    assert f"saved generation {lost_generation})" not in live.loaded_from, live.loaded_from
    assert_same(engine, "c", [])
    assert {h.document_id for h in coll.retrieve("granite", "bm25", k=50).hits} <= {f"d{i}" for i in range(8)} | {
        f"e{i}" for i in range(9)
    }
    engine.close()
