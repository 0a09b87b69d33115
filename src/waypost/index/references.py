"""Reference links: a chunk that names another document's title points at that document.

Wikipedia-like corpora, wikis and manuals refer to each other by name; following those links from
the best hits finds the second hop of a multi-hop question. Matching is case-sensitive on whole
tokens, and single-word titles must be capitalised and at least five letters, so common words
never become links.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

_TOKEN = re.compile(r"\w+", re.UNICODE)
MAX_TITLE_TOKENS = 12

IntArray = npt.NDArray[np.int64]


def _linkable(tokens: tuple[str, ...]) -> bool:
    if not tokens or len(tokens) > MAX_TITLE_TOKENS:
        return False
    if len(tokens) == 1:
        word = tokens[0]
        return len(word) >= 5 and word[0].isupper() and not word.isdigit()
    return any(t[0].isupper() for t in tokens)


@dataclass
class ReferenceIndex:
    """``targets[p]``: chunk positions of every document that chunk ``p`` mentions by title."""

    targets: list[IntArray]
    links: int

    @classmethod
    def build(cls, chunk_texts: list[str], document_ids: list[str], titles: dict[str, str]) -> ReferenceIndex:
        chunks_of: dict[str, list[int]] = {}
        for pos, doc in enumerate(document_ids):
            chunks_of.setdefault(doc, []).append(pos)
        by_title: dict[tuple[str, ...], list[str]] = {}
        for doc, title in titles.items():
            key = tuple(_TOKEN.findall(title))
            if doc in chunks_of and _linkable(key):
                by_title.setdefault(key, []).append(doc)
        starts: dict[str, int] = {}
        for key in by_title:
            starts[key[0]] = max(starts.get(key[0], 0), len(key))
        empty = np.zeros(0, dtype=np.int64)
        targets: list[IntArray] = []
        links = 0
        for pos, text in enumerate(chunk_texts):
            tokens = _TOKEN.findall(text)
            found: set[str] = set()
            for i, tok in enumerate(tokens):
                longest = starts.get(tok)
                if longest is None:
                    continue
                for n in range(1, longest + 1):
                    docs = by_title.get(tuple(tokens[i : i + n]))
                    if docs:
                        found.update(docs)
            found.discard(document_ids[pos])
            if found:
                targets.append(np.asarray(sorted(p for d in found for p in chunks_of[d]), dtype=np.int64))
                links += len(found)
            else:
                targets.append(empty)
        return cls(targets, links)
