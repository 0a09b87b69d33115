"""The replicated collection of ``bench_scale.py``: scifact's real chunks and MiniLM vectors, copied under
new document ids until it holds the wanted number of chunks, each copy's vectors moved by small Gaussian
noise (renormalised) so copies are near neighbours, not duplicates; copy 0 keeps the real vectors.

The seed (scifact chunked and embedded once, through the ingest pipeline and an embedding cache) is
kept in ~/.cache/waypost/bench/scale-seed as ``items.jsonl`` plus ``vectors.npy``."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from waypost.base import IngestItem
from waypost.engine import Engine, EngineConfig
from waypost.evaluation.beir import load_beir
from waypost.evaluation.runner import default_cache_dir
from waypost.types import Chunk, Document

BUCKETS = 100  # metadata bucket: (copy * 37 + document index) % 100, so bucket filters keep a known share


@dataclass
class Seed:
    documents: list[Document]
    chunks: list[list[Chunk]]
    fingerprints: list[str]
    vectors: npt.NDArray[np.float32]  # every chunk's, in document then chunk order
    starts: list[int]  # each document's first row in ``vectors``

    @property
    def rows(self) -> int:
        return int(self.vectors.shape[0])


class _Recorder:
    """A store that keeps what the ingest pipeline would write (and delegates the reads it makes)."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.items: list[IngestItem] = []

    def write(self, collection: str, items: Sequence[IngestItem]) -> int:
        self.items.extend(items)
        return len(items)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def seed(data: Path, embed_cache: Path) -> Seed:
    """scifact chunked and embedded by the ingest pipeline (MiniLM, chunk_tokens 200), kept on disk."""
    root = default_cache_dir() / "bench" / "scale-seed"
    if not (root / "vectors.npy").exists():
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            engine = Engine(Path(tmp) / "seed", EngineConfig(embed_cache=embed_cache))
            coll = engine.collection("seed", create=True)
            ingestor = coll._ingestor()
            recorder = _Recorder(engine.store)
            ingestor.store = recorder
            ds = load_beir(data / "scifact")
            ingestor.ingest("seed", ds.corpus(), show_progress=True, total=ds.corpus_size())
            engine.close()
        with (root / "items.jsonl").open("w", encoding="utf-8") as fh:
            for item in recorder.items:
                row = {"document": asdict(item.document), "chunks": [asdict(c) for c in item.chunks]}
                fh.write(json.dumps({**row, "fingerprint": item.fingerprint}, ensure_ascii=False) + "\n")
        vectors = np.concatenate([np.asarray(i.embeddings, dtype=np.float32) for i in recorder.items])
        np.save(root / "vectors.npy", vectors, allow_pickle=False)
    documents: list[Document] = []
    chunks: list[list[Chunk]] = []
    fingerprints: list[str] = []
    starts: list[int] = []
    at = 0
    with (root / "items.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            documents.append(Document(**row["document"]))
            chunks.append([Chunk(**{**c, "section": tuple(c["section"])}) for c in row["chunks"]])
            fingerprints.append(row["fingerprint"])
            starts.append(at)
            at += len(chunks[-1])
    vectors = np.load(root / "vectors.npy", allow_pickle=False)
    assert vectors.shape[0] == at, "seed vectors and chunks disagree"
    return Seed(documents, chunks, fingerprints, vectors, starts)


def copy_vectors(seed: Seed, copy: int, noise: float) -> npt.NDArray[np.float32]:
    """Copy ``copy``'s vectors: the seed's moved by N(0, noise^2) per dimension, renormalised (copy 0: as is)."""
    if copy == 0 or noise <= 0:
        return seed.vectors
    rng = np.random.default_rng(1_000_003 * copy)
    moved = seed.vectors + rng.normal(0.0, noise, size=seed.vectors.shape).astype(np.float32)
    moved /= np.linalg.norm(moved, axis=1, keepdims=True)
    return moved.astype(np.float32)


def replicated_vectors(seed: Seed, rows: int, noise: float) -> npt.NDArray[np.float32]:
    """The first ``rows`` vectors of the replicated collection, in write order (for index-only experiments)."""
    parts: list[npt.NDArray[np.float32]] = []
    have, copy = 0, 0
    while have < rows:
        part = copy_vectors(seed, copy, noise)[: rows - have]
        parts.append(part)
        have += len(part)
        copy += 1
    return np.concatenate(parts)


def replicated_items(seed: Seed, rows: int, noise: float, batch: int = 500) -> Iterator[list[IngestItem]]:
    """IngestItems of whole documents, in batches, until at least ``rows`` chunks."""
    have, copy = 0, 0
    while have < rows:
        vectors = copy_vectors(seed, copy, noise)
        out: list[IngestItem] = []
        for n, (doc, chunks, fingerprint, start) in enumerate(
            zip(seed.documents, seed.chunks, seed.fingerprints, seed.starts, strict=True)
        ):
            if have >= rows:
                break
            doc_id = f"c{copy}:{doc.id}"
            document = replace(doc, id=doc_id, metadata={**doc.metadata, "bucket": (copy * 37 + n) % BUCKETS})
            copied = [replace(c, document_id=doc_id) for c in chunks]
            out.append(IngestItem(document, copied, vectors[start : start + len(chunks)], fingerprint))
            have += len(chunks)
            if len(out) >= batch:
                yield out
                out = []
        if out:
            yield out
        copy += 1
