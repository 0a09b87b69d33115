"""Time said relative to today: "in the last 5 years", "the past 30 days", "this year", "recent", "in the next
30 days", "next month", "this week", "upcoming", "past events", "today", "since yesterday".

Each phrase gives bounds in years, for a field of years, and the same bounds as days, for a date field.
"upcoming" and "past" (before a plural noun) say nothing about a field of years ("upcoming movies" is no
release year), so they bind to date fields only. Calendar phrases without a count ("next month", "last year", "this
week") are the calendar period, except "last week" and "last month", which run to today (what was listed
yesterday was listed "last week" too); phrases with a count or "the" ("the next 30 days", "within the next month") run
from today."""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta

from waypost.filters.model import Op

DAYS_PER_MONTH = 30.436875  # a Gregorian month on average ("the last 30 days" on a date field)
RECENT_YEARS = 3  # "recent" means released in this many years before the current one, or later
WORD_NUMBERS = {
    "a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40,
    "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100, "few": 3, "couple of": 2,
}  # fmt: skip
_COUNT = rf"(\d+|{'|'.join(WORD_NUMBERS)})"
_UNIT = r"(years?|decades?|months?|weeks?|days?)"
_MONTHS_PER = {"decade": 120.0, "year": 12.0, "month": 1.0, "week": 7 / DAYS_PER_MONTH, "day": 1 / DAYS_PER_MONTH}

_LAST = re.compile(
    rf"\b(?:(?:in|over|during|within|from)\s+)?(the\s+)?(last|past|previous)\s+(?:{_COUNT}\s+)?{_UNIT}\b",
    re.IGNORECASE,
)
_NEXT = re.compile(
    rf"\b(?:(?:in|over|during|within|for)\s+)?(the\s+)?(?:next|coming|upcoming|following)\s+(?:{_COUNT}\s+)?{_UNIT}\b",
    re.IGNORECASE,
)
_THIS = re.compile(r"\b(?:from\s+|in\s+|during\s+)?this\s+(year|month|week)\b", re.IGNORECASE)
_DAY = re.compile(r"\b(?:(from|since)\s+)?(today|yesterday)\b(?!['’])", re.IGNORECASE)  # not "today's"
_RECENT = re.compile(r"\brecent(?:ly)?\b", re.IGNORECASE)
_UPCOMING = re.compile(r"\b(?:upcoming|forthcoming)\b", re.IGNORECASE)  # not "future" ("the future of AI")
# "past events", "show me past concerts": "past" first, or after a word that asks for a list ("walk past concerts",
# "previous speakers" are no dates)
_PAST = re.compile(
    r"(?:^|\b(?:the|all|any|some|show(?:\s+me)?|list|find|see|browse|search)\s+)(past)\s+(?=[^\W\d_]{3,}s\b)",
    re.IGNORECASE,
)
_OF_AFTER = re.compile(r"\s+of\b", re.IGNORECASE)  # "the last days of Pompeii", "the next weeks of training"


@dataclass(frozen=True)
class RelativeTime:
    """A phrase's span; its bounds in years (a field of years); the same bounds as dates (a date field), or
    none where the years serve a date field too ("this year"); whether only a date field may take it."""

    start: int
    end: int
    years: tuple[tuple[Op, float], ...]
    dates: tuple[date, ...] = ()
    dates_only: bool = False
    day_only: bool = False  # a day ("today", "since yesterday"): only a date field takes it
    reaches: date | None = None  # the first day of a time from today on: a field must hold values as late


def months_before(today: date, months: float) -> date:
    """``today`` moved back by ``months`` (forward when negative); whole months keep the day of the month."""
    if not float(months).is_integer():  # weeks and days: exact days
        return today - timedelta(days=round(months * DAYS_PER_MONTH))
    total = today.year * 12 + today.month - 1 - int(months)
    year, month = divmod(total, 12)
    return date(year, month + 1, min(today.day, 28))


def number_of(text: str) -> float:
    """A count written in digits or as an English number word ("3", "three", "a")."""
    text = text.lower()
    return float(text) if text[0].isdigit() else float(WORD_NUMBERS[text])


def _calendar(today: date, unit: str, ahead: int) -> tuple[date, date]:
    """The first and last day of this (``ahead`` 0), the next (1) or the last (-1) calendar week, month or
    year."""
    if unit == "week":
        first = today - timedelta(days=today.weekday()) + timedelta(weeks=ahead)
        return first, first + timedelta(days=6)
    if unit == "month":
        year, month = divmod(today.year * 12 + today.month - 1 + ahead, 12)
        return date(year, month + 1, 1), date(year, month + 1, calendar.monthrange(year, month + 1)[1])
    return date(today.year + ahead, 1, 1), date(today.year + ahead, 12, 31)


def _period(start: int, end: int, first: date, last: date, today: date) -> RelativeTime:
    """A period from ``first`` to ``last``; from today on, a field must hold values that late to take it."""
    reaches = first if last >= today else None
    if (first.month, first.day, last.month, last.day) == (1, 1, 12, 31) and first.year == last.year:
        return RelativeTime(start, end, ((Op.EQ, first.year),), reaches=reaches)  # a year, on either field
    return RelativeTime(start, end, ((Op.GTE, first.year), (Op.LTE, last.year)), (first, last), reaches=reaches)


def relative_times(query: str, ok: Callable[[int, int], bool], today: date) -> list[RelativeTime]:
    """Every relative time phrase in the parts of ``query`` that ``ok(start, end)`` allows, in the order the
    caller should take them (a later one never overlaps an earlier one it accepted)."""
    out: list[RelativeTime] = []
    taken: list[tuple[int, int]] = []

    def fine(a: int, b: int) -> bool:
        return ok(a, b) and not any(a < y and x < b for x, y in taken)

    def add(found: RelativeTime) -> None:
        out.append(found)
        taken.append((found.start, found.end))

    year = today.year
    for m in _LAST.finditer(query):
        if not fine(m.start(), m.end()) or _OF_AFTER.match(query, m.end()):
            continue
        unit = m.group(4).lower()
        if m.group(1) is None and m.group(3) is None and unit == "year":  # "last year" is 2024; "last week" rolls
            add(_period(m.start(), m.end(), *_calendar(today, unit, -1), today))
        else:
            months = number_of(m.group(3) or "a") * _MONTHS_PER[unit.rstrip("s")]
            since = months_before(today, months)
            add(RelativeTime(m.start(), m.end(), ((Op.GTE, year - -(-months // 12)),), (since,)))
    for m in _NEXT.finditer(query):
        if not fine(m.start(), m.end()) or _OF_AFTER.match(query, m.end()):
            continue
        unit = m.group(3).lower().rstrip("s")
        if m.group(1) is None and m.group(2) is None and unit in ("week", "month", "year"):  # "next month"
            add(_period(m.start(), m.end(), *_calendar(today, unit, 1), today))
            continue
        months = number_of(m.group(2) or "a") * _MONTHS_PER[unit]
        add(_period(m.start(), m.end(), today, months_before(today, -months), today))
    for m in _THIS.finditer(query):
        if not fine(m.start(), m.end()):
            continue
        if m.group(1).lower() == "year":
            add(RelativeTime(m.start(), m.end(), ((Op.EQ, year),), reaches=date(year, 1, 1)))
        else:
            add(_period(m.start(), m.end(), *_calendar(today, m.group(1).lower(), 0), today))
    for m in _DAY.finditer(query):  # "posted yesterday", "listed today", "since yesterday": a date field's day
        if not fine(m.start(), m.end()):
            continue
        day = today - timedelta(days=1) if m.group(2).lower() == "yesterday" else today
        last = today if (m.group(1) or "").lower() == "since" else day
        bounds = ((Op.GTE, float(day.year)), (Op.LTE, float(last.year)))
        add(RelativeTime(m.start(), m.end(), bounds, (day, last), day_only=True, reaches=day))
    for m in _RECENT.finditer(query):
        if fine(m.start(), m.end()):
            add(RelativeTime(m.start(), m.end(), ((Op.GTE, year - RECENT_YEARS),)))
    for m in _UPCOMING.finditer(query):
        if fine(m.start(), m.end()):
            add(RelativeTime(m.start(), m.end(), ((Op.GTE, year),), (today,), dates_only=True, reaches=today))
    for m in _PAST.finditer(query):
        if fine(m.start(1), m.end(1)):
            add(RelativeTime(m.start(1), m.end(1), ((Op.LT, year),), (today,), dates_only=True))
    return out
