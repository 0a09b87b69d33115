"""Date phrases finer than a year ("after March 2021", "between 2019-05-01 and 2021-06", "last updated in
May 2022") against the date field the query names, else the collection's only date field. Bare years are
numbers (``waypost.filters.numbers``): they go to a year field first.

A date without its year ("before 15 July", "in August", "between 1 September and 30 November 2025") takes the
year of the other end of its range, else the year that puts it nearest today ("since March": the last March
on or before today); a range's end falls on or after its start. A month's name alone needs a word before it
that makes it a date ("in", "before", "since"...)."""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from datetime import date

from waypost.filters.dates import (
    DATE_IN_TEXT,
    EPOCH_ORDINAL,
    MONTH_NAME,
    YEARLESS_DAY,
    Period,
    period,
    yearless,
    yearless_period,
)
from waypost.filters.fields import FieldAliases
from waypost.filters.model import Condition, Op
from waypost.filters.text import FUNCTION_WORDS, stem

_DATE_MODIFIERS = frozenset({"last", "first", "originally", "recently"})
_D = rf"(?<![\w/-])({DATE_IN_TEXT}|{YEARLESS_DAY}|{MONTH_NAME})"  # after a word that makes it a date
_BARE = rf"(?<![\w/-])({DATE_IN_TEXT}|{YEARLESS_DAY})"
_DATE_PHRASES: list[tuple[re.Pattern[str], list[tuple[Op, int]]]] = [
    (re.compile(p, re.IGNORECASE), spec)
    for p, spec in [
        (rf"\bbetween\s+{_D}\s+and\s+{_D}", [(Op.GTE, 1), (Op.LTE, 2)]),
        (rf"\bfrom\s+{_D}\s*(?:to|until|till|through|-|–)\s*{_D}", [(Op.GTE, 1), (Op.LTE, 2)]),
        (rf"(?:\b(?:from|in)\s+)?{_BARE}\s+or\s+(?:later|after|newer)\b", [(Op.GTE, 1)]),
        (rf"(?:\b(?:from|in)\s+)?{_BARE}\s+or\s+(?:earlier|before|older)\b", [(Op.LTE, 1)]),
        (rf"\bsince\s+{_D}", [(Op.GTE, 1)]),
        (rf"\b(?:after|later\s+than|newer\s+than)\s+{_D}", [(Op.GT, 1)]),
        (rf"\b(?:before|earlier\s+than|older\s+than|prior\s+to)\s+{_D}", [(Op.LT, 1)]),
        (rf"\b(?:until|till|through)\s+{_D}", [(Op.LTE, 1)]),
        (rf"\b(?:in|on|during|from|dated)\s+{_D}", [(Op.EQ, 1)]),
        (rf"{_BARE}", [(Op.EQ, 1)]),
    ]
]
_LEAN = {Op.GTE: -1, Op.LT: 1, Op.LTE: 1}  # "since March": the last March; "before", "until": the next
_MONTH_OR_AFTER = re.compile(rf"\s*(?:,|or|and)\s+(?:{MONTH_NAME})", re.IGNORECASE)
_MONTH_OR_BEFORE = re.compile(rf"(?:{MONTH_NAME})\s*(?:,|or|and)\s*$", re.IGNORECASE)
_LEAD = re.compile(r"(\w+)\s+(?:in|on|during|from|since|before|after|until)\s+$")
_YEAR_AFTER = re.compile(r",?\s+(?:of\s+)?(last|this|next)\s+year\b", re.IGNORECASE)
_YEAR_SHIFT = {"last": -1, "this": 0, "next": 1}
# "may" and "march" are verbs too: in lower case, alone, they are months only before these or at the end
_AFTER_VERB_MONTH = re.compile(r"\s*(?:$|[.,;:!?)]|(?:and|or|to|until|till|through|onwards?|next|last|this)\b)")
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


def _not_a_month(query: str, m: re.Match[str], group: int) -> bool:
    """Whether a month's name alone is something else here: one of alternatives ("in July or August", read
    by no rule yet), a name ("August Wilson"), or part of a title or a story ("Light in August", "set in June")."""
    text = m.group(group)
    if text is None or yearless(text) is None or yearless(text)[1] is not None:  # type: ignore[index]
        return False
    if _MONTH_OR_AFTER.match(query, m.end()) or _MONTH_OR_BEFORE.search(query[: m.start()]):
        return True
    if re.match(r"\s+[A-Z][a-z]", query[m.end(group) :]):  # "August Wilson", "May Sarton"
        return True
    lead = _LEAD.search(query[: m.start(group)])
    if lead is None:
        return False
    word = lead.group(1)
    return word.lower() in ("set", "like")  # "a novel set in June", "books like Light in August"


def _verb_month(query: str, m: re.Match[str], group: int) -> bool:
    """Whether a lone lower-case "may" or "march" in the match is the verb ("movies that may scare")."""
    text = m.group(group)
    return text in ("may", "march") and not _AFTER_VERB_MONTH.match(query, m.end(group))


def _year_for(today: date, month: int, day: int | None, lean: int, held: tuple[float, float] | None) -> int:
    """The year of a yearless date: among last, this and next year, those whose month the field holds
    (``held``: its first and last day), then the last one on or before today (``lean`` -1: "since"), the first
    one on or after it (1: "before", "until") or the nearest (0)."""
    candidates = [today.year - 1, today.year, today.year + 1]
    if (month, day) == (2, 29):
        candidates = [y for y in candidates if calendar.isleap(y)] or candidates
    if held is not None:
        holding = [y for y in candidates if _month_days(y, month)[0] <= held[1] and _month_days(y, month)[1] > held[0]]
        candidates = holding or candidates
    safe = min(day or 1, 28)  # 29 February exists only in some years: compare its 28th
    past = [y for y in candidates if date(y, month, safe) <= today]
    ahead = [y for y in candidates if date(y, month, min(day or 28, 28)) >= today]
    if lean < 0 and past:
        return max(past)
    if lean > 0 and ahead:
        return min(ahead)
    return min(candidates, key=lambda y: abs((date(y, month, min(day or 15, 28)) - today).days))


def _month_days(year: int, month: int) -> tuple[float, float]:
    found = yearless_period(year, month, None)
    assert found is not None  # a month without a day always exists
    return found.start, found.end


def _periods(
    texts: list[str], today: date, lean: int, year: int | None = None, held: tuple[float, float] | None = None
) -> list[Period] | None:
    """The periods of a phrase's dates. A yearless one takes ``year`` (said after the phrase: "last year"), else
    the year of a dated one beside it, else the nearest year; a range's end falls on or after its start."""
    periods: list[Period | None] = [period(t) for t in texts]
    parts = [yearless(t) if p is None else None for t, p in zip(texts, periods, strict=True)]
    if any(p is None and part is None for p, part in zip(periods, parts, strict=True)):
        return None
    dated = [p for p in periods if p is not None and p.precision != "year"]
    for i, part in enumerate(parts):
        if part is None:
            continue
        month, day = part
        if year is not None:
            chosen = year
        elif dated:  # "between 1 September and 30 November 2025"
            chosen = date.fromordinal(int(dated[0].start) + EPOCH_ORDINAL).year
        elif i > 0 and periods[0] is not None:  # "from March to May": the end follows the start
            chosen = date.fromordinal(int(periods[0].start) + EPOCH_ORDINAL).year
        else:
            chosen = _year_for(today, month, day, lean, held)
        found = yearless_period(chosen, month, day)
        if found is not None and i > 0 and periods[0] is not None and found.end <= periods[0].start:
            found = yearless_period(chosen + 1, month, day)
        elif found is not None and i == 0 and dated and len(periods) > 1 and periods[1] is not None:
            if found.start >= periods[1].end:  # "from 1 December to 31 January 2026"
                found = yearless_period(chosen - 1, month, day)
        if found is None:
            return None
        periods[i] = found
    return [p for p in periods if p is not None]


def date_phrases(
    query: str, free: Free, mark: Mark, aliases: FieldAliases, today: date
) -> tuple[list[Condition], list[str]]:
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
            texts = [m.group(g) for _op, g in spec]
            if any(_verb_month(query, m, g) or _not_a_month(query, m, g) for _op, g in spec):
                continue
            named = _named_field(query, m.start(), free, aliases)
            if named is not None and named[0] not in dates:
                continue
            if named is None and len(dates) != 1:
                continue
            name, spans = named if named is not None else (dates[0], [])
            said_year = _YEAR_AFTER.match(query, m.end())  # "between March and May last year"
            year = None if said_year is None else today.year + _YEAR_SHIFT[said_year.group(1).lower()]
            lean = _LEAN.get(spec[0][0], 0) if len(spec) == 1 else 0
            found = _periods(texts, today, lean, year, aliases.catalog.date_range(name))
            if found is None or all(p.precision == "year" for p in found):
                continue
            if said_year is not None and any(period(t) is None for t in texts):
                mark(m.end(), said_year.end())
            mark(m.start(), m.end())
            for a, b in spans:
                mark(a, b)
            items = [(op, p.filter_value()) for (op, _g), p in zip(spec, found, strict=True)]
            conds.extend(Condition(name, op, value) for op, value in items)
            said = query[min([m.start(), *(a for a, _ in spans)]) : m.end()].strip()
            notes.append(f"{said!r} -> " + " AND ".join(f"{name} {op.symbol} {value}" for op, value in items))
    return conds, notes
