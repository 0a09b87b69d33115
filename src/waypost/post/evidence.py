"""The evidence graph: document → section → chunk, with adjacency and references, over one index generation.

The store is its system of record: a chunk row holds its document, position and section path, so the
graph needs no table of its own and follows the change log with the index set it is read through (a
deleted chunk is not live there, hence never a neighbour). Sections are read from the store on demand,
one document at a time, and kept for the life of the view (one query)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from waypost.base import DocumentStore, StoredChunk
from waypost.index.set import IndexSet
from waypost.index.topk import Positions


@dataclass(frozen=True)
class SectionRef:
    """A section of a document: its heading path and its live chunks' positions, in order."""

    document_id: str
    path: tuple[str, ...]
    positions: tuple[int, ...]


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

    def _load(self, position: int) -> None:
        if position in self._sections:
            return
        positions = self.indexes.document_positions(position)
        rows = [int(self.indexes.row_ids[p]) for p in positions]
        stored = {s.row_id: s for s in self.store.chunks_by_row(self.collection, rows)}
        ordered = [(int(p), stored[r]) for p, r in zip(positions, rows, strict=True) if r in stored]
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
        stored = self.chunk(position)
        if stored is None:
            return []
        return [int(t) for t in self.indexes.references.targets(position, stored.chunk.text)]

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
        seen: set[tuple[str, tuple[str, ...]]] = set()
        for p in sorted(out.positions):
            section = self.get_parent(p)
            if section is not None and (section.document_id, section.path) not in seen:
                seen.add((section.document_id, section.path))
                out.sections.append(section)
        return out

    def tokens(self, positions: Positions | Sequence[int]) -> int:
        total = 0
        for p in positions:
            stored = self.chunk(int(p))
            total += stored.chunk.token_count if stored is not None else 0
        return total
