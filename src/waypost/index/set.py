"""All derived indexes of one collection at one generation, cached on disk and in memory."""

from __future__ import annotations

import json
import shutil
import threading
import time
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
        bm25: BM25Index | None = None
        if bm25_dir is not None and (bm25_dir / "ready").exists():
            bm25 = BM25Index.load(bm25_dir)
        if bm25 is None:
            bm25 = BM25Index.build(snap.index_texts, snap.document_ids, snap.document_texts)
            if bm25_dir is not None and snap.index_texts:
                _save_atomically(bm25, bm25_dir)
        return cls(
            collection=collection,
            generation=snap.generation,
            row_ids=snap.row_ids,
            document_ids=snap.document_ids,
            dense=DenseIndex(snap.embeddings, approximate=approximate),
            bm25=bm25,
            metadata=MetadataIndex.build(snap.metadata),
            references=ReferenceIndex.build(snap.chunk_texts, snap.document_ids, snap.titles),
            build_seconds=time.perf_counter() - t0,
        )


def _save_atomically(bm25: BM25Index, target: Path) -> None:
    tmp = target.with_name(target.name + f".tmp{threading.get_ident()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    bm25.save(tmp)
    (tmp / "ready").write_text(json.dumps({"saved_at": time.time()}))
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)


class IndexCache:
    """Hands out the current ``IndexSet`` of a collection; rebuilds when the store's generation moved."""

    def __init__(self, store: DocumentStore, cache_dir: Path | None, approximate: bool = False) -> None:
        self.store = store
        self.cache_dir = cache_dir
        self.approximate = approximate
        self._sets: dict[str, IndexSet] = {}
        self._lock = threading.Lock()

    def get(self, collection: str) -> IndexSet:
        generation = self.store.generation(collection)
        current = self._sets.get(collection)
        if current is not None and current.generation == generation:
            return current
        with self._lock:
            current = self._sets.get(collection)
            if current is not None and current.generation == self.store.generation(collection):
                return current
            snap = self.store.snapshot(collection)
            bm25_dir = None
            if self.cache_dir is not None:
                base = self.cache_dir / collection
                bm25_dir = base / f"bm25-v2-g{snap.generation}"
                if base.exists():
                    for old in base.glob("bm25-*"):
                        if old != bm25_dir:
                            shutil.rmtree(old, ignore_errors=True)
            built = IndexSet.build(collection, snap, self.approximate, bm25_dir)
            self._sets[collection] = built
            return built

    def forget(self, collection: str) -> None:
        self._sets.pop(collection, None)
        if self.cache_dir is not None:
            shutil.rmtree(self.cache_dir / collection, ignore_errors=True)
