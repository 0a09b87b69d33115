"""All derived indexes of one collection at one generation, cached on disk and in memory."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from waypost.base import ChunkSnapshot, DocumentStore
from waypost.index.bm25 import BM25Index
from waypost.index.dense import DenseIndex
from waypost.index.metadata import MetadataIndex
from waypost.index.references import ReferenceIndex

if TYPE_CHECKING:
    from waypost.filters.extract import FilterExtractor


@dataclass
class IndexSet:
    collection: str
    generation: int
    version: str
    row_ids: npt.NDArray[np.int64]
    document_ids: list[str]
    dense: DenseIndex
    bm25: BM25Index
    metadata: MetadataIndex
    references: ReferenceIndex
    build_seconds: float
    _extractor: FilterExtractor | None = field(default=None, repr=False)

    def extractor(self) -> FilterExtractor:
        """Filter extraction over this generation's metadata values, built on first use."""
        if self._extractor is None:
            from waypost.filters.extract import FilterExtractor

            self._extractor = FilterExtractor(self.metadata)
        return self._extractor

    def __len__(self) -> int:
        return int(self.row_ids.shape[0])

    @classmethod
    def build(
        cls, collection: str, snap: ChunkSnapshot, approximate: bool = False, bm25_dir: Path | None = None
    ) -> IndexSet:
        t0 = time.perf_counter()
        bm25 = _load_bm25(bm25_dir, len(snap.row_ids)) if bm25_dir is not None else None
        if bm25 is None:
            bm25 = BM25Index.build(snap.index_texts, snap.document_ids, snap.document_texts)
            if bm25_dir is not None and snap.index_texts:
                _save_atomically(bm25, bm25_dir)
        return cls(
            collection=collection,
            generation=snap.generation,
            version=snap.version,
            row_ids=snap.row_ids,
            document_ids=snap.document_ids,
            dense=DenseIndex(snap.embeddings, approximate=approximate),
            bm25=bm25,
            metadata=MetadataIndex.build(snap.metadata),
            references=ReferenceIndex.build(snap.chunk_texts, snap.document_ids, snap.titles),
            build_seconds=time.perf_counter() - t0,
        )


def _load_bm25(path: Path, size: int) -> BM25Index | None:
    """A cached BM25 index, or ``None`` (rebuild) if it is missing, unreadable or of another size."""
    if not (path / "ready").exists():
        return None
    try:
        bm25 = BM25Index.load(path)
    except (OSError, ValueError, KeyError, json.JSONDecodeError):
        return None
    return bm25 if len(bm25) == size else None


def _save_atomically(bm25: BM25Index, target: Path) -> None:
    """Write beside the target, then rename into place; a cache that cannot be written is just skipped."""
    tmp = target.with_name(f"{target.name}.tmp-{uuid.uuid4().hex[:8]}")
    try:
        tmp.mkdir(parents=True)
        bm25.save(tmp)
        (tmp / "ready").write_text(json.dumps({"saved_at": time.time()}))
        os.rename(tmp, target)  # fails if another process got there first, which is fine
    except OSError:
        pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _remove_stale(base: Path, keep: Path, tmp_grace_s: float = 3600.0) -> None:
    """Drop cached indexes of other versions; temp dirs only when old (another process may be writing)."""
    if not base.exists():
        return
    for old in base.glob("bm25-*"):
        if old == keep:
            continue
        try:
            if ".tmp-" in old.name and time.time() - old.stat().st_mtime < tmp_grace_s:
                continue
        except OSError:
            continue
        shutil.rmtree(old, ignore_errors=True)


class IndexCache:
    """Hands out the current ``IndexSet`` of a collection; rebuilds when the store's generation moved."""

    def __init__(self, store: DocumentStore, cache_dir: Path | None, approximate: bool = False) -> None:
        self.store = store
        self.cache_dir = cache_dir
        self.approximate = approximate
        self._sets: dict[str, IndexSet] = {}
        self._lock = threading.Lock()

    def get(self, collection: str) -> IndexSet:
        current = self._sets.get(collection)
        if current is not None and current.version == self.store.version(collection):
            return current
        with self._lock:
            current = self._sets.get(collection)
            if current is not None and current.version == self.store.version(collection):
                return current
            snap = self.store.snapshot(collection)
            bm25_dir = None
            if self.cache_dir is not None:
                base = self.cache_dir / collection
                bm25_dir = base / f"bm25-v3-{snap.version}"
                _remove_stale(base, keep=bm25_dir)
            built = IndexSet.build(collection, snap, self.approximate, bm25_dir)
            self._sets[collection] = built
            return built

    def forget(self, collection: str) -> None:
        self._sets.pop(collection, None)
        if self.cache_dir is not None:
            shutil.rmtree(self.cache_dir / collection, ignore_errors=True)
