"""A few of benchmarks/bench_crash.py's kill -9 trials: real worker processes (the real model, a real store) are
killed at random points of ingest, delete, index merges and saves, tree and graph updates; every reopened store
must hold each acknowledged commit, indexes equal to a rebuild, serve nothing deleted, and finish the work."""

from __future__ import annotations

import importlib.util
import json
import random
import sys
from pathlib import Path
from types import ModuleType

import pytest

from waypost.base import Embedder

ROOT = Path(__file__).resolve().parents[1]


def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_crash", ROOT / "benchmarks" / "bench_crash.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_crash"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


PEOPLE = ["Marie Curie", "Niels Bohr", "Ada Lovelace", "Alan Turing", "Grace Hopper", "Lise Meitner", "Otto Hahn",
          "Rosalind Franklin", "Albert Einstein", "Emmy Noether", "Enrico Fermi", "Dorothy Hodgkin"]  # fmt: skip
PLACES = ["Paris", "Copenhagen", "London", "Manchester", "Berlin", "Stockholm", "Cambridge", "Princeton", "Rome"]
TOPICS = ["radioactivity", "quantum mechanics", "computing machines", "cipher breaking", "compilers", "fission",
          "crystallography", "relativity", "abstract algebra", "neutron physics"]  # fmt: skip
SENTENCES = [
    "{p} studied {t} at the university in {c}.",
    "{p} corresponded with {q} about {t} for many years.",
    "In {y}, {p} moved to {c} to lead a laboratory for {t}.",
    "The academy in {c} honoured {p} for the work on {t}.",
    "{q} visited {p} in {c} and they argued about {t}.",
]


def sample_corpus(folder: Path, documents: int = 30) -> Path:
    """Short biographies made from a few templates (names, places, years: the graph finds entities), in the
    BEIR layout the bench reads, so the test needs none of the shared evaluation sets."""
    rng = random.Random(0)
    rows = []
    for i in range(documents):
        person = PEOPLE[i % len(PEOPLE)]
        text = " ".join(
            rng.choice(SENTENCES).format(
                p=person, q=rng.choice(PEOPLE), c=rng.choice(PLACES), t=rng.choice(TOPICS), y=rng.randint(1890, 1960)
            )
            for _ in range(rng.randint(5, 12))
        )
        rows.append({"_id": str(i), "title": f"{person} ({i})", "text": text})
    (folder / "samples").mkdir(parents=True)
    (folder / "samples" / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return folder


@pytest.mark.slow  # real worker processes, killed -9 (the marker is registered on the fasttests branch)
def test_kill_9_trials_leave_whole_consistent_stores(tmp_path: Path, minilm: Embedder) -> None:
    data = sample_corpus(tmp_path / "data")
    # no tree: its first build compiles UMAP for a minute (bench_crash.py covers tree updates)
    args = ["--trials", "5", "--seed", "7", "--json", "--data", str(data), "--sets", "samples"]
    args += ["--ops", "ingest,delete,merge,graph"]
    results = bench().main([*args, "--keep", str(tmp_path / "failed")], embedder=minilm)
    assert results is not None
    assert results["kills"] >= 5
    assert results["inconsistent_stores"] == 0, results["failures"]
    assert results["lost_commits"] == 0, results["failures"]
