"""Structure-aware chunking: sections come from headings, chunks are whole sentences within a section."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import regex

from waypost.errors import WaypostError
from waypost.types import Chunk

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$", re.MULTILINE)
# Han and kana characters count one token each (words there are one to three characters, and models
# tokenize them about per character); other scripts count words and punctuation.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+|[^\w\s]", re.UNICODE)
_GRAPHEME = regex.compile(r"\X")
_UNIT = re.compile(rf"[{_CJK}]|[^\s{_CJK}]+")  # what a too-long sentence may be cut between
_ABBREV = {
    "e.g",
    "i.e",
    "etc",
    "vs",
    "dr",
    "mr",
    "mrs",
    "ms",
    "prof",
    "fig",
    "figs",
    "al",
    "no",
    "st",
    "jr",
    "sr",
    "approx",
    "cf",
    "eq",
    "vol",
    "inc",
    "ltd",
    "co",
    "u.s",
    "ca",
    "resp",
}
# A sentence ends at . ! ? (with any closing quotes or brackets, which stay with it) followed by
# whitespace, or at a blank line; at the ideographic 。！？ (no space follows them); and, in Thai, which
# marks sentences with a space and no punctuation, at a space between Thai letters.
_BOUNDARY = re.compile(
    r"(?<=[.!?])(?P<close>[\"'”’)\]]*)\s+(?=\S)|\n[ \t]*\n\s*"
    r"|(?<=[。！？])(?P<cjk_close>[」』”’）)\]]*)\s*(?=[^\s」』”’）)\]])"
    r"|(?<=[\u0e00-\u0e7f])[ \t]+(?=[\u0e00-\u0e7f])"
)


def count_tokens(text: str) -> int:
    """Word and punctuation tokens: a model-free estimate close to word-piece counts for English."""
    return len(_TOKEN.findall(text))


@dataclass(frozen=True)
class Span:
    start: int
    end: int


def _trim(text: str, start: int, end: int) -> Span | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return Span(start, end) if end > start else None


def _one_section(text: str, before: Span, after: Span) -> bool:
    """Whether only whitespace lies between two pieces: a heading between them starts another section, even
    one with the same path (a repeated heading), and a chunk spanning it would hold uncounted tokens."""
    return not text[before.end : after.start].strip()


def split_sentences(text: str, start: int = 0, end: int | None = None) -> list[Span]:
    """Sentence spans of ``text[start:end]``, never cutting after a known abbreviation or an initial."""
    end = len(text) if end is None else end
    spans: list[Span] = []
    cursor = start
    for m in _BOUNDARY.finditer(text, start, end):
        closers = len(m.group("close") or "") + len(m.group("cjk_close") or "")
        before = text[cursor : m.start()]
        last = before.rstrip("\"'”’)]").rsplit(None, 1)
        word = last[-1] if last else ""
        stem = word.rstrip(".!?").lower()
        if (
            "\n\n" not in m.group(0).replace(" ", "")
            and word.endswith(".")
            and (stem in _ABBREV or (len(stem) == 1 and stem.isalpha()))
        ):
            continue
        span = _trim(text, cursor, m.start() + closers)
        if span:
            spans.append(span)
        cursor = m.end()
    tail = _trim(text, cursor, end)
    if tail:
        spans.append(tail)
    return spans


@dataclass(frozen=True)
class Section:
    path: tuple[str, ...]
    start: int
    end: int


def split_sections(text: str) -> list[Section]:
    """Body ranges between markdown-style headings, each with its heading path."""
    sections: list[Section] = []
    path: list[tuple[int, str]] = []
    cursor = 0
    current: tuple[str, ...] = ()
    for m in _HEADING.finditer(text):
        if m.start() > cursor:
            sections.append(Section(current, cursor, m.start()))
        level, title = len(m.group(1)), m.group(2).strip()
        path = [(lvl, t) for lvl, t in path if lvl < level] + [(level, title)]
        current = tuple(t for _, t in path)
        cursor = m.end()
    if cursor < len(text):
        sections.append(Section(current, cursor, len(text)))
    return sections


class Chunker:
    """Packs whole sentences into chunks of at most ``max_tokens``, balanced within each section.

    A single sentence longer than ``max_tokens`` is the only thing ever cut, at word boundaries.
    """

    def __init__(self, max_tokens: int = 200) -> None:
        if max_tokens < 16:
            raise WaypostError(f"the chunk token budget must be at least 16, got {max_tokens}")
        self.max_tokens = max_tokens

    def chunk(self, document_id: str, text: str) -> list[Chunk]:
        pieces: list[tuple[tuple[str, ...], Span, int]] = []
        for section in split_sections(text):
            for sentence in split_sentences(text, section.start, section.end):
                for part in self._split_long(text, sentence):
                    pieces.append((section.path, part, count_tokens(text[part.start : part.end])))
        chunks: list[Chunk] = []
        i = 0
        while i < len(pieces):
            path = pieces[i][0]
            j = i
            while (
                j < len(pieces)
                and pieces[j][0] == path
                and (j == i or _one_section(text, pieces[j - 1][1], pieces[j][1]))
            ):
                j += 1
            for group in self._pack(pieces[i:j]):
                start, end = group[0][1].start, group[-1][1].end
                chunks.append(
                    Chunk(document_id, len(chunks), text[start:end], start, end, sum(p[2] for p in group), path)
                )
            i = j
        return chunks

    def _split_long(self, text: str, span: Span) -> list[Span]:
        if count_tokens(text[span.start : span.end]) <= self.max_tokens:
            return [span]
        words = [
            piece for w in _UNIT.finditer(text[span.start : span.end]) for piece in self._pieces(w, self.max_tokens)
        ]
        parts: list[Span] = []
        group_start, tokens = words[0][0], 0
        last_end = words[0][1]
        for w_start, w_end, n in words:
            if tokens and tokens + n > self.max_tokens:
                parts.append(Span(span.start + group_start, span.start + last_end))
                group_start, tokens = w_start, 0
            tokens += n
            last_end = w_end
        parts.append(Span(span.start + group_start, span.start + last_end))
        return parts

    @staticmethod
    def _pieces(word: re.Match[str], budget: int) -> list[tuple[int, int, int]]:
        """A unit as (start, end, tokens); one longer than the budget (a run of a script written without
        spaces, such as Thai or Khmer) is cut between grapheme clusters."""
        n = count_tokens(word.group(0))
        if n <= budget:
            return [(word.start(), word.end(), n)]
        out: list[tuple[int, int, int]] = []
        start, tokens, cursor = word.start(), 0, word.start()
        for cluster in _GRAPHEME.finditer(word.group(0)):
            size = count_tokens(cluster.group(0))
            if tokens and tokens + size > budget:
                out.append((start, cursor, tokens))
                start, tokens = cursor, 0
            tokens += size
            cursor = word.start() + cluster.end()
        out.append((start, cursor, tokens))
        return out

    def _pack(self, pieces: list[tuple[tuple[str, ...], Span, int]]) -> list[list[tuple[tuple[str, ...], Span, int]]]:
        total = sum(p[2] for p in pieces)
        target = total / max(1, math.ceil(total / self.max_tokens))
        groups: list[list[tuple[tuple[str, ...], Span, int]]] = []
        current: list[tuple[tuple[str, ...], Span, int]] = []
        size = 0
        for piece in pieces:
            over_budget = size + piece[2] > self.max_tokens
            past_target = size >= target and size + piece[2] / 2 > target
            if current and (over_budget or past_target):
                groups.append(current)
                current, size = [], 0
            current.append(piece)
            size += piece[2]
        if current:
            groups.append(current)
        return groups
