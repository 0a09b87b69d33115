"""The public boundary holds: ids, documents, text, metadata, filters and query arguments are checked, and a
bad one is a WaypostError naming the problem (never data loss, a crash or a traceback)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from waypost.base import Embedder
from waypost.engine import Collection, Engine
from waypost.errors import FilterError, InvalidInputError, LoaderError, WaypostError
from waypost.filters.model import MAX_FILTER_DEPTH, And, Condition, Op, from_obj, parse_filter, parse_filter_json
from waypost.ingest.loaders import LoadFailure, load_path
from waypost.types import Document
from waypost.validation import clean_text


@pytest.fixture
def coll(engine: Engine) -> Collection:
    c = engine.collection("boundary", create=True)
    docs = [Document(i, f"Document {i} talks about topic {i}.") for i in ("doc1", "d", "o", "c", "1")]
    c.add(docs)
    return c


def _ids(c: Collection) -> set[str]:
    return {d.id for d in c.documents()}


# -- ids ---------------------------------------------------------------------------------------------
def test_delete_refuses_a_bare_string_and_deletes_nothing(coll: Collection) -> None:
    with pytest.raises(InvalidInputError, match=r"\['doc1'\]"):
        coll.delete("doc1")
    assert _ids(coll) == {"doc1", "d", "o", "c", "1"}  # before: d, o, c and 1 were gone, doc1 stayed
    with pytest.raises(InvalidInputError):
        coll.engine.store.delete(coll.name, "doc1")
    with pytest.raises(InvalidInputError):
        coll.delete([b"doc1"])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError):
        coll.delete(42)  # type: ignore[arg-type]
    assert _ids(coll) == {"doc1", "d", "o", "c", "1"}
    assert coll.delete(["doc1"]) == 1
    assert coll.delete(iter(["d", "o"])) == 2
    assert _ids(coll) == {"c", "1"}


def test_other_public_calls_check_their_arguments(coll: Collection, engine: Engine) -> None:
    with pytest.raises(InvalidInputError):
        coll.get(3)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="list"):
        coll.add("some text")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="list"):
        coll.add(Document("x", "one document, not a list"))  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="Document"):
        coll.add([{"id": "x", "text": "a dict"}])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError, match="single path"):
        coll.add_paths("docs/")  # type: ignore[arg-type]  # before: the paths d, o, c, s and /
    with pytest.raises(InvalidInputError, match="rerank"):
        coll.retrieve("topic", rerank=3)  # type: ignore[arg-type]
    for bad_k in (0, -1, 2.5, "5", True):
        with pytest.raises(InvalidInputError, match="k"):
            coll.retrieve("topic", k=bad_k)  # type: ignore[arg-type]
    for bad_query in ("", "   ", None, 42):
        with pytest.raises(InvalidInputError, match="query"):
            coll.retrieve(bad_query)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="unknown strategy"):
        coll.retrieve("topic", strategy="no-such")
    with pytest.raises(InvalidInputError, match="strategy"):
        coll.retrieve("topic", strategy=None)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="params"):
        coll.retrieve("topic", params=["budget=3"])  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="no parameter"):
        coll.retrieve("topic", strategy="raptor-collapsed", params={"no_such": 1})
    with pytest.raises(FilterError):
        coll.retrieve("topic", filters={"year": 2020})  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="passages"):
        coll.retrieve("topic", passages="grow")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        coll.answer("", k=3)
    with pytest.raises(InvalidInputError):
        coll.feedback("topic", 17)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        coll.feedback("topic", "doc1#0", "rating", rating="5")  # type: ignore[arg-type]
    assert coll.retrieve("topic", k=2).hits  # the good call still works


@pytest.mark.parametrize("name", ["", "../outside", "/tmp/x", "a/b", ".hidden", "..", "x" * 200, "tab\there", 7])
def test_collection_names_never_become_paths(engine: Engine, tmp_path: Path, name: object) -> None:
    with pytest.raises(InvalidInputError, match="a collection name"):
        engine.collection(name, create=True)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["../outside", "/tmp/x", "a/b", ".hidden", "..", "a\\b"])
def test_drop_refuses_a_path_before_looking_it_up(engine: Engine, name: str) -> None:
    with pytest.raises(InvalidInputError, match="cannot be a path"):
        engine.drop(name)


def test_ordinary_collection_names_still_work(engine: Engine) -> None:
    for name in ("default", "xquad-th", "my docs", "v1.2_notes", "ภาษาไทย"):
        assert engine.collection(name, create=True).name == name


# -- text: lone surrogates -----------------------------------------------------------------------------
def test_clean_text_replaces_lone_surrogates_only() -> None:
    assert clean_text("plain") == "plain"
    assert clean_text("a\ud800b") == "a\ufffdb"
    assert clean_text("\udfff") == "\ufffd"
    assert clean_text("\ud83d\ude00") == "\U0001f600"  # a pair is the character it encodes
    assert clean_text("x\ud83d") == "x\ufffd"


def test_jsonl_with_a_lone_surrogate_loads_and_ingests(engine: Engine, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    lines = [
        '{"_id": "bad", "title": "T\\ud800", "text": "Broken \\ud800 text about volcanoes.", '
        '"metadata": {"k\\udc00": "v\\udfff"}}',
        '{"_id": "good", "text": "A fine document about glaciers."}',
    ]
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    coll = engine.collection("surrogates", create=True)
    report = coll.add_paths([corpus])  # before: UnicodeEncodeError, nothing ingested
    assert report.failures == []
    assert report.added == 2
    bad = coll.get("bad")
    assert bad is not None
    assert bad.text == "Broken \ufffd text about volcanoes." and bad.title == "T\ufffd"
    assert bad.metadata == {"k\ufffd": "v\ufffd"}
    assert coll.retrieve("volcanoes", k=1).hits[0].document_id == "bad"


def test_python_api_documents_with_surrogates_are_cleaned(engine: Engine) -> None:
    coll = engine.collection("api-surrogates", create=True)
    report = coll.add(
        [Document("s\ud800", "Text \udc00 about rivers.", title="\ud801"), Document("ok", "Text about lakes.")]
    )
    assert report.added == 2 and not report.failures
    assert {d.id for d in coll.documents()} == {"s\ufffd", "ok"}
    assert coll.delete(["s\ud800"]) == 1  # ids are cleaned the same way on every call


# -- metadata: NaN and Infinity ------------------------------------------------------------------------
def test_jsonl_refuses_nan_and_infinity_per_document(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(
        '{"_id": "n1", "text": "one", "metadata": {"score": NaN}}\n'
        '{"_id": "n2", "text": "two", "rank": Infinity}\n'
        '{"_id": "n3", "text": "three", "metadata": {"tags": [1, -Infinity]}}\n'
        '{"_id": "n4", "text": "four", "metadata": {"big": 1e400}}\n'
        '{"_id": "ok", "text": "five", "metadata": {"score": 1.5}}\n',
        encoding="utf-8",
    )
    items = list(load_path(corpus, tmp_path))
    failures = [i for i in items if isinstance(i, LoadFailure)]
    docs = [i for i in items if isinstance(i, Document)]
    assert [d.id for d in docs] == ["ok"]
    assert len(failures) == 4
    expected = [("n1", "score"), ("n2", "rank"), ("n3", "tags[1]"), ("n4", "big")]
    for failure, (doc_id, fld) in zip(failures, expected, strict=True):
        assert repr(doc_id) in failure.error and fld in failure.error, failure.error


def test_csv_keeps_refusing_non_finite_numbers(tmp_path: Path) -> None:
    corpus = tmp_path / "c.csv"
    corpus.write_text("id,text,score\na,alpha,nan\nb,beta,inf\nc,gamma,2\n", encoding="utf-8")
    docs = [i for i in load_path(corpus, tmp_path) if isinstance(i, Document)]
    assert [d.metadata["score"] for d in docs] == ["nan", "inf", 2]  # kept as text, never a float NaN


def test_collection_add_refuses_bad_documents_and_goes_on(engine: Engine) -> None:
    coll = engine.collection("nan", create=True)
    report = coll.add(
        [
            Document("nan-doc", "Text about deserts.", metadata={"score": float("nan")}),
            Document("inf-doc", "Text about tundra.", metadata={"nested": {"deep": [float("inf")]}}),
            Document("type-doc", 42),  # type: ignore[arg-type]
            Document(7, "an int id"),  # type: ignore[arg-type]
            Document("obj-doc", "Text.", metadata={"when": object()}),
            Document("key-doc", "Text.", metadata={"a": {1: "int key"}}),
            Document("good", "Text about oceans.", metadata={"score": 3.0, "tags": ["a"], "none": None}),
        ]
    )
    assert report.added == 1
    errors = [f.error for f in report.failures]
    assert len(errors) == 6, errors
    assert "'nan-doc'" in errors[0] and "score" in errors[0] and "NaN" in errors[0]
    assert "'inf-doc'" in errors[1] and "nested.deep[0]" in errors[1] and "Infinity" in errors[1]
    assert "'type-doc'" in errors[2] and "text" in errors[2]
    assert "7" in errors[3] and "id" in errors[3]
    assert "'obj-doc'" in errors[4] and "when" in errors[4]
    assert "'key-doc'" in errors[5]
    assert {d.id for d in coll.documents()} == {"good"}


def test_a_document_id_that_is_a_dot_segment_is_refused_alone(engine: Engine) -> None:
    """'.' and '..' between slashes cannot be named in a URL path (clients read them as folders), so an id
    holding one is refused; '.x', '..x', 'a/.b' and 'a..b' still are ids."""
    coll = engine.collection("dots", create=True)
    bad = ("..", ".", " .. ", "a/..", "a/../..", "./..", "x/./y", "../x")
    good = (".x", "..x", "a/.b", "a..b", "notes/2024.md")
    report = coll.add([Document(i, f"text of {i}") for i in (*bad, *good)])
    assert report.added == len(good) and len(report.failures) == len(bad)
    assert all("cannot be" in f.error for f in report.failures)
    assert {d.id for d in coll.documents()} == set(good)


# -- filters: depth and size limits --------------------------------------------------------------------
def test_deeply_nested_filter_json_is_a_filter_error() -> None:
    deep = '{"and": [' * 5000 + '{"year": 2020}' + "]}" * 5000
    with pytest.raises(FilterError, match="limit"):  # before: RecursionError
        parse_filter_json(deep)
    brackets = "[" * 200_000 + "]" * 200_000
    with pytest.raises(FilterError, match="100,000 characters"):
        parse_filter_json(brackets)
    with pytest.raises(FilterError, match="limit"):
        parse_filter_json("[" * 50_000)
    nested: dict[str, object] = {"year": 2020}
    for _ in range(5000):
        nested = {"or": [nested]}
    with pytest.raises(FilterError, match=str(MAX_FILTER_DEPTH)):
        from_obj(nested)
    wide = {"or": [{"year": i} for i in range(5000)]}
    with pytest.raises(FilterError, match="at most"):
        from_obj(wide)
    # brackets inside strings do not count, and an ordinary nested filter still parses
    ok = parse_filter_json('{"and": [{"title": "[[[[{{{{"}, {"or": [{"year": 2020}, {"year": {"gte": 2022}}]}]}')
    assert isinstance(ok, And)


def test_python_filters_are_checked_too(coll: Collection) -> None:
    flt: object = Condition("year", Op.EQ, 2020)
    for _ in range(MAX_FILTER_DEPTH + 5):
        flt = And((flt,))  # type: ignore[arg-type]
    with pytest.raises(FilterError, match="levels"):
        coll.retrieve("topic", filters=flt)  # type: ignore[arg-type]


def test_filter_clause_parsing_is_bounded() -> None:
    started = time.perf_counter()
    with pytest.raises(FilterError):
        parse_filter(["a=x" + " " * 50_000 + "\ny"])  # before: quadratic backtracking
    clause = "a=" + "x" + " " * 40_000 + "y"
    assert parse_filter([clause]) == Condition("a", Op.EQ, "x" + " " * 40_000 + "y")
    assert time.perf_counter() - started < 2.0
    with pytest.raises(FilterError, match="characters"):
        parse_filter(["a=" + "x" * 200_000])
    with pytest.raises(FilterError, match="clauses"):
        parse_filter(["a=1"] * 5000)


def test_a_filter_error_is_a_waypost_error() -> None:
    assert issubclass(FilterError, WaypostError) and issubclass(InvalidInputError, WaypostError)


def test_embedder_reports_its_window(minilm: Embedder) -> None:
    from waypost.ingest.chunker import token_window

    window = token_window(minilm)
    assert window is not None and window.max_input_tokens == 256
    assert window.count_input_tokens(["hello world", ""]) == [4, 2]  # [CLS] hello world [SEP]
    assert json.dumps(window.count_input_tokens([])) == "[]"


def test_a_utf16_file_is_named_as_such_not_as_binary(tmp_path: Path) -> None:
    for encoding in ("utf-16", "utf-16-be", "utf-16-le", "utf-32", "utf-32-be", "utf-32-le"):
        path = tmp_path / f"{encoding}.txt"
        path.write_bytes("Tides and the moon.\n".encode(encoding))  # -be and -le: no byte-order mark
        with pytest.raises(LoaderError, match="UTF-16 or UTF-32 text; save it as UTF-8"):
            list(load_path(path, tmp_path))


def test_a_binary_file_is_still_named_binary(tmp_path: Path) -> None:
    path = tmp_path / "blob.txt"
    path.write_bytes(bytes(range(256)) * 8)
    with pytest.raises(LoaderError, match="looks binary"):
        list(load_path(path, tmp_path))


def test_a_file_name_that_is_not_utf8_loads_with_a_clean_id(tmp_path: Path) -> None:
    import os

    path = tmp_path / os.fsdecode(b"notes-\xff.txt")  # the \xff byte becomes the lone surrogate \udcff
    path.write_text("Some notes about tides.", encoding="utf-8")
    docs = [d for d in load_path(path, tmp_path) if isinstance(d, Document)]
    assert [d.id for d in docs] == ["notes-\ufffd.txt"]
    assert docs[0].title == "notes-\ufffd" and "\ufffd" in docs[0].source
    json.dumps(docs[0].__dict__, ensure_ascii=False).encode("utf-8")  # storable as UTF-8


def test_numpy_non_finite_metadata_refuses_that_document_only(engine: Engine) -> None:
    import numpy as np

    c = engine.collection("numpy", create=True)
    report = c.add(
        [
            Document("n1", "Not a number here.", metadata={"x": np.float64("nan")}),
            Document("n2", "Infinite here.", metadata={"x": np.float32("-inf")}),
            Document("ok", "A finite value.", metadata={"x": np.float64(1.5), "n": np.int64(3), "b": np.True_}),
        ]
    )
    assert _ids(c) == {"ok"}
    stored = c.get("ok").metadata  # type: ignore[union-attr]
    assert stored == {"x": 1.5, "n": 3, "b": True} and type(stored["b"]) is bool
    messages = " ".join(f"{f.source} {f.error}" for f in report.failures)
    assert "'n1'" in messages and "NaN" in messages and "'n2'" in messages and "-Infinity" in messages


def test_a_stored_collection_with_an_older_looser_name_stays_reachable(engine: Engine) -> None:
    engine.store.create_collection("notes:2024", "all-MiniLM-L6-v2", 384)  # as stores made before the rule allow
    assert engine.collection("notes:2024").name == "notes:2024"
    engine.drop("notes:2024")
    with pytest.raises(InvalidInputError):
        engine.collection("notes:2025", create=True)  # a new name follows the strict rule
    for path_like in ("../x", "a/b", ".hidden"):
        with pytest.raises(InvalidInputError):
            engine.collection(path_like)


def test_filter_clauses_refuse_a_bare_string() -> None:
    with pytest.raises(FilterError, match="single string"):
        parse_filter("x>=5")  # type: ignore[arg-type]


def test_a_csv_row_with_missing_cells_names_its_real_count(tmp_path: Path) -> None:
    path = tmp_path / "b.csv"
    path.write_text('id,text,year\n1,"unterminated,2020\n2,fine,2021\n', encoding="utf-8")
    failures = [item for item in load_path(path, tmp_path) if isinstance(item, LoadFailure)]
    assert failures and "row has 2 cells, the header has 3" in failures[0].error


def test_an_id_given_twice_in_one_add_keeps_the_first_and_says_so(engine: Engine, tmp_path: Path) -> None:
    """Two folders with a file of one name, a JSONL line repeated: never a silent replacement."""
    for folder, text in (("c2", "Quantum entanglement links particles."), ("c3", "The okapi is a forest giraffe.")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "readme.md").write_text(f"# {folder}\n\n{text}\n")
    (tmp_path / "dups.jsonl").write_text('{"id": "x", "text": "herons"}\n{"id": "x", "text": "storks"}\n')
    coll = engine.collection("twice", create=True)
    report = coll.add_paths([tmp_path / "c2", tmp_path / "c3", tmp_path / "dups.jsonl"])
    assert report.added == 2 and len(report.failures) == 2
    assert report.failures[0].source.endswith("c3/readme.md") and "c2/readme.md" in report.failures[0].error
    assert "folder given" in report.failures[0].error
    assert report.failures[1].source.endswith("dups.jsonl:2") and "folder" not in report.failures[1].error
    assert "okapi" not in coll.get("readme.md").text and coll.get("x").text == "herons"
    again = coll.add([Document("y", "one"), Document("y", "two")])  # the Python API too
    assert again.added == 1 and "'y' came earlier" in again.failures[0].error
    assert "folder" not in again.failures[0].error
    empty_first = coll.add([Document("z", "  "), Document("z", "real text")])  # an empty copy takes no id
    assert empty_first.added == 1 and coll.get("z").text == "real text"
    assert "neither text nor title" in empty_first.failures[0].error
