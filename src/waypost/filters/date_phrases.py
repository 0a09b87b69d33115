"""Date phrases finer than a year ("after March 2021", "between 2019-05-01 and 2021-06", "last updated in
May 2022") against the date field the query names, else the collection's only date field. Bare years are
numbers (``waypost.filters.numbers``): they go to a year field first."""

from __future__ import annotations

import re
from collections.abc import Callable

from waypost.filters.dates import DATE_IN_TEXT, Period, period
from waypost.filters.fields import FieldAliases
from waypost.filters.model import Condition, Op
from waypost.filters.text import FUNCTION_WORDS, stem

_DATE_MODIFIERS = frozenset({"last", "first", "originally", "recently"})
_D = rf"(?<![\w/-])({DATE_IN_TEXT})"
_DATE_PHRASES: list[tuple[re.Pattern[str], list[tuple[Op, int]]]] = [
    (re.compile(p, re.IGNORECASE), spec)
    for p, spec in [
        (rf"\bbetween\s+{_D}\s+and\s+{_D}", [(Op.GTE, 1), (Op.LTE, 2)]),
        (rf"\bfrom\s+{_D}\s*(?:to|until|till|through|-|–)\s*{_D}", [(Op.GTE, 1), (Op.LTE, 2)]),
        (rf"(?:\b(?:from|in)\s+)?{_D}\s+or\s+(?:later|after|newer)\b", [(Op.GTE, 1)]),
        (rf"(?:\b(?:from|in)\s+)?{_D}\s+or\s+(?:earlier|before|older)\b", [(Op.LTE, 1)]),
        (rf"\bsince\s+{_D}", [(Op.GTE, 1)]),
        (rf"\b(?:after|later\s+than|newer\s+than)\s+{_D}", [(Op.GT, 1)]),
        (rf"\b(?:before|earlier\s+than|older\s+than|prior\s+to)\s+{_D}", [(Op.LT, 1)]),
        (rf"\b(?:until|till|through)\s+{_D}", [(Op.LTE, 1)]),
        (rf"\b(?:in|on|during|from|dated)\s+{_D}", [(Op.EQ, 1)]),
        (rf"{_D}", [(Op.EQ, 1)]),
    ]
]
Mark = Callable[[int, int], None]
Free = Callable[[int, int], bool]


def _named_field(query: str, start: int, free: Free, aliases: FieldAliases) -> tuple[str, list[tuple[int, int]]] | None:
    """A date or numeric field named by one of the three words before ``start`` ("last updated in ..."),
    with the character spans of the naming words."""
    words = [m for m in re.finditer(r"[^\W\d_]+", query[:start]) if free(m.start(), m.end())][-3:]
    dates = aliases.catalog.date_fields()
    for i in range(len(words) - 1, -1, -1):
        word = words[i].group(0).lower()
        if word in FUNCTION_WORDS or len(word) < 3:
            continue
        named = [n for n, stems in aliases.names.items() if stem(word) in stems and word not in ("date", "time")]
        if not named:
            continue
        spans = [words[i].span()]
        if i > 0 and words[i - 1].group(0).lower() in _DATE_MODIFIERS and words[i - 1].end() + 1 >= words[i].start():
            spans.append(words[i - 1].span())
        return ([n for n in named if n in dates] or named)[0], spans
    return None


def date_phrases(query: str, free: Free, mark: Mark, aliases: FieldAliases) -> tuple[list[Condition], list[str]]:
    """Conditions from date phrases with at least one month, day or instant in them."""
    dates = aliases.catalog.date_fields()
    conds: list[Condition] = []
    notes: list[str] = []
    if not dates:
        return conds, notes
    for pattern, spec in _DATE_PHRASES:
        for m in pattern.finditer(query):
            if not free(m.start(), m.end()):
                continue
            periods = [period(m.group(g)) for _op, g in spec]
            found: list[Period] = [p for p in periods if p is not None]
            if len(found) != len(periods) or all(p.precision == "year" for p in found):
                continue
            named = _named_field(query, m.start(), free, aliases)
            if named is not None and named[0] not in dates:
                continue
            if named is None and len(dates) != 1:
                continue
            name, spans = named if named is not None else (dates[0], [])
            mark(m.start(), m.end())
            for a, b in spans:
                mark(a, b)
            items = [(op, p.filter_value()) for (op, _g), p in zip(spec, found, strict=True)]
            conds.extend(Condition(name, op, value) for op, value in items)
            said = query[min([m.start(), *(a for a, _ in spans)]) : m.end()].strip()
            notes.append(f"{said!r} -> " + " AND ".join(f"{name} {op.symbol} {value}" for op, value in items))
    return conds, notes
