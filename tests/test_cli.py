"""The installed ``waypost`` command, run as a user would."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

SAMPLES = Path(__file__).resolve().parents[1] / "src" / "waypost" / "samples"


def waypost(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "waypost.cli", *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "store"
    out = waypost("add", str(SAMPLES), "--store", str(path), "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["added"] == len(list(SAMPLES.iterdir())) and report["failed"] == []
    return path


def test_query_json_and_explain(store: Path) -> None:
    out = waypost("query", "what happens if ingest is killed", "--store", str(store), "--json", "-k", "3")
    data = json.loads(out.stdout)
    assert data["hits"][0]["document_id"] == "architecture.md"
    assert data["explain"]["strategy"] == "hybrid" and "embed_query" in data["explain"]["timings_ms"]
    table = waypost("query", "BM25 stemming", "--store", str(store), "--strategy", "bm25", "--explain")
    assert table.returncode == 0 and "retrieval.md" in table.stdout and "timings" in table.stdout


def test_ls_stats_rm(store: Path) -> None:
    listing = json.loads(waypost("ls", "--store", str(store), "--json").stdout)
    assert listing[0]["name"] == "default" and listing[0]["documents"] == 4
    docs = json.loads(waypost("ls", "--store", str(store), "-c", "default", "--json").stdout)
    assert {d["id"] for d in docs} == {"architecture.md", "retrieval.md", "evaluation.md", "faq.html"}
    stats = json.loads(waypost("stats", "--store", str(store), "--json").stdout)
    assert stats["embed_model"] == "all-MiniLM-L6-v2" and stats["embed_dim"] == 384
    assert stats["index_generation"] == stats["generation"] and stats["tombstones"] == 0
    assert json.loads(waypost("rm", "faq.html", "--store", str(store), "--json").stdout) == {"removed": 1}
    after = json.loads(waypost("stats", "--store", str(store), "--json").stdout)
    assert after["index_loaded_from"].startswith("state-")  # the last command saved its indexes at exit
    assert after["index_generation"] == after["generation"] == stats["generation"] + 1
    assert after["tombstones"] > 0 and after["segments"][0]["tombstones"] == after["tombstones"]
    assert after["log_consumers"]["flat-indexes"] == stats["generation"]
    again = waypost("add", str(SAMPLES), "--store", str(store), "--json")
    assert json.loads(again.stdout)["added"] == 1 and json.loads(again.stdout)["unchanged"] == 3


def test_errors_are_readable(store: Path, tmp_path: Path) -> None:
    bad = waypost("query", "x", "--store", str(store), "--strategy", "nope")
    assert bad.returncode == 2 and "unknown strategy" in bad.stderr
    missing = waypost("query", "x", "--store", str(store), "-c", "ghost")
    assert missing.returncode == 2 and "no collection named 'ghost'" in missing.stderr
    flt = waypost("query", "x", "--store", str(store), "--where", "colour=red")
    assert flt.returncode == 2 and "unknown metadata field" in flt.stderr
    model = waypost("query", "x", "--store", str(store), "--model", "other-model")
    assert model.returncode == 2 and "built with embedding model" in model.stderr
    nowhere = tmp_path / "typo"
    for args in (("query", "x"), ("ls",), ("stats",), ("rm", "a"), ("ask", "x")):
        out = waypost(*args, "--store", str(nowhere))
        assert out.returncode == 2 and "no waypost store at" in out.stderr, args
    assert not nowhere.exists()
    out = waypost("add", str(tmp_path / "missing-folder"), "--store", str(nowhere))
    assert out.returncode == 2 and "no such file or folder" in out.stderr and not nowhere.exists()
    bad_llm = waypost("ask", "x", "--store", str(store), "--llm", "openai:m@localhost:9/v1")
    assert bad_llm.returncode == 2 and "must start with http" in bad_llm.stderr


def test_ask_streams_then_shows_renumbered_citations(store: Path) -> None:
    from tests.fault_server import fault_server

    with fault_server() as srv:
        srv.reply = "Each batch is one transaction [3] and WAL lets readers go on [1] [7]."
        out = waypost(
            "ask",
            "How does waypost keep the store consistent?",
            "--store",
            str(store),
            "--llm",
            f"openai:m@{srv.url}",
            "--explain",
        )
    assert out.returncode == 0, out.stderr
    streamed, _, rest = out.stdout.partition("answer with its final citation numbers:")
    assert "[3]" in streamed  # tokens as the model wrote them
    assert "transaction [1] and WAL lets readers go on [2]." in " ".join(rest.split())
    assert "llm calls 1" in out.stdout
