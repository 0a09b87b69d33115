import json
from pathlib import Path

import pytest

from waypost.errors import LoaderError
from waypost.ingest.loaders import LoadFailure, load_path
from waypost.ingest.pipeline import documents_from_paths


def test_markdown_title_and_text(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Title Here\n\nBody text.\n")
    [doc] = load_path(tmp_path / "a.md", tmp_path)
    assert (doc.id, doc.title, doc.metadata["format"]) == ("a.md", "Title Here", "md")


def test_html_headings_become_sections_and_scripts_vanish(tmp_path: Path) -> None:
    (tmp_path / "p.html").write_text(
        "<html><head><title>Page</title><script>var x=1;</script></head>"
        "<body><h1>Top</h1><p>First para.</p><h2>Sub</h2><p>Second para.</p></body></html>"
    )
    [doc] = load_path(tmp_path / "p.html", tmp_path)
    assert doc.title == "Page"
    assert "var x" not in doc.text
    assert "# Top" in doc.text and "## Sub" in doc.text and "Second para." in doc.text


def test_pdf_text_layer(tmp_path: Path) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    pdf.multi_cell(0, 10, "Waypost reads the text layer of PDF files.")
    pdf.output(str(tmp_path / "doc.pdf"))
    [doc] = load_path(tmp_path / "doc.pdf", tmp_path)
    assert "text layer of PDF" in doc.text
    assert doc.metadata["pages"] == 1


def test_jsonl_beir_rows_with_metadata(tmp_path: Path) -> None:
    rows = [
        {"_id": "s1", "title": "T", "text": "Hello.", "metadata": {"year": 2020}},
        {"id": "x", "text": "Hi.", "lang": "en"},
    ]
    (tmp_path / "c.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    docs = list(load_path(tmp_path / "c.jsonl", tmp_path))
    assert [(d.id, d.title, d.metadata) for d in docs] == [("s1", "T", {"year": 2020}), ("x", "", {"lang": "en"})]


def test_csv_metadata_columns_are_typed(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("id,title,text,year,country\n1,A,Some text.,2019,India\n")
    [doc] = load_path(tmp_path / "t.csv", tmp_path)
    assert doc.metadata == {"year": 2019, "country": "India"}


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("empty.txt", b"", "empty"),
        ("bin.txt", b"\x00\x01\x02binary", "binary"),
        ("latin.txt", "caf\xe9".encode("latin-1"), "UTF-8"),
        ("blank.md", b"   \n\n", "no text"),
        ("nohead.csv", b"", "empty"),
    ],
)
def test_bad_files_fail_clearly(tmp_path: Path, name: str, content: bytes, reason: str) -> None:
    (tmp_path / name).write_bytes(content)
    with pytest.raises(LoaderError, match=reason):
        list(load_path(tmp_path / name, tmp_path))


def test_huge_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("x" * 5000)
    with pytest.raises(LoaderError, match="over the"):
        list(load_path(tmp_path / "big.txt", tmp_path, max_bytes=1000))


def test_batch_goes_on_past_bad_files(tmp_path: Path) -> None:
    (tmp_path / "good.txt").write_text("Good text.")
    (tmp_path / "bad.txt").write_bytes(b"\xff\xfe\x00")
    (tmp_path / "also_good.md").write_text("# H\n\nMore.")
    (tmp_path / "skip.bin").write_bytes(b"ignored: unknown extension")
    failures: list[LoadFailure] = []
    docs = list(documents_from_paths([tmp_path], failures))
    assert sorted(d.id for d in docs) == ["also_good.md", "good.txt"]
    assert len(failures) == 1 and failures[0].source.endswith("bad.txt")


def test_missing_path_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(LoaderError, match="does not exist"):
        list(documents_from_paths([tmp_path / "nope"], []))


def test_bad_records_do_not_hide_the_rest_of_the_file(tmp_path: Path) -> None:
    (tmp_path / "c.jsonl").write_text(
        '{"_id": "x1", "text": "one"}\n{not json}\n{"_id": "x2", "title": "", "text": ""}\n[1]\n'
        '{"_id": "x3", "text": "three"}\n{"_id": "x4", "title": "Title only", "text": ""}\n'
    )
    (tmp_path / "t.csv").write_text("id,text,year\n1,hello,2015\n2,short row\n3,bye,nan\n")
    failures: list[LoadFailure] = []
    docs = list(documents_from_paths([tmp_path], failures))
    assert [d.id for d in docs] == ["x1", "x3", "x4", "1", "3"]
    assert docs[-1].metadata == {"year": "nan"}  # non-finite numbers stay text
    assert sorted(f.source.rsplit("/", 1)[-1] for f in failures) == ["c.jsonl:2", "c.jsonl:3", "c.jsonl:4", "t.csv:3"]
    assert "invalid JSON" in failures[0].error and "cells" in failures[-1].error
