"""The evidence graph: document → section → chunk, with adjacency and references, over one index generation.

The store is its system of record: a chunk row holds its document, position and section path, so the
graph needs no table of its own and follows the change log with the index set it is read through (a
deleted chunk is not live there, hence never a neighbour). Sections are read from the store on demand,
one document at a time, and kept for the life of the view (one query)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from waypost.base import DocumentStore, StoredChunk
from waypost.filters.dates import date_value
from waypost.filters.model import Condition, Op
from waypost.index.set import IndexSet
from waypost.index.topk import Positions
from waypost.types import Hit, Metadata

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class SectionRef:
    """A section of a document: its heading path and its live chunks' positions, in order."""

    document_id: str
    path: tuple[str, ...]
    positions: tuple[int, ...]


SUPERSEDES_FIELD = "supersedes"
VERSION_FIELD = "version"


@dataclass(frozen=True)
class Succession:
    """A supersedes edge: ``newer`` replaces ``older``, and why that is known."""

    newer: str
    older: str
    reason: str


def _version_number(value: object) -> tuple[int, ...] | None:
    """``3``, ``"2.10.1"`` or ``"v2"`` as a comparable tuple; ``None`` when it is not a version."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return (int(value), round((float(value) % 1) * 1000))
    if isinstance(value, str):
        text = value.strip().lower().removeprefix("v")
        parts = text.split(".")
        if parts and all(part.isdigit() for part in parts):
            return tuple(int(part) for part in parts)
    return None


def version_key(metadata: Metadata, date_fields: Sequence[str]) -> tuple[float | None, tuple[int, ...] | None]:
    """A document's date (days, from its first date field that has one) and version, for succession."""
    day: float | None = None
    for name in date_fields:
        day = date_value(metadata.get(name))
        if day is not None:
            break
    return day, _version_number(metadata.get(VERSION_FIELD))


def newer_by(
    theirs: tuple[float | None, tuple[int, ...] | None], mine: tuple[float | None, tuple[int, ...] | None]
) -> str:
    """What makes ``theirs`` newer than ``mine`` ("date" or "version"), or "" when it is not newer."""
    if theirs[0] is not None and mine[0] is not None and theirs[0] != mine[0]:
        return "date" if theirs[0] > mine[0] else ""
    if theirs[1] is not None and mine[1] is not None and theirs[1] > mine[1]:
        return "version"
    return ""


@dataclass
class Subgraph:
    """Positions reached from an anchor, and the edges walked: (from, to, kind)."""

    anchor: int
    positions: set[int] = field(default_factory=set)
    sections: list[SectionRef] = field(default_factory=list)
    edges: list[tuple[int, int, str]] = field(default_factory=list)


class EvidenceGraph:
    def __init__(self, collection: str, indexes: IndexSet, store: DocumentStore) -> None:
        self.collection = collection
        self.indexes = indexes
        self.store = store
        self._chunks: dict[int, StoredChunk] = {}
        self._sections: dict[int, SectionRef] = {}  # position -> its section
        self._date_fields: list[str] | None = None
        self._live: dict[tuple[str, int], int | None] = {}  # (document, index) -> position, memo
        self._references: dict[int, list[int]] = {}

    def _load(self, position: int) -> None:
        if position in self._sections:
            return
        positions = self.indexes.document_positions(position)
        rows = [int(self.indexes.row_ids[p]) for p in positions]
        stored = {s.row_id: s for s in self.store.chunks_by_row(self.collection, rows)}
        self._index([(int(p), stored[r]) for p, r in zip(positions, rows, strict=True) if r in stored])

    def _index(self, ordered: list[tuple[int, StoredChunk]]) -> None:
        """Record one document's live chunks (position, row) and the sections they form."""
        ordered.sort(key=lambda ps: ps[1].chunk.index)
        run: list[tuple[int, StoredChunk]] = []
        for i, (p, s) in enumerate(ordered):
            self._chunks[p] = s
            run.append((p, s))
            last = i + 1 == len(ordered)
            if last or ordered[i + 1][1].chunk.section != s.chunk.section:
                ref = SectionRef(s.chunk.document_id, s.chunk.section, tuple(q for q, _s in run))
                for q, _s in run:
                    self._sections[q] = ref
                run = []

    def chunk(self, position: int) -> StoredChunk | None:
        self._load(position)
        return self._chunks.get(position)

    def get_parent(self, position: int) -> SectionRef | None:
        """The section holding the chunk at ``position`` (``None`` if it is no longer live)."""
        self._load(position)
        return self._sections.get(position)

    def get_adjacent(self, position: int) -> list[int]:
        """The chunks just before and after, in the same section."""
        section = self.get_parent(position)
        if section is None:
            return []
        at = section.positions.index(position)
        return [section.positions[i] for i in (at - 1, at + 1) if 0 <= i < len(section.positions)]

    def get_references(self, position: int) -> list[int]:
        """Chunks of the documents this chunk names by title."""
        if position not in self._references:
            stored = self.chunk(position)
            found = self.indexes.references.targets(position, stored.chunk.text) if stored is not None else None
            self._references[position] = [int(t) for t in found] if found is not None else []
        return self._references[position]

    def positions(self, hits: Sequence[Hit]) -> list[int | None]:
        """Each hit's live position (``None`` where its chunk is gone), read once per chunk for the graph's
        life: the rerank and passage stages of one query ask about the same hits."""
        return self.positions_of([(h.chunk.document_id, h.chunk.index) for h in hits])

    def positions_of(self, keys: Sequence[tuple[str, int]]) -> list[int | None]:
        """The live position of each (document id, chunk index); ``None`` where that chunk is gone."""
        missing = [key for key in dict.fromkeys(keys) if key not in self._live]
        if missing:
            rows = self.store.row_ids_of(self.collection, missing)
            found = self.indexes.positions_of(list(rows.values()))
            for key in missing:
                self._live[key] = found.get(rows.get(key, -1))
        return [self._live[key] for key in keys]

    def get_subgraph(self, anchor: int, depth: int = 1) -> Subgraph:
        """What ``depth`` steps of adjacency and reference edges reach from ``anchor``, and its sections."""
        out = Subgraph(anchor, {anchor})
        frontier = [anchor]
        for _ in range(depth):
            nxt: list[int] = []
            for p in frontier:
                for q, kind in [*((q, "adjacent") for q in self.get_adjacent(p)),
                                *((q, "references") for q in self.get_references(p))]:  # fmt: skip
                    out.edges.append((p, q, kind))
                    if q not in out.positions:
                        out.positions.add(q)
                        nxt.append(q)
            frontier = nxt
        seen: set[SectionRef] = set()  # sections themselves: a heading may repeat in a document
        for p in sorted(out.positions):
            section = self.get_parent(p)
            if section is not None and section not in seen:
                seen.add(section)
                out.sections.append(section)
        return out

    def preload(self, positions: Sequence[int]) -> None:
        """Read the documents of ``positions`` from the store in one query (a reranker touches many)."""
        wanted = {int(p) for p in positions if int(p) not in self._sections}
        by_position: dict[int, IntArray] = {}
        seen: set[int] = set()
        for p in sorted(wanted):
            if p not in seen:
                by_position[p] = self.indexes.document_positions(p)
                seen.update(int(q) for q in by_position[p])
        rows = [int(self.indexes.row_ids[q]) for doc in by_position.values() for q in doc]
        stored = {s.row_id: s for s in self.store.chunks_by_row(self.collection, rows)}
        for doc in by_position.values():
            self._index([(int(q), stored[int(self.indexes.row_ids[q])]) for q in doc
                         if int(self.indexes.row_ids[q]) in stored])  # fmt: skip

    def get_successors(self, position: int) -> list[Succession]:
        """Live documents that supersede the one holding ``position``: declared by their ``supersedes``
        metadata (a document id or a list of them), or carrying the same title with a later date or a higher
        ``version``."""
        stored = self.chunk(position)
        if stored is None:
            return []
        document_id = stored.chunk.document_id
        out: dict[str, Succession] = {}
        if SUPERSEDES_FIELD in self.indexes.metadata.stats:
            mask = self.indexes.metadata.mask(Condition(SUPERSEDES_FIELD, Op.EQ, document_id))
            if self.indexes.live is not None:
                mask &= self.indexes.live
            for q in np.flatnonzero(mask)[:64]:
                other = self.indexes.document_of(int(q))
                if other != document_id:
                    out.setdefault(other, Succession(other, document_id, f"{other} declares supersedes={document_id}"))
        if stored.title.strip():
            mine = version_key(stored.metadata, self.date_fields())
            for other, q in self.indexes.documents_titled(stored.title).items():
                if other == document_id or other in out:
                    continue
                theirs = self.chunk(q)
                if theirs is None:
                    continue
                newer = newer_by(version_key(theirs.metadata, self.date_fields()), mine)
                if newer:
                    out[other] = Succession(other, document_id, f"{other} has the same title and a later {newer}")
        return list(out.values())

    def date_fields(self) -> list[str]:
        if self._date_fields is None:
            self._date_fields = self.indexes.date_fields()
        return self._date_fields

    def tokens(self, positions: Positions | Sequence[int]) -> int:
        total = 0
        for p in positions:
            stored = self.chunk(int(p))
            total += stored.chunk.token_count if stored is not None else 0
        return total
