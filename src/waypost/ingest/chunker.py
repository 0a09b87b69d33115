"""Structure-aware chunking: sections come from headings, chunks are whole sentences within a section."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import regex

from waypost.errors import WaypostError
from waypost.types import Chunk

# No nested quantifiers: a closing "###" and trailing blanks are stripped in Python (the regex once had
# `(.+?)[ \t]*#*[ \t]*$`, cubic in a run of spaces inside a heading line: 100 s for 3,700 spaces).
_HEADING = re.compile(r"^(#{1,6})[ \t]+([^\n]+)$", re.MULTILINE)
# Han and kana characters count one token each (words there are one to three characters, and models
# tokenize them about per character); other scripts count words and punctuation.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+|[^\w\s]", re.UNICODE)
# A run of letters and digits longer than this counts one token per this many characters (an ordinary
# word is far shorter), so a run with no space in it (a hash, a sequence, a pasted blob) has a size.
WORD_CHARS = 20
# No chunk holds more than this many characters per token of its budget (whitespace counts no tokens, so
# without this a span could hold any number of characters); twice WORD_CHARS, so ordinary text never meets it.
CHUNKING_RULES = 2  # bump when the same text and settings would chunk or index differently
CHARS_PER_TOKEN = 2 * WORD_CHARS
_LONG_RUN = re.compile(rf"[^\W{_CJK}]{{{WORD_CHARS + 1},}}", re.UNICODE)
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
    """Word and punctuation tokens: a model-free estimate close to word-piece counts for English. A run of
    letters and digits longer than ``WORD_CHARS`` counts one token per ``WORD_CHARS`` characters."""
    extra = sum((len(run) - 1) // WORD_CHARS for run in _LONG_RUN.findall(text))
    return len(_TOKEN.findall(text)) + extra


@runtime_checkable
class TokenWindow(Protocol):
    """How much of one input an embedding model reads: ``max_input_tokens`` of its own tokens (special
    tokens included); the rest it truncates. An embedder that knows its tokenizer offers this."""

    @property
    def max_input_tokens(self) -> int: ...

    def count_input_tokens(self, texts: Sequence[str]) -> list[int]: ...


def token_window(embedder: object) -> TokenWindow | None:
    """The embedder's ``TokenWindow`` (looking through wrappers such as the embedding cache), or None."""
    seen = 0
    while embedder is not None and seen < 8:
        if isinstance(embedder, TokenWindow):
            return embedder
        embedder, seen = getattr(embedder, "inner", None), seen + 1
    return None


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


def _heading_title(line: str) -> str:
    """A heading line's text without trailing blanks, closing hashes and blanks: what the old pattern
    ``(.+?)[ \t]*#*[ \t]*$`` kept (at least one character), stripped."""
    body = line.rstrip(" \t").rstrip("#").rstrip(" \t")
    return (body or line[:1]).strip()


def split_sections(text: str) -> list[Section]:
    """Body ranges between markdown-style headings, each with its heading path."""
    sections: list[Section] = []
    path: list[tuple[int, str]] = []
    cursor = 0
    current: tuple[str, ...] = ()
    for m in _HEADING.finditer(text):
        if m.start() > cursor:
            sections.append(Section(current, cursor, m.start()))
        level, title = len(m.group(1)), _heading_title(m.group(2))
        path = [(lvl, t) for lvl, t in path if lvl < level] + [(level, title)]
        current = tuple(t for _, t in path)
        cursor = m.end()
    if cursor < len(text):
        sections.append(Section(current, cursor, len(text)))
    return sections


Piece = tuple[tuple[str, ...], Span, int]  # section path, span, estimated tokens


def _plain_input(title: str, section: tuple[str, ...], text: str) -> str:
    return "\n".join([*dict.fromkeys(p for p in (title, *section) if p), text])


class Chunker:
    """Packs whole sentences into chunks of at most ``max_tokens``, balanced within each section.

    A single sentence longer than ``max_tokens`` is the only thing ever cut, at word boundaries (a word
    longer than the budget, between grapheme clusters). With a ``window`` (the embedder's tokenizer), a
    chunk the model would truncate (its input, title and headings included, over the model's window) is
    cut in two, between sentences, else words, else grapheme clusters, until every part fits; ``render``
    builds that input from title, section path and chunk text, as the ingest pipeline embeds it (halving
    stops where the title and headings alone crowd the window). No chunk holds more than ``max_tokens *
    CHARS_PER_TOKEN`` characters (whitespace counts no tokens): long whitespace runs separate chunks.
    """

    def __init__(
        self,
        max_tokens: int = 200,
        window: TokenWindow | None = None,
        render: Callable[[str, tuple[str, ...], str], str] = _plain_input,
    ) -> None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 16:
            raise WaypostError(f"the chunk token budget must be a whole number of at least 16, got {max_tokens!r}")
        self.max_tokens = max_tokens
        self.max_chars = max_tokens * CHARS_PER_TOKEN
        self.window = window
        self.render = render

    @property
    def signature(self) -> str:
        """What the chunks depend on besides the text (part of a document's stored fingerprint): the budget,
        the model's window, and the version of the chunking rules (``r2``: long runs, whitespace and combining
        marks bounded, title context capped), so a store chunked by older rules is re-chunked on its next add."""
        window = f"w{self.window.max_input_tokens}" if self.window is not None else ""
        return f"chunk{self.max_tokens}{window}r{CHUNKING_RULES}"

    def chunk(self, document_id: str, text: str, title: str = "") -> list[Chunk]:
        pieces: list[Piece] = []
        for section in split_sections(text):
            for sentence in split_sentences(text, section.start, section.end):
                for part in self._split_long(text, sentence):
                    pieces.append((section.path, part, count_tokens(text[part.start : part.end])))
        groups: list[list[Piece]] = []
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
            groups.extend(self._pack(pieces[i:j]))
            i = j
        if self.window is not None and groups:
            groups = self._fit_window(text, title, groups)
        chunks: list[Chunk] = []
        for group in groups:
            start, end = group[0][1].start, group[-1][1].end
            chunks.append(
                Chunk(document_id, len(chunks), text[start:end], start, end, sum(p[2] for p in group), group[0][0])
            )
        return chunks

    def _model_tokens(self, text: str, title: str, groups: list[list[Piece]]) -> list[int]:
        assert self.window is not None
        inputs = [self.render(title, g[0][0], text[g[0][1].start : g[-1][1].end]) for g in groups]
        return self.window.count_input_tokens(inputs)

    def _fit_window(self, text: str, title: str, groups: list[list[Piece]]) -> list[list[Piece]]:
        """Every group the model reads whole, halving those it would truncate (in order)."""
        assert self.window is not None
        limit = self.window.max_input_tokens
        out: list[list[Piece]] = []
        for group, n in zip(groups, self._model_tokens(text, title, groups), strict=True):
            if n <= limit:
                out.append(group)
                continue
            halves = self._halve(text, group)
            if halves is None or self._context_crowds(text, title, group, limit):
                out.append(group)  # the model truncates it: the rest would be shattered to no avail
            else:
                out.extend(self._fit_window(text, title, halves))
        return out

    def _context_crowds(self, text: str, title: str, group: list[Piece], limit: int) -> bool:
        """Whether the title and headings alone leave almost no room in the window (less than an eighth, at
        least 16 tokens) while the chunk text alone fits: halving further would only shatter the text
        (``render`` should cap them; see ``index_text``). A CJK title of 140 tokens still leaves room."""
        assert self.window is not None
        chunk_text = text[group[0][1].start : group[-1][1].end]
        context, alone = self.window.count_input_tokens([self.render(title, group[0][0], ""), chunk_text])
        return context >= limit - max(16, limit // 8) and alone <= limit

    @staticmethod
    def _halve(text: str, group: list[Piece]) -> list[list[Piece]] | None:
        """``group`` in two: between pieces (sentences), else between words, else between grapheme clusters."""
        if len(group) > 1:
            total, running, balance = sum(p[2] for p in group), 0, []
            for piece in group[:-1]:
                running += piece[2]
                balance.append(abs(2 * running - total))
            cut = 1 + balance.index(min(balance))  # the cut nearest half the tokens
            return [group[:cut], group[cut:]]
        path, span, _tokens = group[0]
        units = list(_UNIT.finditer(text, span.start, span.end))
        if len(units) > 1:
            left, right = (
                Span(span.start, units[len(units) // 2 - 1].end()),
                Span(units[len(units) // 2].start(), span.end),
            )
        else:
            bounds = [m.end() for m in _GRAPHEME.finditer(text, span.start, span.end)]
            if len(bounds) < 2:  # one grapheme cluster: between code points
                bounds = list(range(span.start + 1, span.end + 1))
            if len(bounds) < 2:
                return None
            middle = bounds[len(bounds) // 2 - 1]
            left, right = Span(span.start, middle), Span(middle, span.end)
        return [
            [(path, left, count_tokens(text[left.start : left.end]))],
            [(path, right, count_tokens(text[right.start : right.end]))],
        ]

    def _split_long(self, text: str, span: Span) -> list[Span]:
        """A sentence over the token budget, or over ``max_chars`` (a long run of whitespace inside it), in
        parts between words."""
        if span.end - span.start <= self.max_chars and count_tokens(text[span.start : span.end]) <= self.max_tokens:
            return [span]
        words = [
            piece for w in _UNIT.finditer(text[span.start : span.end]) for piece in self._pieces(w, self.max_tokens)
        ]
        parts: list[Span] = []
        group_start, tokens = words[0][0], 0
        last_end = words[0][1]
        for w_start, w_end, n in words:
            if tokens and (tokens + n > self.max_tokens or w_end - group_start > self.max_chars):
                parts.append(Span(span.start + group_start, span.start + last_end))
                group_start, tokens = w_start, 0
            tokens += n
            last_end = w_end
        parts.append(Span(span.start + group_start, span.start + last_end))
        return parts

    @staticmethod
    def _pieces(word: re.Match[str], budget: int) -> list[tuple[int, int, int]]:
        """A unit as (start, end, tokens); one longer than the budget (a run of a script written without
        spaces, such as Thai or Khmer, or letters and digits with no space) is cut between grapheme clusters."""
        n = count_tokens(word.group(0))
        if n <= budget:
            return [(word.start(), word.end(), n)]
        unit = word.group(0)
        if unit.isascii() and unit.isalnum():  # every character its own cluster: cut in whole budgets
            step = budget * WORD_CHARS
            return [
                (word.start() + a, word.start() + min(a + step, len(unit)), count_tokens(unit[a : a + step]))
                for a in range(0, len(unit), step)
            ]
        out: list[tuple[int, int, int]] = []
        start, tokens, cursor = word.start(), 0, word.start()
        for cluster in _GRAPHEME.finditer(word.group(0)):
            size = count_tokens(cluster.group(0))
            # a cluster over the budget (a letter with thousands of combining marks) goes by code points
            steps = [cluster.group(0)] if size <= budget else list(cluster.group(0))
            for step in steps:
                size = count_tokens(step) if len(steps) > 1 else size
                if tokens and tokens + size > budget:
                    out.append((start, cursor, tokens))
                    start, tokens = cursor, 0
                tokens += size
                cursor += len(step)
        out.append((start, cursor, tokens))
        return out

    def _pack(self, pieces: list[tuple[tuple[str, ...], Span, int]]) -> list[list[tuple[tuple[str, ...], Span, int]]]:
        total = sum(p[2] for p in pieces)
        target = total / max(1, math.ceil(total / self.max_tokens))
        groups: list[list[tuple[tuple[str, ...], Span, int]]] = []
        current: list[tuple[tuple[str, ...], Span, int]] = []
        size = 0
        for piece in pieces:
            over_budget = size + piece[2] > self.max_tokens or (
                bool(current) and piece[1].end - current[0][1].start > self.max_chars
            )
            past_target = size >= target and size + piece[2] / 2 > target
            if current and (over_budget or past_target):
                groups.append(current)
                current, size = [], 0
            current.append(piece)
            size += piece[2]
        if current:
            groups.append(current)
        return groups
