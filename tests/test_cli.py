"""The ``waypost`` command, run as a user would: in-process through ``main`` (the ``cli`` fixture), and once as
a real ``python -m waypost.cli`` process."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from tests.cli_runner import Cli

SAMPLES = Path(__file__).resolve().parents[1] / "src" / "waypost" / "samples"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, cli: Cli) -> Path:
    path = tmp_path_factory.mktemp("cli") / "store"
    out = cli("add", str(SAMPLES), "--store", str(path), "--json")
    assert out.exit_code == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["added"] == len(list(SAMPLES.iterdir())) and report["failed"] == []
    return path


def test_query_json_and_explain(store: Path, cli: Cli) -> None:
    out = cli("query", "what happens if ingest is killed", "--store", str(store), "--json", "-k", "3")
    data = json.loads(out.stdout)
    assert data["hits"][0]["document_id"] == "architecture.md"
    assert data["explain"]["strategy"] == "hybrid" and "embed_query" in data["explain"]["timings_ms"]
    table = cli("query", "BM25 stemming", "--store", str(store), "--strategy", "bm25", "--explain")
    assert table.exit_code == 0 and "retrieval.md" in table.stdout and "timings" in table.stdout


def test_ls_stats_rm(store: Path, cli: Cli) -> None:
    listing = json.loads(cli("ls", "--store", str(store), "--json").stdout)
    assert listing[0]["name"] == "default" and listing[0]["documents"] == 4
    docs = json.loads(cli("ls", "--store", str(store), "-c", "default", "--json").stdout)
    assert {d["id"] for d in docs} == {"architecture.md", "retrieval.md", "evaluation.md", "faq.html"}
    stats = json.loads(cli("stats", "--store", str(store), "--json").stdout)
    assert stats["embed_model"] == "all-MiniLM-L6-v2" and stats["embed_dim"] == 384
    assert stats["index_generation"] == stats["generation"] and stats["tombstones"] == 0
    assert json.loads(cli("rm", "faq.html", "--store", str(store), "--json").stdout) == {"removed": 1}
    after = json.loads(cli("stats", "--store", str(store), "--json").stdout)
    assert after["index_loaded_from"].startswith("state-")  # the last command saved its indexes at exit
    assert after["index_generation"] == after["generation"] == stats["generation"] + 1
    assert after["tombstones"] > 0 and after["segments"][0]["tombstones"] == after["tombstones"]
    assert after["log_consumers"]["flat-indexes"] == stats["generation"]
    again = cli("add", str(SAMPLES), "--store", str(store), "--json")
    assert json.loads(again.stdout)["added"] == 1 and json.loads(again.stdout)["unchanged"] == 3


def test_errors_are_readable(store: Path, tmp_path: Path, cli: Cli) -> None:
    bad = cli("query", "x", "--store", str(store), "--strategy", "nope")
    assert bad.exit_code == 2 and "unknown strategy" in bad.stderr
    missing = cli("query", "x", "--store", str(store), "-c", "ghost")
    assert missing.exit_code == 2 and "no collection named 'ghost'" in missing.stderr
    flt = cli("query", "x", "--store", str(store), "--where", "colour=red")
    assert flt.exit_code == 2 and "unknown metadata field" in flt.stderr
    model = cli("query", "x", "--store", str(store), "--model", "other-model")
    assert model.exit_code == 2 and "built with embedding model" in model.stderr
    nowhere = tmp_path / "typo"
    for args in (("query", "x"), ("ls",), ("stats",), ("rm", "a"), ("ask", "x")):
        out = cli(*args, "--store", str(nowhere))
        assert out.exit_code == 2 and "no waypost store at" in out.stderr, args
    assert not nowhere.exists()
    out = cli("add", str(tmp_path / "missing-folder"), "--store", str(nowhere))
    assert out.exit_code == 2 and "no such file or folder" in out.stderr and not nowhere.exists()
    bad_llm = cli("ask", "x", "--store", str(store), "--llm", "openai:m@localhost:9/v1")
    assert bad_llm.exit_code == 2 and "must start with http" in bad_llm.stderr


def test_ask_streams_then_shows_renumbered_citations(store: Path, cli: Cli) -> None:
    from tests.fault_server import fault_server

    with fault_server() as srv:
        srv.reply = "Each batch is one transaction [3] and WAL lets readers go on [1] [7]."
        out = cli(
            "ask",
            "How does waypost keep the store consistent?",
            "--store",
            str(store),
            "--llm",
            f"openai:m@{srv.url}",
            "--explain",
        )
    assert out.exit_code == 0, out.stderr
    streamed, _, rest = out.stdout.partition("answer with its final citation numbers:")
    assert "[3]" in streamed  # tokens as the model wrote them
    assert "transaction [1] and WAL lets readers go on [2]." in " ".join(rest.split())
    assert "llm calls 1" in out.stdout


@pytest.mark.slow
def test_the_real_entry_point(store: Path) -> None:
    """``python -m waypost.cli`` in its own process: imports, main and the model load as shipped."""
    query = ["query", "what happens if ingest is killed", "--store", str(store), "--json", "-k", "3"]
    out = subprocess.run([sys.executable, "-m", "waypost.cli", *query], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["hits"][0]["document_id"] == "architecture.md"


def test_importing_the_cli_sets_no_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENBLAS_NUM_THREADS", "TOKENIZERS_PARALLELISM"):
        monkeypatch.delenv(name, raising=False)
    before = dict(os.environ)
    spec = importlib.util.find_spec("waypost.cli")
    assert spec is not None and spec.origin is not None
    fresh = importlib.util.spec_from_file_location("waypost_cli_import_check", spec.origin)
    assert fresh is not None and fresh.loader is not None
    fresh.loader.exec_module(importlib.util.module_from_spec(fresh))  # the module's top level, run again
    assert dict(os.environ) == before


def test_main_sets_the_thread_settings(store: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOKENIZERS_PARALLELISM", raising=False)
    with threadpool_limits(limits=2, user_api="blas"):
        assert cli("ls", "--store", str(store)).exit_code == 0  # no model load: main alone limits the threads
        blas = [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]
    assert blas and set(blas) == {1}
    assert os.environ["TOKENIZERS_PARALLELISM"] == "false"
