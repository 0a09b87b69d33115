"""End to end through the public API with the real MiniLM model and a real SQLite store."""

from pathlib import Path

import pytest

from waypost.engine import Engine, EngineConfig
from waypost.errors import CollectionNotFoundError, FilterError, ModelMismatchError, WaypostError
from waypost.filters.model import Condition, Op
from waypost.retrieval.fusion import FusionConfig, FusionMethod
from waypost.types import Document

DOCS = [
    Document(
        "vax",
        "Vaccines train the immune system to recognise a pathogen. Antibodies then neutralise the virus.",
        "Vaccines",
        {"topic": "medicine", "year": 2021, "tags": ["health", "biology"]},
    ),
    Document(
        "sql",
        "SQLite keeps a write-ahead log. Readers continue while a single writer commits transactions.",
        "SQLite WAL",
        {"topic": "databases", "year": 2010, "tags": ["software"]},
    ),
    Document(
        "bm25",
        "BM25 ranks documents by term frequency and inverse document frequency with length normalisation.",
        "BM25",
        {"topic": "search", "year": 1994, "tags": ["software", "ranking"]},
    ),
    Document(
        "tides",
        "The moon's gravity pulls the oceans, which produces two high tides every day.",
        "Tides",
        {"topic": "physics", "year": 2015, "tags": ["earth"]},
    ),
]


@pytest.fixture
def coll(engine: Engine):  # type: ignore[no-untyped-def]
    c = engine.collection("kb", create=True)
    report = c.add(DOCS)
    assert (report.added, report.chunks) == (4, 4)
    return c


@pytest.mark.parametrize("strategy", ["dense", "bm25", "hybrid", "metadata"])
def test_every_strategy_finds_the_right_document(coll, strategy: str) -> None:  # type: ignore[no-untyped-def]
    result = coll.retrieve("how do readers keep working during a database write?", strategy, k=2)
    assert result.hits[0].document_id == "sql"
    assert result.explanation.strategy == strategy
    assert result.explanation.total_ms > 0
    for hit in result.hits:
        doc = coll.get(hit.document_id)
        assert doc.text[hit.chunk.start : hit.chunk.end] == hit.chunk.text


def test_hybrid_fusion_methods_all_work(coll) -> None:  # type: ignore[no-untyped-def]
    for method in FusionMethod:
        result = coll.retrieve("term frequency ranking", "hybrid", k=4, fusion=FusionConfig(method=method))
        assert result.hits[0].document_id == "bm25", method
        assert {"dense", "bm25"} <= set(result.hits[0].provenance.stage_ranks)


def test_explicit_filters_prefilter(coll) -> None:  # type: ignore[no-untyped-def]
    result = coll.retrieve("anything about science", "hybrid", k=10, filters=Condition("tags", Op.EQ, "software"))
    assert {h.document_id for h in result.hits} == {"sql", "bm25"}
    assert result.explanation.candidates == 2
    result = coll.retrieve("ranking", "dense", k=10, filters=Condition("year", Op.LT, 2000))
    assert [h.document_id for h in result.hits] == ["bm25"]
    with pytest.raises(FilterError):
        coll.retrieve("x", "bm25", filters=Condition("colour", Op.EQ, "red"))


def test_metadata_strategy_extracts_filters_from_text(coll) -> None:  # type: ignore[no-untyped-def]
    result = coll.retrieve("software documents from 2005 or later about logs", "metadata", k=5)
    assert [h.document_id for h in result.hits] == ["sql"]
    assert "release" not in (result.explanation.filters or "")
    assert "year >= 2005" in (result.explanation.filters or "")
    assert result.explanation.semantic_query == "documents logs"
    assert "extract_filters" in result.explanation.timings_ms


def test_reingest_is_idempotent_and_changes_replace(coll) -> None:  # type: ignore[no-untyped-def]
    generation = coll.info.generation
    again = coll.add(DOCS)
    assert (again.added, again.updated, again.unchanged) == (0, 0, 4)
    assert coll.info.generation == generation
    changed = Document("tides", "Tides are now explained by a completely different sentence about lunar pull.", "Tides")
    report = coll.add([changed])
    assert (report.added, report.updated) == (0, 1)
    assert coll.get("tides").text.startswith("Tides are now")
    hit = coll.retrieve("lunar pull", "bm25", k=1).hits[0]
    assert hit.document_id == "tides" and "lunar pull" in hit.chunk.text


def test_delete_removes_from_every_index(coll) -> None:  # type: ignore[no-untyped-def]
    assert coll.delete(["vax", "nope"]) == 1
    for strategy in ("dense", "bm25", "hybrid"):
        ids = {h.document_id for h in coll.retrieve("vaccines antibodies immune", strategy, k=10).hits}
        assert "vax" not in ids


def test_add_paths_reports_bad_files(engine: Engine, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "ok.md").write_text("# Ok\n\nA fine document about gardens.")
    (folder / "broken.txt").write_bytes(b"\x00\x00binary")
    report = engine.collection("files", create=True).add_paths([folder])
    assert report.added == 1 and len(report.failures) == 1 and "binary" in report.failures[0].error


def test_model_mismatch_is_refused(tmp_path: Path, engine: Engine, coll) -> None:  # type: ignore[no-untyped-def]
    other = Engine(engine.path, EngineConfig(embed_model="some-other-model"))
    with pytest.raises(ModelMismatchError, match="all-MiniLM-L6-v2"):
        other.collection("kb")
    other.close()


def test_missing_collection_and_empty_query(engine: Engine, coll) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(CollectionNotFoundError):
        engine.collection("nope")
    with pytest.raises(WaypostError, match="empty"):
        coll.retrieve("   ")


def test_indexes_survive_reopen(engine: Engine, coll, minilm) -> None:  # type: ignore[no-untyped-def]
    first = coll.retrieve("gravity and oceans", "hybrid", k=1).hits[0].document_id
    reopened = Engine(engine.path, EngineConfig())
    reopened.register_embedder(minilm)
    assert (
        reopened.collection("kb").retrieve("gravity and oceans", "hybrid", k=1).hits[0].document_id == first == "tides"
    )
    reopened.close()


def test_title_only_documents_are_searchable(engine: Engine) -> None:
    coll = engine.collection("titles", create=True)
    report = coll.add([Document("t1", "", "Coronavirus transmission in hospitals"), Document("t2", "  ", "")])
    assert report.added == 1 and len(report.failures) == 1 and "neither text nor title" in report.failures[0].error
    hit = coll.retrieve("coronavirus hospital transmission", "bm25", k=1).hits[0]
    assert (hit.document_id, hit.chunk.start, hit.chunk.end, hit.chunk.text) == ("t1", 0, 0, "")


def test_cached_indexes_never_serve_a_recreated_collection(engine: Engine, minilm) -> None:  # type: ignore[no-untyped-def]
    engine.collection("fruit", create=True).add([Document("apple", "Apples grow on trees in orchards.", "Apples")])
    assert engine.collection("fruit").retrieve("apples", "bm25").hits[0].document_id == "apple"
    other = Engine(engine.path, EngineConfig())  # a second process would see the same store
    other.register_embedder(minilm)
    other.drop("fruit")
    other.collection("fruit", create=True).add([Document("pear", "Pears ripen after they are picked.", "Pears")])
    assert engine.store.generation("fruit") == 1  # the same generation number as before the drop
    for eng in (engine, other):
        assert [h.document_id for h in eng.collection("fruit").retrieve("pears", "bm25").hits] == ["pear"]
        assert eng.collection("fruit").retrieve("apples", "bm25").hits == []
    other.close()


def test_bad_arguments_are_clear_errors(engine: Engine) -> None:
    from waypost.ingest.chunker import Chunker

    with pytest.raises(WaypostError, match="at least 16"):
        Chunker(8)
    coll = engine.collection("stop", create=True)
    coll.add([Document("s1", "The of and a an the.")])  # not one indexable word for BM25
    assert coll.retrieve("the", "bm25").hits == []
    assert [h.document_id for h in coll.retrieve("the", "hybrid").hits] == ["s1"]
    with pytest.raises(WaypostError, match="k must be at least 1"):
        coll.retrieve("x", "hybrid", k=0)


def test_a_new_chunk_budget_rechunks_on_readd(engine: Engine, minilm) -> None:  # type: ignore[no-untyped-def]
    long = Document("long", " ".join(f"Sentence {i} is about topic {i}." for i in range(60)), "Long")
    coll = engine.collection("chunks", create=True)  # the fixture engine chunks at 64 tokens
    coll.add([long])
    before = engine.store.snapshot("chunks").document_ids.count("long")
    again = Engine(engine.path, EngineConfig(chunk_tokens=200))
    again.register_embedder(minilm)
    report = again.collection("chunks").add([long])
    assert report.updated == 1
    after = again.store.snapshot("chunks").document_ids.count("long")
    assert before > after >= 1
    assert again.collection("chunks").add([long]).unchanged == 1
    again.close()
