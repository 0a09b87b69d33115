"""What a purge relies on: deletes take the document's feedback with them, and the store can say which texts and
rows are still live and leave no deleted content in its files. Mixed into ``StoreConformance`` users."""

from __future__ import annotations

from tests.conformance.store_suite import DIM, item
from waypost.base import DocumentStore, Feedback


class PurgeConformance:
    def test_delete_drops_the_documents_feedback_and_replace_keeps_it(self, store: DocumentStore) -> None:
        store.create_collection("c", "m", DIM)
        store.write("c", [item("d1", "Pumps are loud."), item("d2", "Valves are quiet.")])
        store.record_feedback(
            "c", [Feedback("noise", "d1", 0, 5, 1.0, "used", 1.0), Feedback("noise", "d2", 0, 6, 0.0, "rejected", 2.0)]
        )
        store.write("c", [item("d2", "Valves are very quiet now.")])  # a replace keeps feedback on d2
        store.delete("c", ["d1"])
        assert [f.document_id for f in store.feedback("c")] == ["d2"]

    def test_chunk_texts_cover_the_store_a_collection_or_some_documents(self, store: DocumentStore) -> None:
        store.create_collection("a", "m", DIM)
        store.create_collection("b", "m", DIM)
        store.write("a", [item("d1", "Alpha text."), item("d2", "Beta text.")])
        store.write("b", [item("d1", "Gamma text.")])
        everything = {text for _row, text, _index in store.chunk_texts()}
        assert everything == {"Alpha text.", "Beta text.", "Gamma text."}
        assert {text for _r, text, _i in store.chunk_texts("a")} == {"Alpha text.", "Beta text."}
        picked = list(store.chunk_texts("a", ["d2"]))
        assert [text for _r, text, _i in picked] == ["Beta text."]
        assert "title d2" in picked[0][2]  # the index text is what BM25 and the embedder saw
        rows = {row for row, _t, _i in store.chunk_texts()}
        assert store.live_rows([*rows, max(rows) + 1000]) == rows

    def test_live_texts_and_rows_forget_what_was_deleted(self, store: DocumentStore) -> None:
        store.create_collection("a", "m", DIM)
        store.create_collection("b", "m", DIM)
        store.write("a", [item("d1", "Shared sentence."), item("d2", "Only here.")])
        store.write("b", [item("x", "Shared sentence.")])
        rows = {row for row, _t, _i in store.chunk_texts("a", ["d2"])}
        store.delete("a", ["d1", "d2"])
        assert store.live_texts(["Shared sentence.", "Only here.", "Never stored."]) == {"Shared sentence."}
        assert store.live_rows(rows) == set()

    def test_compact_after_deletes_keeps_the_live_data(self, store: DocumentStore) -> None:
        store.create_collection("c", "m", DIM)
        store.write("c", [item(f"d{i}", f"Document number {i}.") for i in range(20)])
        store.delete("c", [f"d{i}" for i in range(10)])
        assert store.compact(vacuum=True) in (True, False)
        assert {d.id for d in store.iter_documents("c")} == {f"d{i}" for i in range(10, 20)}
        assert len(store.snapshot("c").row_ids) == 10
