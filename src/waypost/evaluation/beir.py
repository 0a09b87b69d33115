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
        for row in json_rows(self.corpus_path, ("_id", "text")):
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
    for at, row in tsv_rows(qrels_path, ("query-id", "corpus-id", "score")):
        qrels.setdefault(row[0], {})[row[1]] = whole_number(qrels_path, at, row[2], "score")
    queries: list[Query] = []
    for q in json_rows(root / "queries.jsonl", ("_id", "text")):
        if str(q["_id"]) in qrels:
            queries.append(Query(str(q["_id"]), q["text"], q.get("metadata") or {}))
    spans: dict[str, list[Span]] = {}
    spans_path = root / "qrels" / f"{split}-spans.tsv"
    if spans_path.exists():
        for at, row in tsv_rows(spans_path, ("query-id", "corpus-id", "start", "end")):
            start, end = (whole_number(spans_path, at, row[i], name) for i, name in ((2, "start"), (3, "end")))
            if end < start:
                raise WaypostError(f"{spans_path}, line {at}: span {row} ends before it starts")
            spans.setdefault(row[0], []).append((row[1], start, end))
    return BeirDataset(root, queries, qrels, spans)


def json_rows(path: Path, required: tuple[str, ...]) -> Iterator[dict[str, Any]]:
    """Each non-blank line of a JSONL file as an object holding ``required``; a ``WaypostError`` names the
    file and line of the first that is not."""
    with path.open(encoding="utf-8") as fh:
        for at, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise WaypostError(f"{path}, line {at}: not valid JSON ({exc.msg})") from None
            if not isinstance(row, dict):
                raise WaypostError(f"{path}, line {at}: a JSON object is expected, got {type(row).__name__}")
            missing = [key for key in required if key not in row]
            if missing:
                raise WaypostError(f"{path}, line {at}: the record has no {', '.join(map(repr, missing))}")
            yield row


def tsv_rows(path: Path, columns: tuple[str, ...]) -> Iterator[tuple[int, list[str]]]:
    """Each data row of a tab-separated file (a header row naming the first column is skipped) with its line
    number; a ``WaypostError`` names the file and line of a row without the expected columns."""
    with path.open(encoding="utf-8") as fh:
        for at, row in enumerate(csv.reader(fh, delimiter="\t"), start=1):
            if not row or not "".join(row).strip() or row[0] == columns[0]:
                continue
            if len(row) < len(columns):
                raise WaypostError(
                    f"{path}, line {at}: expected {len(columns)} tab-separated columns ({', '.join(columns)}), "
                    f"got {len(row)}: {row!r:.120}"
                )
            yield at, row


def whole_number(path: Path, at: int, value: str, name: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise WaypostError(f"{path}, line {at}: {name} must be a whole number, got {value!r:.40}") from None
