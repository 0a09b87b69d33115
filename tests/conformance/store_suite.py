"""The ``DocumentStore`` contract. A backend's test module subclasses ``StoreConformance`` and
provides a ``store`` fixture; every test here then runs against that backend."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
import pytest

from waypost.base import DocumentStore, Feedback, IngestItem, version_incarnation
from waypost.errors import CollectionNotFoundError, WaypostError
from waypost.ingest.chunker import Chunker
from waypost.types import Chunk, Document

DIM = 4


def item(doc_id: str, text: str, **metadata: object) -> IngestItem:
    doc = Document(id=doc_id, text=text, title=f"title {doc_id}", metadata=dict(metadata), source=f"src/{doc_id}")
    chunks = Chunker(max_tokens=16).chunk(doc_id, text)
    rng = np.random.default_rng(abs(hash(doc_id)) % 2**32)
    vecs = rng.normal(size=(len(chunks), DIM)).astype(np.float32)
    return IngestItem(doc, chunks, vecs / np.linalg.norm(vecs, axis=1, keepdims=True))


LONG = "The first sentence is here. " * 6 + "A final sentence ends it."


def many_chunks(doc_id: str, count: int) -> IngestItem:
    """One document of ``count`` one-word chunks: more ids than one SQL statement can bind."""
    words = [f"w{i}" for i in range(count)]
    text = " ".join(words)
    chunks, start = [], 0
    for i, word in enumerate(words):
        chunks.append(Chunk(doc_id, i, word, start, start + len(word), 1))
        start += len(word) + 1
    vecs = np.zeros((count, DIM), np.float32)
    vecs[:, 0] = 1.0
    return IngestItem(Document(doc_id, text, f"title {doc_id}"), chunks, vecs)


Reopen = Callable[[DocumentStore], DocumentStore]


class StoreConformance:
    @pytest.fixture
    def store(self) -> DocumentStore:  # pragma: no cover - overridden
        raise NotImplementedError

    @pytest.fixture
    def reopen(self) -> Reopen:
        """Closes a store and opens it again; a backend that persists overrides this (the default keeps it open)."""
        return lambda store: store

    def test_create_and_describe_collection(self, store: DocumentStore) -> None:
        info = store.create_collection("c", "model-x", DIM)
        assert (info.name, info.embed_model, info.embed_dim, info.documents, info.chunks) == ("c", "model-x", DIM, 0, 0)
        assert [c.name for c in store.collections()] == ["c"]
        with pytest.raises(CollectionNotFoundError):
            store.collection("missing")

    def test_write_then_read_back_exactly(self, store: DocumentStore) -> None:
        store.create_collection("c", "m", DIM)
        it = item("d1", LONG, year=2020, tags=["a", "b"])
        store.write("c", [it])
        doc = store.get_document("c", "d1")
        assert doc == it.document
        snap = store.snapshot("c")
        assert snap.document_ids == ["d1"] * len(it.chunks)
        np.testing.assert_allclose(snap.embeddings, it.embeddings, rtol=1e-6)
        assert snap.metadata[0] == {"year": 2020, "tags": ["a", "b"]}
        stored = store.chunks_by_row("c", [int(r) for r in snap.row_ids])
        assert [s.chunk for s in stored] == it.chunks
        for s in stored:
            assert doc.text[s.chunk.start : s.chunk.end] == s.chunk.text

    def test_generation_moves_on_every_change(self, store: DocumentStore) -> None:
        store.create_collection("c", "m", DIM)
        g0 = store.generation("c")
        store.write("c", [item("d1", "One sentence.")])
        g1 = store.generation("c")
        store.delete("c", ["d1"])
        g2 = store.generation("c")
        assert g0 < g1 < g2
        store.delete("c", ["nope"])
        assert store.generation("c") == g2

    def test_version_never_repeats_across_drop_and_recreate(self, store: DocumentStore) -> None:
        store.create_collection("c", "m", DIM)
        store.write("c", [item("d1", "One.")])
        before = store.version("c")
        store.drop_collection("c")
        store.create_collection("c", "m", DIM)
        store.write("c", [item("d2", "Two.")])
        assert store.generation("c") == 1 and store.version("c") != before
        assert store.snapshot("c").version == store.version("c")

    def test_replace_swaps_all_chunks(self, store: DocumentStore) -> None:
        store.create_collection("c", "m", DIM)
        store.write("c", [item("d1", LONG)])
        store.write("c", [item("d1", "Short now.")])
        snap = store.snapshot("c")
        assert snap.document_ids == ["d1"]
        assert store.document_hashes("c", ["d1"]) == {"d1": Document("d1", "Short now.", "title d1").hash}

    def test_delete_removes_document_and_chunks(self, store: DocumentStore) -> None:
        store.create_collection("c", "m", DIM)
        store.write("c", [item("d1", LONG), item("d2", "Other text.")])
        assert store.delete("c", ["d1", "missing"]) == 1
        assert store.get_document("c", "d1") is None
        assert set(store.snapshot("c").document_ids) == {"d2"}

    def test_row_ids_of_finds_live_chunks_in_one_call(self, store: DocumentStore) -> None:
        store.create_collection("c", "m", DIM)
        store.create_collection("other", "m", DIM)
        docs = [item(f"d{i}", LONG) for i in range(150)]  # more keys than one SQL statement binds
        store.write("c", docs)
        store.write("other", [item("d0", LONG)])
        snap = store.snapshot("c")
        expected = {
            (s.chunk.document_id, s.chunk.index): s.row_id
            for s in store.chunks_by_row("c", [int(r) for r in snap.row_ids])
        }
        assert len(expected) > 400
        wanted = [*expected, ("d0", 999), ("missing", 0), ("d1", 0)]  # unknown keys and a repeat
        assert store.row_ids_of("c", wanted) == expected
        store.delete("c", ["d1"])
        assert ("d1", 0) not in store.row_ids_of("c", [("d1", 0), ("d2", 0)])

    def test_collections_are_isolated(self, store: DocumentStore) -> None:
        store.create_collection("a", "m", DIM)
        store.create_collection("b", "m", DIM)
        store.write("a", [item("same-id", "In a.")])
        store.write("b", [item("same-id", "In b.")])
        store.drop_collection("a")
        assert [c.name for c in store.collections()] == ["b"]
        doc = store.get_document("b", "same-id")
        assert doc is not None and doc.text == "In b."

    def test_wrong_dimension_is_refused(self, store: DocumentStore) -> None:
        store.create_collection("c", "m", DIM)
        bad = item("d1", "Text.")
        with pytest.raises(WaypostError, match="dimension"):
            store.write("c", [IngestItem(bad.document, bad.chunks, np.zeros((len(bad.chunks), DIM + 1), np.float32))])
        assert store.collection("c").documents == 0

    def test_failed_batch_writes_nothing(self, store: DocumentStore) -> None:
        store.create_collection("c", "m", DIM)
        good = item("d1", "Fine.")
        broken = item("d2", "Also fine.")
        broken.chunks.append(broken.chunks[0])  # duplicate chunk index violates uniqueness
        with pytest.raises(Exception):  # noqa: B017 - backend-specific integrity error
            store.write(
                "c",
                [good, IngestItem(broken.document, broken.chunks, np.vstack([broken.embeddings, broken.embeddings]))],
            )
        assert store.collection("c").documents == 0

    # -- the change log ----------------------------------------------------------------------
    def test_change_log_says_what_changed_since_a_generation(self, store: DocumentStore) -> None:
        store.create_collection("c", "m", DIM)
        store.write("c", [item("d1", LONG), item("d2", "Second.")])
        g1 = store.generation("c")
        before = store.snapshot("c")
        rows_d1 = [r for r, d in zip(before.row_ids, before.document_ids, strict=True) if d == "d1"]
        store.write("c", [item("d1", "Replaced text.")])
        store.delete("c", ["d2"])
        store.write("c", [item("d3", "Third.")])
        changes = store.changes("c", g1)
        assert changes is not None
        assert changes.since == g1 and changes.generation == store.generation("c")
        assert changes.version == store.version("c")
        assert [(op, doc) for _g, doc, op in changes.documents] == [("replace", "d1"), ("delete", "d2"), ("add", "d3")]
        snap = store.snapshot("c")
        assert set(changes.added.row_ids.tolist()) == set(snap.row_ids.tolist()) - {
            r for r, d in zip(snap.row_ids, snap.document_ids, strict=False) if d not in {"d1", "d3"}
        }
        assert set(rows_d1) <= set(changes.removed_rows.tolist())
        assert changes.added.document_ids.count("d1") == 1 and "d3" in changes.added.document_ids
        np.testing.assert_allclose(
            changes.added.embeddings, snap.embeddings[np.isin(snap.row_ids, changes.added.row_ids)]
        )
        empty = store.changes("c", store.generation("c"))
        assert empty is not None and empty.empty and len(empty.added.row_ids) == 0

    def test_rows_added_then_removed_in_the_span_are_only_removed(self, store: DocumentStore) -> None:
        store.create_collection("c", "m", DIM)
        g0 = store.generation("c")
        store.write("c", [item("d1", "Short-lived.")])
        store.delete("c", ["d1"])
        changes = store.changes("c", g0)
        assert changes is not None and len(changes.added.row_ids) == 0 and changes.removed_rows.size == 1

    def test_log_is_compacted_once_every_consumer_applied_it(self, store: DocumentStore) -> None:
        store.create_collection("c", "m", DIM)
        for i in range(4):
            store.write("c", [item(f"d{i}", f"Text {i}.")])
        store.acknowledge("c", "slow", 2)
        store.acknowledge("c", "fast", 4)
        assert store.consumers("c") == {"fast": 4, "slow": 2}
        assert store.log_floor("c") == 2
        assert store.changes("c", 1) is None  # compacted: that consumer must rebuild from a snapshot
        later = store.changes("c", 2)
        assert later is not None and [d for _g, d, _op in later.documents] == ["d2", "d3"]
        store.forget_consumer("c", "slow")
        store.acknowledge("c", "fast", 4)
        assert store.log_floor("c") == 4 and store.changes("c", 3) is None
        assert store.changes("c", 4) is not None

    def test_an_acknowledgement_for_a_dropped_incarnation_is_ignored(self, store: DocumentStore) -> None:
        store.create_collection("c", "m", DIM)
        for i in range(5):
            store.write("c", [item(f"d{i}", f"Text {i}.")])
        old = store.version("c")
        store.drop_collection("c")
        store.create_collection("c", "m", DIM)
        store.write("c", [item("n1", "New.")])
        store.acknowledge("c", "x", 5, old)  # a process still holding the old collection's state
        assert store.log_floor("c") == 0 and store.changes("c", 0) is not None
        store.acknowledge("c", "x", 99, store.version("c"))  # never past the head
        assert store.consumers("c") == {"x": 1} and store.log_floor("c") == 1

    def test_dropping_a_collection_drops_its_log(self, store: DocumentStore) -> None:
        store.create_collection("c", "m", DIM)
        store.write("c", [item("d1", "One.")])
        store.acknowledge("c", "x", 0)
        store.drop_collection("c")
        store.create_collection("c", "m", DIM)
        assert store.consumers("c") == {} and store.log_floor("c") == 0
        changes = store.changes("c", 0)
        assert changes is not None and changes.empty

    def test_feedback_is_kept_per_collection_in_order_and_dropped_with_it(self, store: DocumentStore) -> None:
        store.create_collection("c", "m", DIM)
        store.create_collection("other", "m", DIM)
        entries = [
            Feedback("pump noise", "d1", 0, 40, 1.0, "used", 100.0),
            Feedback("pump noise", "d2", 10, 90, 0.0, "rejected", 101.0),
        ]
        assert store.record_feedback("c", entries) == 2
        store.record_feedback("other", [Feedback("q", "x", 0, 1, 0.6, "rating", 5.0)])
        assert store.feedback("c") == entries
        assert [f.document_id for f in store.feedback("other")] == ["x"]
        with pytest.raises(CollectionNotFoundError):
            store.record_feedback("missing", entries)
        store.drop_collection("c")
        store.create_collection("c", "m", DIM)
        assert store.feedback("c") == []

    # -- contracts a second backend must keep ---------------------------------------------------
    def test_deleting_an_id_never_touches_ids_that_share_its_characters(self, store: DocumentStore) -> None:
        store.create_collection("c", "m", DIM)
        ids = ["doc1", "d", "o", "c", "1", "doc", "doc10", "xdoc1", "DOC1", "doc1 ", "doc%", "doc_", "do*"]
        store.write("c", [item(i, f"Text of {i}.") for i in ids])
        assert store.delete("c", ["doc1"]) == 1
        assert {d.id for d in store.iter_documents("c")} == set(ids) - {"doc1"}
        assert store.delete("c", ["doc%", "doc_", "do*"]) == 3  # wildcards of LIKE and glob are plain characters
        left = set(ids) - {"doc1", "doc%", "doc_", "do*"}
        assert {d.id for d in store.iter_documents("c")} == left
        assert set(store.snapshot("c").document_ids) == left
        assert store.document_hashes("c", ids).keys() == left

    def test_row_ids_only_grow_and_are_never_reused(self, store: DocumentStore, reopen: Reopen) -> None:
        store.create_collection("c", "m", DIM)
        store.write("c", [item("keep", "Kept."), item("d1", LONG)])
        seen = set(store.snapshot("c").row_ids.tolist())
        store.delete("c", ["d1"])  # the newest rows go: their ids must not come back
        store = reopen(store)
        for step in range(3):
            store.write("c", [item(f"n{step}", LONG)])
            store.write("c", [item("keep", f"Kept, version {step}.")])  # a replace gets new rows too
            rows = set(store.snapshot("c").row_ids.tolist())
            new = rows - seen
            assert new and min(new) > max(seen), "a row id was reused or went backwards"
            seen |= rows
            store.delete("c", [f"n{step}"])
            store = reopen(store)

    def test_every_commit_gets_a_version_never_seen_before(self, store: DocumentStore) -> None:
        info = store.create_collection("c", "m", DIM)
        first = store.version("c")
        uid = version_incarnation(first)
        assert first.startswith(f"{uid}-g{info.generation}-")
        seen = {first}
        nonces = {first.rsplit("-", 1)[1]}
        for change in (
            lambda: store.write("c", [item("d1", "One.")]),
            lambda: store.write("c", [item("d1", "One, replaced.")]),
            lambda: store.write("c", [item("d2", "Two.")]),
            lambda: store.delete("c", ["d1"]),
        ):
            change()
            version = store.version("c")
            assert version not in seen
            assert version_incarnation(version) == uid
            assert version.startswith(f"{uid}-g{store.generation('c')}-")
            nonce = version.rsplit("-", 1)[1]
            assert nonce and nonce not in nonces, "the nonce must change in every commit"
            seen.add(version)
            nonces.add(nonce)
        head = store.version("c")
        store.delete("c", ["never-there"])  # commits nothing
        assert store.version("c") == head
        assert store.snapshot("c").version == head
        changes = store.changes("c", 0)
        assert changes is not None and changes.version == head

    def test_version_at_names_each_generation_the_log_reaches(self, store: DocumentStore) -> None:
        store.create_collection("c", "m", DIM)
        versions = {0: store.version("c")}
        for i in range(1, 5):
            store.write("c", [item(f"d{i}", f"Text {i}.")])
            versions[store.generation("c")] = store.version("c")
        assert {g: store.version_at("c", g) for g in versions} == versions
        assert store.version_at("c", 5) is None and store.version_at("c", -1) is None
        store.acknowledge("c", "x", 2)
        assert store.version_at("c", 1) is None  # below the floor: no state there can catch up
        assert store.version_at("c", 2) == versions[2] and store.version_at("c", 4) == versions[4]
        store.drop_collection("c")
        store.create_collection("c", "m", DIM)
        assert store.version_at("c", 0) == store.version("c") != versions[0]
        assert store.version_at("c", 2) is None

    def test_compaction_waits_for_the_slowest_of_several_consumers(self, store: DocumentStore) -> None:
        store.create_collection("c", "m", DIM)
        for i in range(6):
            store.write("c", [item(f"d{i}", f"Text {i}.")])
        store.acknowledge("c", "c", 1)  # the first acknowledgement compacts up to it: register the slowest first
        store.acknowledge("c", "b", 3)
        store.acknowledge("c", "a", 5)
        assert store.consumers("c") == {"a": 5, "b": 3, "c": 1}
        assert store.log_floor("c") == 1
        assert store.changes("c", 0) is None
        caught = store.changes("c", 1)
        assert caught is not None and [g for g, _d, _op in caught.documents] == [2, 3, 4, 5, 6]
        store.acknowledge("c", "c", 4)  # "b" is now the slowest
        assert store.log_floor("c") == 3
        assert store.changes("c", 2) is None
        from_b = store.changes("c", 3)
        assert from_b is not None and [d for _g, d, _op in from_b.documents] == ["d3", "d4", "d5"]
        store.forget_consumer("c", "b")  # releases its hold: the next acknowledgement compacts past it
        assert store.consumers("c") == {"a": 5, "c": 4}
        store.acknowledge("c", "a", 6)
        assert store.log_floor("c") == 4 and store.changes("c", 3) is None
        store.acknowledge("c", "late", 2)  # a consumer behind the floor never moves it back
        assert store.log_floor("c") == 4 and store.changes("c", 2) is None
        store.forget_consumer("c", "late")
        store.forget_consumer("c", "c")
        store.acknowledge("c", "a", 6)
        assert store.log_floor("c") == 6
        assert store.changes("c", 5) is None
        last = store.changes("c", 6)
        assert last is not None and last.empty

    def test_a_consumer_never_acknowledges_past_the_head(self, store: DocumentStore) -> None:
        store.create_collection("c", "m", DIM)
        store.write("c", [item("d1", "One.")])
        store.acknowledge("c", "x", 10)
        assert store.consumers("c") == {"x": 1} and store.log_floor("c") == 1
        store.write("c", [item("d2", "Two.")])
        later = store.changes("c", 1)
        assert later is not None and [d for _g, d, _op in later.documents] == ["d2"]

    def test_feedback_keeps_every_field_and_stamps_the_time(self, store: DocumentStore) -> None:
        store.create_collection("c", "m", DIM)
        entries = [Feedback(f"query {i}", f"doc{i % 3}", i, i + 10, i / 10, "rating", 1000.0 + i) for i in range(50)]
        assert store.record_feedback("c", entries) == 50
        assert store.feedback("c") == entries
        store.record_feedback("c", [Feedback("now", "d", 0, 1, 1.0, "used")])  # recorded_at 0: stamped now
        assert store.feedback("c")[-1].recorded_at > 1_000_000_000
        assert store.record_feedback("c", []) == 0

    def test_id_lists_of_any_length(self, store: DocumentStore) -> None:
        store.create_collection("c", "m", DIM)
        big = many_chunks("big", 33_500)  # more than SQLite's 32,766 variables in one statement
        store.write("c", [big, item("small", "Small.")])
        snap = store.snapshot("c")
        assert len(snap.row_ids) == 33_501
        rows = [int(r) for r in snap.row_ids]
        found = store.chunks_by_row("c", rows)
        assert [s.row_id for s in found] == rows
        assert [s.chunk for s in found[:-1]] == big.chunks
        keys = [(c.document_id, c.index) for c in big.chunks]
        assert len(store.row_ids_of("c", keys)) == 33_500
        many_ids = ["big", *[f"missing-{i}" for i in range(40_000)]]
        assert store.document_hashes("c", many_ids) == {"big": big.stored_hash}
        store.write("c", [item("big", "Now short.")])  # a replace removes every old chunk
        changes = store.changes("c", snap.generation)
        assert changes is not None and changes.removed_rows.size == 33_500
        assert store.delete("c", many_ids) == 1
        assert store.snapshot("c").document_ids == ["small"]

    def test_a_snapshot_is_one_consistent_read_while_writes_go_on(self, store: DocumentStore) -> None:
        store.create_collection("c", "m", DIM)
        store.write("c", [many_chunks("a", 1500), many_chunks("b", 1500)])
        stop = threading.Event()

        def writer() -> None:
            step = 0
            while not stop.is_set():  # every commit gives "a" and "b" the same number of chunks
                n = 1100 + (step % 7) * 150
                store.write("c", [many_chunks("a", n), many_chunks("b", n)])
                step += 1

        thread = threading.Thread(target=writer)
        thread.start()
        try:
            for _ in range(15):
                snap = store.snapshot("c")  # more rows than one batch of a batched read
                a, b = snap.document_ids.count("a"), snap.document_ids.count("b")
                assert a == b and a + b == len(snap.row_ids) == len(snap.embeddings), (a, b)
                assert snap.version == store.version_at("c", snap.generation)
        finally:
            stop.set()
            thread.join()
