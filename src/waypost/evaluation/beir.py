"""Read a BEIR-layout directory: corpus.jsonl, queries.jsonl, qrels/<split>.tsv."""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from waypost.errors import WaypostError
from waypost.types import Document


@dataclass(frozen=True)
class Query:
    id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


Span = tuple[str, int, int]  # document id, start, end: character offsets into the document's text


_FINGERPRINTS: dict[Path, str] = {}


@dataclass
class BeirDataset:
    root: Path
    queries: list[Query]
    qrels: dict[str, dict[str, int]]
    spans: dict[str, list[Span]] = field(default_factory=dict)  # qrels/<split>-spans.tsv, where a set has it

    @property
    def name(self) -> str:
        return self.root.name

    @property
    def corpus_path(self) -> Path:
        return self.root / "corpus.jsonl"

    def fingerprint(self) -> str:
        """The corpus file's content hash: a copy or a re-extracted file with new times keeps its eval store."""
        cached = _FINGERPRINTS.get(self.corpus_path)
        if cached is not None:
            return cached
        digest = hashlib.sha256()
        with self.corpus_path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        value = digest.hexdigest()[:16]
        _FINGERPRINTS[self.corpus_path] = value
        return value

    def corpus(self) -> Iterator[Document]:
        with self.corpus_path.open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    row = json.loads(line)
                    yield Document(
                        id=str(row["_id"]),
                        title=row.get("title", "") or "",
                        text=row["text"],
                        metadata=row.get("metadata") or {},
                        source=f"{self.name}:{row['_id']}",
                    )

    def corpus_size(self) -> int:
        with self.corpus_path.open(encoding="utf-8") as fh:
            return sum(1 for line in fh if line.strip())


def load_corpus(root: str | Path) -> BeirDataset:
    """A corpus-only set (no queries or qrels), for build and scale workloads."""
    root = Path(root)
    if not (root / "corpus.jsonl").exists():
        raise WaypostError(f"{root} holds no corpus.jsonl")
    return BeirDataset(root, [], {})


def load_beir(root: str | Path, split: str = "test") -> BeirDataset:
    root = Path(root)
    qrels_path = root / "qrels" / f"{split}.tsv"
    for needed in (root / "corpus.jsonl", root / "queries.jsonl", qrels_path):
        if not needed.exists():
            raise WaypostError(f"{root} is not a BEIR-layout dataset: {needed} is missing")
    qrels: dict[str, dict[str, int]] = {}
    with qrels_path.open(encoding="utf-8") as fh:
        for row in csv.reader(fh, delimiter="\t"):
            if not row or row[0] == "query-id":
                continue
            qrels.setdefault(row[0], {})[row[1]] = int(row[2])
    queries: list[Query] = []
    with (root / "queries.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                if str(row["_id"]) in qrels:
                    queries.append(Query(str(row["_id"]), row["text"], row.get("metadata") or {}))
    spans: dict[str, list[Span]] = {}
    spans_path = root / "qrels" / f"{split}-spans.tsv"
    if spans_path.exists():
        with spans_path.open(encoding="utf-8") as fh:
            for row in csv.reader(fh, delimiter="\t"):
                if not row or row[0] == "query-id":
                    continue
                start, end = int(row[2]), int(row[3])
                if end < start:
                    raise WaypostError(f"{spans_path}: span {row} ends before it starts")
                spans.setdefault(row[0], []).append((row[1], start, end))
    return BeirDataset(root, queries, qrels, spans)
