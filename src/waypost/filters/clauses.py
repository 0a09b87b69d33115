"""Parallel clauses: "red wines from France and white wines from Italy", "Korean movies and Swedish TV shows"
each name their own values of the same fields, and mean (red AND France) OR (white AND Italy). Read as one
clause, the second's values are dropped or contradict the first's."""

from __future__ import annotations

import re

from waypost.filters.model import Condition, Filter, Op, Or

JOINER = re.compile(r"\b(?:and|or|plus)\b|[,;]", re.IGNORECASE)
CLAUSE_MIN_CONDITIONS = 2  # a clause with its own words: a value and what qualifies it ("red wines from France")
CLAUSE_MAX_JOINERS = 6  # a question joins a few clauses; a pasted text with more is read as one (linear time)


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


def parallel(left: list[Condition], right: list[Condition]) -> bool:
    """Whether two clauses' own readings (no implied values) are parallel: each asks for at least
    ``CLAUSE_MIN_CONDITIONS`` wanted conditions ("not in-person" is none), and they ask one field for different
    values."""
    ours = {(c.field, str(c.value)) for c in left if c.op not in (Op.NE, Op.NIN)}
    theirs = {(c.field, str(c.value)) for c in right if c.op not in (Op.NE, Op.NIN)}
    if min(len(ours), len(theirs)) < CLAUSE_MIN_CONDITIONS:
        return False
    fields = {f for f, _ in ours} & {f for f, _ in theirs}
    return any({v for g, v in ours if g == f} != {v for g, v in theirs if g == f} for f in fields)


def either(left: Filter, right: Filter) -> Filter:
    """Either clause's filter; one that both clauses share is said once."""
    return left if left == right else Or((left, right))


__all__ = ["CLAUSE_MAX_JOINERS", "CLAUSE_MIN_CONDITIONS", "either", "joiners", "parallel"]
