"""Reference links: a chunk that names another document's title points at that document.

Wikipedia-like corpora, wikis and manuals refer to each other by name; following those links from
the best hits finds the second hop of a multi-hop question. Matching is case-sensitive on whole
tokens, and single-word titles must be capitalised and at least five letters, so common words
never become links.

Links are found when they are needed: each segment keeps a table of its documents' titles, and the
few chunks a query follows are matched against the titles of every live document. A new document's
title is linkable the moment its segment exists, and a deleted one's the moment it is tombstoned,
with nothing precomputed to keep current.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

_TOKEN = re.compile(r"\w+", re.UNICODE)
MAX_TITLE_TOKENS = 12

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def _linkable(tokens: tuple[str, ...]) -> bool:
    if not tokens or len(tokens) > MAX_TITLE_TOKENS:
        return False
    if len(tokens) == 1:
        word = tokens[0]
        return len(word) >= 5 and word[0].isupper() and not word.isdigit()
    return any(t[0].isupper() for t in tokens)


@dataclass(frozen=True)
class TitleTable:
    """Linkable titles of one segment's documents: token tuple -> document slots."""

    by_title: dict[tuple[str, ...], list[int]]
    longest: dict[str, int]  # first token -> longest title starting with it

    @classmethod
    def build(cls, titles: Sequence[str]) -> TitleTable:
        by_title: dict[tuple[str, ...], list[int]] = {}
        for slot, title in enumerate(titles):
            key = tuple(_TOKEN.findall(title))
            if _linkable(key):
                by_title.setdefault(key, []).append(slot)
        longest: dict[str, int] = {}
        for key in by_title:
            longest[key[0]] = max(longest.get(key[0], 0), len(key))
        return cls(by_title, longest)

    def to_json(self) -> dict[str, list[object]]:
        keys = list(self.by_title)
        return {"keys": ["\x1f".join(k) for k in keys], "slots": [self.by_title[k] for k in keys]}

    @classmethod
    def from_json(cls, data: dict[str, list[Any]]) -> TitleTable:
        by_title = {tuple(k.split("\x1f")): list(v) for k, v in zip(data["keys"], data["slots"], strict=True)}
        longest: dict[str, int] = {}
        for key in by_title:
            longest[key[0]] = max(longest.get(key[0], 0), len(key))
        return cls(by_title, longest)

    def mentioned(self, tokens: list[str]) -> set[int]:
        found: set[int] = set()
        for i, tok in enumerate(tokens):
            longest = self.longest.get(tok)
            if longest is None:
                continue
            for n in range(1, longest + 1):
                slots = self.by_title.get(tuple(tokens[i : i + n]))
                if slots:
                    found.update(slots)
        return found


@dataclass(frozen=True)
class ReferenceSegment:
    """What a segment contributes: its title table and where each document's chunks lie."""

    titles: Callable[[], TitleTable]
    document_ids: Sequence[str]
    doc_chunks: Callable[[int], IntArray]  # document slot -> chunk positions within the segment
    doc_live: BoolArray | None


class ReferenceView:
    """``targets(position, text)``: live chunk positions of every other document the chunk names."""

    def __init__(self, parts: Sequence[tuple[ReferenceSegment, int]], document_of: Callable[[int], str]) -> None:
        self._parts = list(parts)
        self._document_of = document_of

    def targets(self, position: int, text: str) -> IntArray:
        tokens = _TOKEN.findall(text)
        own = self._document_of(position)
        out: list[IntArray] = []
        for part, offset in self._parts:
            for slot in part.titles().mentioned(tokens):
                if part.doc_live is not None and not part.doc_live[slot]:
                    continue
                if part.document_ids[slot] == own:
                    continue
                out.append(part.doc_chunks(slot) + offset)
        return np.sort(np.concatenate(out)) if out else np.zeros(0, dtype=np.int64)

    def links(self, positions: Sequence[int], texts: Sequence[str]) -> list[IntArray]:
        return [self.targets(int(p), t) for p, t in zip(positions, texts, strict=True)]


def reference_targets(chunk_texts: list[str], document_ids: list[str], titles: dict[str, str]) -> list[IntArray]:
    """Every chunk's link targets over one in-memory corpus (for tests and tools)."""
    slots: dict[str, int] = {}
    for doc in document_ids:
        slots.setdefault(doc, len(slots))
    names = list(slots)
    chunks_of: list[list[int]] = [[] for _ in names]
    for pos, doc in enumerate(document_ids):
        chunks_of[slots[doc]].append(pos)
    table = TitleTable.build([titles.get(d, "") for d in names])
    segment = ReferenceSegment(
        titles=lambda: table,
        document_ids=names,
        doc_chunks=lambda slot: np.asarray(chunks_of[slot], dtype=np.int64),
        doc_live=None,
    )
    view = ReferenceView([(segment, 0)], lambda pos: document_ids[pos])
    return view.links(range(len(chunk_texts)), chunk_texts)
