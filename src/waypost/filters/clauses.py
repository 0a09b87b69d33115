"""Parallel clauses: "red wines from France and white wines from Italy", "Korean movies and Swedish TV shows"
each name their own values of the same fields, and mean (red AND France) OR (white AND Italy). Read as one
clause, the second's values are dropped or contradict the first's."""

from __future__ import annotations

import re
from collections.abc import Callable

from waypost.filters.model import And, Condition, Extraction, Filter, Op, Or, all_of

JOINER = re.compile(r"\b(?:and|or|plus)\b|[,;]", re.IGNORECASE)
CLAUSE_MIN_CONDITIONS = 2  # a clause with its own words: a value and what qualifies it ("red wines from France")
CLAUSE_MAX_JOINERS = 6  # a question joins a few clauses; a pasted text with more is read as one (linear time)
TRAILING_MAX_WORDS = 8  # a condition said once for every clause is a short ending ("under 20 euros")
_ARTICLE = re.compile(r"^(?:a|an|the|some)\s+", re.IGNORECASE)
EDGE_MAX_WORDS = 3  # the longest value read at either side of a joiner ("Mercedes-Benz C Class")


Reader = Callable[[str, bool], Extraction]  # a piece of the query read as one clause (with implied values or not)


def read_parallel(query: str, read: Reader, holds_rows: Callable[[Filter], bool]) -> Extraction:
    """The query as one clause or, where it joins parallel clauses ("red wines from France and white wines
    from Italy"), as either clause (each joiner from the left; the right side may split again). Clauses are
    parallel by their own words, or by what their values imply where the second names a field of its own
    ("British movies or Nordic TV shows": the shelf implies TV; "rated R or PG-13" is one clause); each
    must hold rows."""
    return _split(query, read, holds_rows, set())[0]


def _split(
    query: str, read: Reader, holds_rows: Callable[[Filter], bool], earlier: set[str]
) -> tuple[Extraction, list[Condition] | None]:
    """``query`` split at its first joiner of parallel clauses, or whole; with the reading, the conditions
    every clause shares (None where ``query`` is one clause). ``earlier``: the fields the clauses before
    ``query`` ask."""
    whole = read(query, True)
    if len(whole.conditions) < CLAUSE_MIN_CONDITIONS:
        return whole, None
    found = joiners(query)
    for index, joiner in enumerate(found):
        head, tail = query[: joiner.start()], query[joiner.end() :]
        # the pieces right beside the joiner, up to the joiners around it ("red from France or Italy and ...")
        near_head = query[found[index - 1].end() if index else 0 : joiner.start()]
        near_tail = query[joiner.end() : found[index + 1].start() if index + 1 < len(found) else len(query)]
        differing = _asked_differently(read(near_head, False).conditions, read(near_tail, False).conditions)
        if joins_values(head, tail, lambda text: read(text, False), differing):
            continue
        ours, theirs = read(head, False).conditions, read(tail, False).conditions
        left = read(head, True)
        if not parallel(ours, theirs):
            own_field = {c.field for c in theirs} - {c.field for c in ours}
            if not (own_field and parallel(left.conditions, read(tail, True).conditions)):
                continue
        if left.filter is None or not holds_rows(left.filter):
            continue  # a clause no row holds is no clause of this catalogue
        asked = {c.field for c in left.conditions}
        right, shared = _split(tail, read, holds_rows, earlier | asked)
        if right.filter is None or not holds_rows(right.filter):
            continue
        if shared is None:
            shared = trailing(tail, earlier | asked, lambda text: read(text, False))
        shared = [c for c in shared if c.field not in asked]
        left_filter = all_of([*(left.filter.items if isinstance(left.filter, And) else [left.filter]), *shared])
        if left_filter is None or (shared and not holds_rows(left_filter)):
            left_filter, shared = left.filter, []  # the first clause holds rows only alone: each keeps its own
        semantic = " ".join(dict.fromkeys(f"{left.semantic_query} {right.semantic_query}".split()))
        said = f"{head.strip()!r} {joiner.group(0)} {tail.strip()!r}: either"
        shares = [f"{', '.join(map(str, shared))}: every clause"] if shared else []
        reading = Extraction(
            either(left_filter, right.filter),
            semantic,
            [*left.matches, *right.matches, *shares, said],
            left.read_words + right.read_words,
            left.value_words + right.value_words,
        )
        return reading, shared
    return whole, None


def joiners(query: str) -> list[re.Match[str]]:
    """Where ``query`` may split into two clauses: a joiner with words on both sides; none where it has more
    than ``CLAUSE_MAX_JOINERS``."""
    found: list[re.Match[str]] = []
    for m in JOINER.finditer(query):
        if re.search(r"\w", query[: m.start()]) and re.search(r"\w", query[m.end() :]):
            found.append(m)
            if len(found) > CLAUSE_MAX_JOINERS:
                return []
    return found


def joins_values(head: str, tail: str, read: Callable[[str], Extraction], differing: set[str]) -> bool:
    """Whether the joiner between ``head`` and ``tail`` joins two values of one field ("TypeScript and Node.js",
    "white Kia or Hyundai SUV"): a list of values inside one clause, not two clauses. Not where the pieces
    beside the joiner also ask another field differently (``differing``: the fields they do): "estates by Volvo
    or Skoda SUVs" are two clauses."""
    before = _edge_field(head, read, last=True)
    return before is not None and differing <= {before} and before == _edge_field(tail, read, last=False)


def _asked_differently(left: list[Condition], right: list[Condition]) -> set[str]:
    """The fields both clauses ask for with different wanted values."""
    ours, theirs = _wanted(left), _wanted(right)
    shared = {f for f, _ in ours} & {f for f, _ in theirs}
    return {f for f in shared if {v for g, v in ours if g == f} != {v for g, v in theirs if g == f}}


def _edge_field(text: str, read: Callable[[str], Extraction], last: bool) -> str | None:
    """The field of the value that ends (``last``) or opens ``text``: the shortest run of up to
    ``EDGE_MAX_WORDS`` words (and an article before them) at that end read as one value that the run ends or
    opens with."""
    words = list(re.finditer(r"\S+", text))
    for n in range(1, min(EDGE_MAX_WORDS + 1, len(words)) + 1):
        run = text[words[-n].start() :] if last else text[: words[n - 1].end()]
        reading = read(run)
        if len(reading.conditions) != 1:
            continue
        edge = run.rstrip(" ,;") if last else _ARTICLE.sub("", run.lstrip())
        fits = (
            any(re.search(rf"(?<!\w){re.escape(w)}$", edge, re.IGNORECASE) for w in reading.value_words)
            if last
            else _opens_with(edge, reading.value_words)
        )
        if fits:
            return reading.conditions[0].field
    return None


def parallel(left: list[Condition], right: list[Condition]) -> bool:
    """Whether two clauses' own readings (no implied values) are parallel: each asks for at least
    ``CLAUSE_MIN_CONDITIONS`` wanted conditions ("not in-person" is none), and they ask one field for different
    values."""
    if min(len(_wanted(left)), len(_wanted(right))) < CLAUSE_MIN_CONDITIONS:
        return False
    return bool(_asked_differently(left, right))


def trailing(clause: str, earlier: set[str], read: Callable[[str], Extraction]) -> list[Condition]:
    """The conditions that end the last of parallel clauses on fields no earlier clause asks about, said once
    for every clause ("Merlot from Chile or Syrah from France under 20 euros"): the longest ending whose
    reading asks only such fields, where the words before it still make a clause of their own ("Merlot from
    Chile or Chardonnay under 20 euros" keeps the price to the Chardonnay). An ending that opens with a text
    value right after the clause's words is the clause's own ("... or Italian white Syrah"); after a comma, a
    semicolon or a colon it is said for every clause ("..., movies only"). Endings start among the last
    ``TRAILING_MAX_WORDS`` words up to the last character the clause's reading used (linear time on a long tail).
    ``read`` reads a piece (no implied values)."""
    found: list[Condition] = []
    whole = read(clause)
    own = whole.conditions  # an ending read as the clause reads it ("TV dramas": no shelf "Dramas")
    starts = [m.start() for m in re.finditer(r"\b\w", clause[: whole.read_end or len(clause)])]
    starts = starts[1:][-TRAILING_MAX_WORDS:]
    for start in reversed(starts):
        ending = read(clause[start:])
        if any(c.field in earlier for c in ending.conditions):
            break
        if not ending.conditions or not all(c in own for c in ending.conditions):
            continue
        if _opens_with(clause[start:], ending.value_words) and not re.search(r"[,;:]\s*$", clause[:start]):
            continue
        if len(_wanted(read(clause[:start]).conditions)) >= CLAUSE_MIN_CONDITIONS:
            found = ending.conditions
    return found


def _opens_with(text: str, words: list[str]) -> bool:
    """Whether ``text`` opens with one of ``words``."""
    return any(re.match(rf"{re.escape(word)}(?!\w)", text, re.IGNORECASE) for word in words)


def _wanted(conditions: list[Condition]) -> set[tuple[str, str]]:
    return {(c.field, str(c.value)) for c in conditions if c.op not in (Op.NE, Op.NIN)}


def either(left: Filter, right: Filter) -> Filter:
    """Either clause's filter; one that both clauses share is said once."""
    return left if left == right else Or((left, right))


__all__ = [
    "CLAUSE_MAX_JOINERS",
    "CLAUSE_MIN_CONDITIONS",
    "EDGE_MAX_WORDS",
    "TRAILING_MAX_WORDS",
    "Reader",
    "either",
    "joiners",
    "joins_values",
    "parallel",
    "read_parallel",
    "trailing",
]
