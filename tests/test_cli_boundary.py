"""The CLI never prints a traceback for bad input: one line, exit status 2 (in-process, typer's runner)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from waypost.cli import app
from waypost.cli import query as cli  # the module whose _existing the query command calls
from waypost.store.sqlite import SQLiteStore


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def _one_error_line(output: str) -> str:
    assert "Traceback" not in output, output
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1, output
    assert lines[0].startswith("error: "), output
    return lines[0]


def test_a_missing_store_is_one_line(tmp_path: Path) -> None:
    code, out = _invoke("query", "anything", "--store", str(tmp_path / "nowhere"))
    assert code == 2
    assert "no waypost store" in _one_error_line(out)


def test_a_deeply_nested_where_json_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "store").mkdir()
    store = SQLiteStore(tmp_path / "store" / "store.sqlite")
    store.create_collection("default", "all-MiniLM-L6-v2", 384)  # the filter is read before any model loads
    store.close()
    deep = '{"and": [' * 3000 + '{"year": 1}' + "]}" * 3000
    code, out = _invoke("query", "q", "--store", str(tmp_path / "store"), "--where-json", deep)
    assert code == 2
    assert "limit" in _one_error_line(out)


def test_an_unreadable_file_is_one_line(tmp_path: Path) -> None:
    code, out = _invoke("rerank", "train", str(tmp_path / "no-dataset"), "--name", "boundary-test-profile")
    assert code == 2, out
    _one_error_line(out)


def test_markup_in_a_message_is_printed_as_is(tmp_path: Path) -> None:
    code, out = _invoke("query", "q", "--store", str(tmp_path / "[bold]x[/bold]"))
    assert code == 2
    assert "[bold]x[/bold]" in _one_error_line(out)


def test_an_unexpected_error_is_reported_without_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(name: str) -> None:  # a bug cannot be produced on purpose: this stands in for one
        raise KeyError("surprise")

    monkeypatch.setattr(cli, "_existing", broken)
    code, out = _invoke("query", "q")
    assert code == 1
    line = _one_error_line(out)
    assert "unexpected KeyError" in line and "WAYPOST_TRACEBACK=1" in line and "test_cli_boundary.py" in line


def test_add_survives_a_lone_surrogate_and_nan(tmp_path: Path) -> None:
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text(
        '{"_id": "s", "text": "Lone \\ud800 surrogate about comets."}\n'
        '{"_id": "n", "text": "Not a number.", "metadata": {"x": NaN}}\n'
        '{"_id": "g", "text": "A good line about asteroids."}\n',
        encoding="utf-8",
    )
    code, out = _invoke("add", str(corpus), "--store", str(tmp_path / "store"))
    assert code == 0, out  # before: a UnicodeEncodeError traceback and nothing ingested
    assert "Traceback" not in out
    assert "added 2" in out
    assert "skipped" in out and "'n'" in out and "NaN" in out
