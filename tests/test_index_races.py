"""Races and edge cases of live indexes, at the store level (no embedding model needed): a merge that
runs while rows are deleted, an HNSW graph rebuilt by a merge, metadata kinds of deleted rows, and a
delete-only workload."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.conformance.store_suite import DIM, item
from waypost.base import IngestItem
from waypost.errors import FilterError
from waypost.filters.model import Condition, Op
from waypost.index.live import LiveIndex
from waypost.index.segment import Segment
from waypost.index.set import IndexSet, MergePolicy
from waypost.store.sqlite import SQLiteStore

NEVER = MergePolicy(max_small_segments=100, main_merge_rows=10**9, dead_ratio=10.0)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(tmp_path / "s.sqlite")
    s.create_collection("c", "m", DIM)
    yield s
    s.close()


def live_bm25(index: IndexSet, query: str) -> dict[int, float]:
    scores = index.bm25.scores(query)
    live = np.ones(len(index), np.bool_) if index.live is None else index.live
    return {int(r): round(float(x), 9) for r, x, ok in zip(index.row_ids, scores, live, strict=True) if ok}


def during_merge(action: Callable[[], None]) -> Callable[[], None]:
    """Make the next Segment.merge run ``action`` (another thread's write and catch-up) before it returns."""
    original = Segment.merge

    def merge(*args: object, **kwargs: object) -> Segment:
        merged = original(*args, **kwargs)  # type: ignore[arg-type]
        action()
        return merged

    Segment.merge = merge  # type: ignore[method-assign,assignment]
    return lambda: setattr(Segment, "merge", original)


def test_rows_deleted_while_a_merge_runs_stay_deleted(store: SQLiteStore) -> None:
    store.write("c", [item("a", "Copper river mill harbour.")])
    live = LiveIndex(store, "c", None, policy=NEVER, background=False)
    live.get()
    for doc, text in (("b", "Falcon heron willow cedar."), ("x", "Granite quarry basalt copper.")):
        store.write("c", [item(doc, text)])
        live.get()
    parts = list(live.get().segments[1:])

    def delete_b() -> None:  # b's whole segment dies, and the catch-up drops it
        store.delete("c", ["b"])
        live.get()

    restore = during_merge(delete_b)
    try:
        live._merge_task(parts)()
    finally:
        restore()
    rebuilt = IndexSet.build("c", store.snapshot("c"))
    for query in ("copper", "falcon", "quarry"):
        assert live_bm25(live.get(), query) == live_bm25(rebuilt, query)


def test_a_merged_hnsw_graph_never_returns_rows_deleted_during_the_merge(store: SQLiteStore) -> None:
    pytest.importorskip("hnswlib")
    items = [item(f"d{i}", f"Word{i} copper river.") for i in range(20)]
    store.write("c", items)
    live = LiveIndex(store, "c", None, approximate=True, policy=NEVER, background=False)
    live.get()
    store.write("c", [item("n1", "Falcon heron.")])
    state = live.get()
    restore = during_merge(lambda: (store.delete("c", ["d3"]), live.get()) and None)
    try:
        live._merge_task(list(state.segments))()
    finally:
        restore()
    current = live.get()
    assert current.segments[0].dense.hnsw is not None
    dead = set(current.tombstones().tolist())
    assert dead
    for probe in items[3].embeddings:
        positions, _ = current.dense.search(probe, 5, current.live)
        assert not dead & set(current.row_ids[positions].tolist())


def with_meta(doc_id: str, text: str, **metadata: object) -> IngestItem:
    base = item(doc_id, text)
    return IngestItem(
        type(base.document)(doc_id, text, base.document.title, dict(metadata)), base.chunks, base.embeddings
    )


def test_metadata_kinds_come_from_live_rows_only(store: SQLiteStore) -> None:
    store.write(
        "c",
        [
            with_meta("a", "Copper river mill.", kind="map", tags="coast"),
            with_meta("b", "Falcon heron.", kind="letter", tags="inland"),
            with_meta("z", "Granite quarry.", kind=7, tags=["coast", "upland"], only_z="here"),
        ],
    )
    live = LiveIndex(store, "c", None, background=False)
    live.get()
    store.delete("c", ["z"])
    for state in (live.get(), IndexSet.build("c", store.snapshot("c"))):
        stats = state.metadata.stats
        assert (stats["kind"].kind, stats["tags"].is_list) == ("string", False)
        assert "only_z" not in stats and state.metadata.numeric == []
        with pytest.raises(FilterError):
            state.metadata.mask(Condition("kind", Op.GT, 3))
        extracted = state.extractor().extract("a map of the river").filter
        assert extracted is not None and "kind = 'map'" in str(extracted)
    live._merge_task(list(live.get().segments))()  # a merge keeps only what survived
    merged = live.get().segments[0].metadata
    assert merged.stats["kind"].kind == "string" and "only_z" not in merged.stats and not merged.numeric


def test_a_delete_only_workload_merges_saves_and_compacts(store: SQLiteStore, tmp_path: Path) -> None:
    store.write("c", [item(f"d{i}", f"Text number {i} about rivers.") for i in range(20)])
    policy = MergePolicy(dead_ratio=0.2, persist_generations=3)
    live = LiveIndex(store, "c", tmp_path / "idx", policy=policy, background=False)
    live.get()
    for i in range(6):
        store.delete("c", [f"d{i}"])
        live.get()
    state = live.get()
    assert live.last_merge is not None and len(state.tombstones()) < 6  # tombstones merged away
    assert store.log_floor("c") >= store.generation("c") - 3  # saved, so the log was compacted
    live.close()
