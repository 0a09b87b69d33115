"""An immutable index segment: the dense vectors, BM25 postings (chunks and whole documents), metadata
indexes and document titles of a set of chunk rows. Segments are built from rows, merged from other
segments (without re-analysing text), and saved as plain ``.npy``/JSON files loaded memory-mapped."""

from __future__ import annotations

import json
import os
import threading
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from waypost.base import ChunkSnapshot
from waypost.index.dense import DenseIndex, graph_files, load_graphs
from waypost.index.lexical import Postings, Vocabulary, merge_postings
from waypost.index.metadata import MetadataIndex
from waypost.index.references import TitleTable
from waypost.text.analyzers import Analyzers
from waypost.text.language import detector

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

SEGMENT_FORMAT = 5


def normal_title(title: str) -> str:
    return " ".join(title.casefold().split())


_BLOCK = 8 << 20


@dataclass
class Segment:
    name: str
    row_ids: IntArray  # ascending
    document_ids: list[str]  # per document slot
    chunk_doc: IntArray  # chunk position -> document slot
    titles: list[str]  # per document slot
    dense: DenseIndex
    chunks: Postings
    documents: Postings
    metadata: MetadataIndex
    language_codes: list[str] = field(default_factory=list)  # what chunk_language indexes
    chunk_language: npt.NDArray[np.int16] = field(default_factory=lambda: np.zeros(0, dtype=np.int16))
    path: Path | None = None  # where it is saved, once it is
    _titles: TitleTable | None = field(default=None, repr=False)
    _doc_ptr: tuple[IntArray, IntArray] | None = field(default=None, repr=False)
    _title_slots: dict[str, list[int]] | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __len__(self) -> int:
        return int(self.row_ids.shape[0])

    @property
    def document_count(self) -> int:
        return len(self.document_ids)

    def title_table(self) -> TitleTable:
        if self._titles is None:
            table = TitleTable.build(self.titles)
            with self._lock:
                if self._titles is None:
                    self._titles = table
        return self._titles

    def slots_titled(self, title: str) -> list[int]:
        """Document slots whose title is ``title``, case and spacing aside (an index built once per segment)."""
        if self._title_slots is None:
            by_title: dict[str, list[int]] = {}
            for slot, t in enumerate(self.titles):
                key = normal_title(t)
                if key:
                    by_title.setdefault(key, []).append(slot)
            self._title_slots = by_title
        return self._title_slots.get(normal_title(title), [])

    def doc_chunks(self, slot: int) -> IntArray:
        if self._doc_ptr is None:
            order = np.argsort(self.chunk_doc, kind="stable")
            ptr = np.zeros(self.document_count + 1, dtype=np.int64)
            np.cumsum(np.bincount(self.chunk_doc, minlength=self.document_count), out=ptr[1:])
            self._doc_ptr = (order.astype(np.int64), ptr)
        order, ptr = self._doc_ptr
        return order[ptr[slot] : ptr[slot + 1]]

    def languages(self, live: BoolArray | None) -> dict[str, int]:
        """Chunks per language, over live rows."""
        codes = np.asarray(self.chunk_language) if live is None else np.asarray(self.chunk_language)[live]
        counts = np.bincount(codes.astype(np.int64), minlength=len(self.language_codes))
        return {c: int(n) for c, n in zip(self.language_codes, counts, strict=True) if n}

    def doc_live(self, live: BoolArray | None) -> BoolArray | None:
        """A document is live while any of its chunks is (documents are written and removed whole)."""
        if live is None:
            return None
        counts = np.bincount(self.chunk_doc, weights=live.astype(np.float64), minlength=self.document_count)
        result: BoolArray = counts > 0
        return result

    def positions_of_rows(self, rows: IntArray) -> IntArray:
        """Positions of those ``rows`` that are in this segment."""
        if not len(self) or not rows.size:
            return np.zeros(0, dtype=np.int64)
        at = np.searchsorted(self.row_ids, rows)
        at = np.clip(at, 0, len(self) - 1)
        found = np.asarray(self.row_ids)[at] == rows
        result: IntArray = at[found].astype(np.int64)
        return result

    # -- build --------------------------------------------------------------------------------
    @classmethod
    def build(
        cls, name: str, rows: ChunkSnapshot, analyzers: Analyzers, vocab: Vocabulary, approximate: bool = False
    ) -> Segment:
        slots: dict[str, int] = {}
        chunk_doc = np.zeros(len(rows.document_ids), dtype=np.int64)
        for pos, doc in enumerate(rows.document_ids):
            chunk_doc[pos] = slots.setdefault(doc, len(slots))
        document_ids = list(slots)
        languages = chunk_languages(rows)
        doc_languages = [
            (rows.document_languages[i] if i < len(rows.document_languages) else "") or "" for i in range(len(slots))
        ]
        first_chunk: dict[int, str] = {}
        for pos, slot in enumerate(chunk_doc.tolist()):
            first_chunk.setdefault(slot, languages[pos])
        doc_languages = [lang or first_chunk.get(i, "und") for i, lang in enumerate(doc_languages)]
        chunk_terms = [
            vocab.encode(analyzers(lang).terms(t)) for t, lang in zip(rows.index_texts, languages, strict=True)
        ]
        doc_terms = [
            vocab.encode(analyzers(lang).terms(t)) for t, lang in zip(rows.document_texts, doc_languages, strict=True)
        ]
        codes = sorted(set(languages))
        code_of = {c: i for i, c in enumerate(codes)}
        size = len(vocab)
        vectors = np.ascontiguousarray(rows.embeddings, dtype=np.float32)
        return cls(
            name=name,
            row_ids=np.asarray(rows.row_ids, dtype=np.int64),
            document_ids=document_ids,
            chunk_doc=chunk_doc,
            titles=[rows.titles.get(d, "") for d in document_ids],
            dense=DenseIndex(vectors, approximate=approximate),
            chunks=Postings.build(chunk_terms, size),
            documents=Postings.build(doc_terms, size),
            metadata=MetadataIndex.build(rows.metadata),
            language_codes=codes,
            chunk_language=np.asarray([code_of[lang] for lang in languages], dtype=np.int16),
        )

    @classmethod
    def merge(
        cls, name: str, parts: Sequence[tuple[Segment, BoolArray | None]], vocab_size: int, approximate: bool = False
    ) -> Segment:
        """One segment from the live rows of several, in order; no text is analysed again."""
        lives = [np.ones(len(s), dtype=np.bool_) if live is None else live for s, live in parts]
        doc_lives = [s.doc_live(live) for (s, _), live in zip(parts, lives, strict=True)]
        doc_lives_full = [
            np.ones(s.document_count, dtype=np.bool_) if d is None else d
            for (s, _), d in zip(parts, doc_lives, strict=True)
        ]
        chunk_doc: list[IntArray] = []
        offset = 0
        for (segment, _), live, doc_live in zip(parts, lives, doc_lives_full, strict=True):
            remap = np.cumsum(doc_live) - 1 + offset
            chunk_doc.append(remap[np.asarray(segment.chunk_doc)[live]])
            offset += int(doc_live.sum())
        dim = parts[0][0].dense.vectors.shape[1] if parts else 0
        vectors = (
            np.concatenate([np.asarray(s.dense.vectors)[live] for (s, _), live in zip(parts, lives, strict=True)])
            if parts
            else np.zeros((0, dim), dtype=np.float32)
        )
        codes = sorted({c for s, _ in parts for c in s.language_codes})
        code_of = {c: i for i, c in enumerate(codes)}
        chunk_language = (
            np.concatenate(
                [
                    np.asarray([code_of[c] for c in s.language_codes], dtype=np.int16)[
                        np.asarray(s.chunk_language)[live]
                    ]
                    if s.language_codes
                    else np.zeros(int(live.sum()), dtype=np.int16)
                    for (s, _), live in zip(parts, lives, strict=True)
                ]
            )
            if parts
            else np.zeros(0, dtype=np.int16)
        )
        document_ids: list[str] = []
        titles: list[str] = []
        for (segment, _), doc_live in zip(parts, doc_lives_full, strict=True):
            kept = np.flatnonzero(doc_live).tolist()
            document_ids += [segment.document_ids[i] for i in kept]
            titles += [segment.titles[i] for i in kept]
        return cls(
            name=name,
            row_ids=np.concatenate([np.asarray(s.row_ids)[live] for (s, _), live in zip(parts, lives, strict=True)]),
            document_ids=document_ids,
            chunk_doc=np.concatenate(chunk_doc) if chunk_doc else np.zeros(0, dtype=np.int64),
            titles=titles,
            dense=DenseIndex(np.ascontiguousarray(vectors, dtype=np.float32), approximate=approximate),
            chunks=merge_postings([(s.chunks, live) for (s, _), live in zip(parts, lives, strict=True)], vocab_size),
            documents=merge_postings(
                [(s.documents, dl) for (s, _), dl in zip(parts, doc_lives_full, strict=True)], vocab_size
            ),
            metadata=MetadataIndex.merge([(s.metadata, live) for (s, _), live in zip(parts, lives, strict=True)]),
            language_codes=codes,
            chunk_language=chunk_language,
        )

    # -- persistence ----------------------------------------------------------------------------
    def save(self, path: Path) -> None:
        """Write every file into ``path`` (a fresh directory), then ``segment.json`` with checksums last."""
        files: list[str] = []
        arrays: dict[str, npt.NDArray[np.generic]] = {
            "row_ids.npy": np.asarray(self.row_ids, dtype=np.int64),
            "chunk_doc.npy": np.asarray(self.chunk_doc, dtype=np.int64),
            "vectors.npy": np.asarray(self.dense.vectors, dtype=np.float32),
            "chunk_language.npy": np.asarray(self.chunk_language, dtype=np.int16),
        }
        for file, arr in arrays.items():
            np.save(path / file, arr, allow_pickle=False)
            files.append(file)
        files += self.chunks.save(path, "chunks")
        files += self.documents.save(path, "documents")
        files += self.metadata.save(path)
        (path / "document_ids.json").write_text(json.dumps(self.document_ids, ensure_ascii=False))
        (path / "titles.json").write_text(json.dumps(self.titles, ensure_ascii=False))
        (path / "title_table.json").write_text(json.dumps(self.title_table().to_json(), ensure_ascii=False))
        files += ["document_ids.json", "titles.json", "title_table.json"]
        if self.dense.graphs:
            for graph, name in zip(self.dense.graphs, graph_files(len(self)), strict=True):
                graph.save_index(str(path / name))
                files.append(name)
        for file in files:
            fsync_path(path / file)
        manifest = {
            "format": SEGMENT_FORMAT,
            "name": self.name,
            "rows": len(self),
            "documents": self.document_count,
            "terms_chunks": self.chunks.terms,
            "terms_documents": self.documents.terms,
            "dim": int(self.dense.vectors.shape[1]),
            "languages": self.language_codes,
            "files": {f: _block_checksums(path / f) for f in files},
        }
        (path / "segment.json").write_text(json.dumps(manifest))
        fsync_path(path / "segment.json")
        self.path = path

    @staticmethod
    def verify(path: Path, full: bool = True) -> None:
        """Check a saved segment's files against their block checksums: every block (``full``), or the
        small files whole and eight blocks spread over each large one; ``ValueError`` when one differs."""
        manifest = json.loads((path / "segment.json").read_text())
        if manifest.get("format") != SEGMENT_FORMAT:
            raise ValueError(f"segment {path} has format {manifest.get('format')}, expected {SEGMENT_FORMAT}")
        for file, expected in manifest["files"].items():
            size, blocks = int(expected["size"]), list(expected["blocks"])
            target = path / file
            if target.stat().st_size != size:
                raise ValueError(f"segment file {target} is corrupt (size {target.stat().st_size}, expected {size})")
            picks = (
                range(len(blocks))
                if full or len(blocks) <= 8
                else sorted({int(i) for i in np.linspace(0, len(blocks) - 1, num=8)})
            )
            with target.open("rb") as fh:
                for i in picks:
                    fh.seek(i * _BLOCK)
                    if f"{zlib.crc32(fh.read(_BLOCK)):08x}" != blocks[i]:
                        raise ValueError(f"segment file {target} is corrupt (block {i} checksum mismatch)")

    @classmethod
    def load(
        cls, path: Path, graph_from: int | None = None, full_check: bool = True, build_below: int | None = None
    ) -> Segment:
        """A saved segment, memory-mapped; raises ``ValueError``/``OSError`` if anything is missing or
        corrupt. ``full_check=False`` samples large files (the caller verifies the rest in the background).
        A segment of at least ``graph_from`` rows (``None``: never) gets its HNSW graph: the saved one, or one
        built now, unless it has ``build_below`` rows or more (the caller builds it later)."""
        manifest = json.loads((path / "segment.json").read_text())
        cls.verify(path, full=full_check)
        rows, docs = int(manifest["rows"]), int(manifest["documents"])
        vectors = np.load(path / "vectors.npy", mmap_mode="r", allow_pickle=False)
        row_ids = np.load(path / "row_ids.npy", allow_pickle=False)
        chunk_doc = np.load(path / "chunk_doc.npy", allow_pickle=False)
        document_ids = json.loads((path / "document_ids.json").read_text())
        if vectors.shape != (rows, manifest["dim"]) or row_ids.shape != (rows,) or chunk_doc.shape != (rows,):
            raise ValueError(f"segment {path} has arrays of the wrong shape")
        if len(document_ids) != docs:
            raise ValueError(f"segment {path} lists the wrong number of documents")

        # Read whole now, not on first use: another process may collect this directory later.
        titles: list[str] = json.loads((path / "titles.json").read_text())
        metadata = MetadataIndex.load(path)
        if metadata.size != rows or len(titles) != docs:
            raise ValueError(f"segment {path} has a metadata index or titles of the wrong size")

        approximate = graph_from is not None and rows >= graph_from
        graphs = load_graphs(path, int(manifest["dim"]), rows) if approximate else None
        build_now = graphs is None and (build_below is None or rows < build_below)
        dense = DenseIndex(vectors, approximate=approximate and build_now, graphs=graphs)
        segment = cls(
            name=str(manifest["name"]),
            row_ids=row_ids,
            document_ids=document_ids,
            chunk_doc=chunk_doc,
            titles=titles,
            dense=dense,
            chunks=Postings.load(path, "chunks", rows, int(manifest["terms_chunks"])),
            documents=Postings.load(path, "documents", docs, int(manifest["terms_documents"])),
            metadata=metadata,
            language_codes=list(manifest["languages"]),
            chunk_language=np.load(path / "chunk_language.npy", allow_pickle=False),
            path=path,
            _titles=TitleTable.from_json(json.loads((path / "title_table.json").read_text())),
        )
        return segment


def chunk_languages(rows: ChunkSnapshot) -> list[str]:
    """Each row's language as recorded at ingest. Rows of stores made before languages have none: each
    of their documents is identified once, as ingest would, and its chunks take its language."""
    recorded = rows.languages if len(rows.languages) == len(rows.index_texts) else [""] * len(rows.index_texts)
    if all(recorded):
        return list(recorded)
    detect = detector().detect
    slots: dict[str, int] = {}
    for doc in rows.document_ids:
        slots.setdefault(doc, len(slots))
    found = [detect(text) for text in rows.document_texts]
    confident = [lang for lang in found if lang != "und"]
    fallback = max(set(confident), key=confident.count) if confident else "und"
    by_doc = [fallback if lang == "und" else lang for lang in found]
    return [lang or by_doc[slots[doc]] for lang, doc in zip(recorded, rows.document_ids, strict=True)]


def fsync_path(path: Path) -> None:
    """fsync a file or a directory (so a rename into it, or its entries, survive a crash)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _block_checksums(path: Path) -> dict[str, object]:
    """The file's size and the crc32 of each 8 MiB block (so a load can check a sample and a background
    pass the rest)."""
    blocks: list[str] = []
    with path.open("rb") as fh:
        while block := fh.read(_BLOCK):
            blocks.append(f"{zlib.crc32(block):08x}")
    return {"size": path.stat().st_size, "blocks": blocks}
