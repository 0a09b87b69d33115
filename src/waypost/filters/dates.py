"""Dates in metadata and filters: parsing, periods, and days since 1970-01-01 UTC.

Metadata values that are dates (ISO dates and datetimes, ``YYYY-MM``, ``YYYY/MM/DD``, written forms such as
``4 March 2021``, ``March 4, 2021``, ``Mar 2021``, RFC 2822 dates, ``datetime.date`` objects) are stored as
days since the epoch (a float; datetimes in UTC, naive ones read as UTC). Day-first or month-first
numeric forms such as ``03/04/2021`` are ambiguous and stay strings.

A filter value is a *period*: a year (``2021``), a month (``2021-03``), a day, or an instant (a datetime).
``>= 2021`` means from 2021-01-01, ``< 2021-06`` means before June 2021, ``= 2021-03`` the whole month.
"""

from __future__ import annotations

import calendar
import math
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_DIGIT = re.compile(r"\d")
_SECONDS_PER_DAY = 86400.0
MIN_YEAR, MAX_YEAR = 1000, 9999  # a bare number on a date field is a year only in this range

_MONTHS = {
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "may": 5,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}
MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|"
    r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_WEEKDAY = r"(?:(?:mon|tues?|wed(?:nes)?|thu(?:rs?)?|fri|sat(?:ur)?|sun)(?:day)?\.?,?\s+)?"
_ORD = r"(?:st|nd|rd|th)?"
_ZONE = r"(?:z|utc|gmt|ut|[+-]\d{2}(?::?\d{2})?)"
_TIME = rf"(\d{{1,2}}):(\d{{2}})(?::(\d{{2}})(?:[.,](\d{{1,9}}))?)?\s*({_ZONE})?"

# Date expressions as found in text; each names its groups so one parser reads them all.
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (
        "iso",
        re.compile(rf"(\d{{4}})-(\d{{2}})-(\d{{2}})(?:[t ]{_TIME})?", re.IGNORECASE),
    ),
    ("ymd_slash", re.compile(r"(\d{4})/(\d{1,2})/(\d{1,2})")),
    ("iso_month", re.compile(r"(\d{4})-(\d{2})")),
    (
        "dmy",
        re.compile(rf"{_WEEKDAY}(\d{{1,2}}){_ORD}\s+(?:of\s+)?({MONTH}),?\s+(\d{{4}})(?:,?\s+{_TIME})?", re.IGNORECASE),
    ),
    (
        "mdy",
        re.compile(rf"{_WEEKDAY}({MONTH})\s+(\d{{1,2}}){_ORD},?\s+(\d{{4}})(?:,?\s+{_TIME})?", re.IGNORECASE),
    ),
    ("my", re.compile(rf"({MONTH}),?\s+(?:of\s+)?(\d{{4}})", re.IGNORECASE)),
]
# The same forms for searching running text (the extractor), longest first; a bare year last.
DATE_IN_TEXT = (
    rf"(?:\d{{4}}-\d{{2}}-\d{{2}}(?:[tT]\d{{2}}:\d{{2}}(?::\d{{2}}(?:\.\d+)?)?(?:[zZ]|[+-]\d{{2}}:?\d{{2}})?)?"
    rf"|\d{{4}}/\d{{1,2}}/\d{{1,2}}"
    rf"|\d{{4}}-\d{{2}}(?!\d)"
    rf"|\d{{1,2}}{_ORD}\s+(?:of\s+)?{MONTH},?\s+\d{{4}}"
    rf"|{MONTH}\s+\d{{1,2}}{_ORD},?\s+\d{{4}}"
    rf"|{MONTH},?\s+(?:of\s+)?\d{{4}}"
    rf"|(?:1[5-9]|2[01])\d\d)(?![\w/-]|\.\d)"
)

# A day and month without a year ("15 July", "July 15th"), and a month's full name alone ("August"): read
# against today by the extractor (``yearless``), never as metadata values.
YEARLESS_DAY = (
    rf"\d{{1,2}}{_ORD}\s+(?:of\s+)?{MONTH}(?!\w|,?\s+(?:of\s+)?\d{{4}})"
    rf"|{MONTH}\s+\d{{1,2}}{_ORD}(?![\w:/-]|[.,]\d|,?\s+\d{{4}})"
)
MONTH_NAME = r"(?:january|february|march|april|may|june|july|august|september|october|november|december)(?!\w)"
_YEARLESS = re.compile(
    rf"(?:(\d{{1,2}}){_ORD}\s+(?:of\s+)?({MONTH})|({MONTH})(?:\s+(\d{{1,2}}){_ORD})?)", re.IGNORECASE
)


@dataclass(frozen=True)
class Period:
    """``[start, end)`` in days since the epoch; an instant has ``end == start`` and is compared inclusively."""

    start: float
    end: float
    precision: str  # "year", "month", "day" or "instant"

    def filter_value(self) -> int | str:
        """The canonical filter value naming this period: 2021, "2021-03", "2021-03-04" or an ISO instant."""
        day = date.fromordinal(math.floor(self.start) + EPOCH_ORDINAL)
        if self.precision == "year":
            return day.year
        if self.precision == "month":
            return f"{day.year:04d}-{day.month:02d}"
        if self.precision == "day":
            return day.isoformat()
        return format_day(self.start)


def _days(day: date) -> float:
    return float(day.toordinal() - EPOCH_ORDINAL)


def _instant_days(moment: datetime) -> float:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)  # naive datetimes are read as UTC
    offset = moment.utcoffset() or timedelta(0)
    seconds = moment.hour * 3600 + moment.minute * 60 + moment.second + moment.microsecond / 1e6
    return _days(moment.date()) + (seconds - offset.total_seconds()) / _SECONDS_PER_DAY


def format_day(days: float) -> str:
    """Days since the epoch as an ISO date (whole days) or a UTC datetime."""
    whole = math.floor(days)
    day = date.fromordinal(int(whole) + EPOCH_ORDINAL)
    if days == whole:
        return day.isoformat()
    moment = datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(days=days - whole)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def _zone(text: str | None) -> timezone:
    if not text or text.lower() in ("z", "utc", "gmt", "ut"):
        return UTC
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:4] or 0)
    if hours > 23 or minutes > 59:
        raise ValueError(f"bad offset {text!r}")
    return timezone(sign * timedelta(hours=hours, minutes=minutes))


def _moment(day: date, time: tuple[str | None, ...]) -> Period:
    hh, mm, ss, frac, zone = time
    if hh is None:
        return Period(_days(day), _days(day) + 1, "day")
    micro = int((frac or "0")[:6].ljust(6, "0"))
    moment = datetime(day.year, day.month, day.day, int(hh), int(mm or 0), int(ss or 0), micro, tzinfo=_zone(zone))
    start = _instant_days(moment)
    return Period(start, start, "instant")


def _month_number(text: str) -> int:
    return _MONTHS[text.lower().rstrip(".")[:3]]


def _month_period(year: int, month: int) -> Period:
    start = _days(date(year, month, 1))
    return Period(start, start + calendar.monthrange(year, month)[1], "month")


def year_period(year: int) -> Period:
    start = _days(date(year, 1, 1))
    return Period(start, start + (366 if calendar.isleap(year) else 365), "year")


def parse_text(text: str) -> Period | None:
    """The period a date string names (day, month or instant; never a bare year), or ``None``."""
    text = text.strip()
    if not 7 <= len(text) <= 48 or _DIGIT.search(text) is None:
        return None  # quick rejection: most metadata strings are not dates
    for kind, pattern in _PATTERNS:
        m = pattern.fullmatch(text)
        if m is None:
            continue
        g = m.groups()
        try:
            if kind == "iso":
                return _moment(date(int(g[0]), int(g[1]), int(g[2])), g[3:8])
            if kind == "ymd_slash":
                return _moment(date(int(g[0]), int(g[1]), int(g[2])), (None,) * 5)
            if kind == "iso_month":
                return _month_period(int(g[0]), int(g[1]))
            if kind == "dmy":
                return _moment(date(int(g[2]), _month_number(g[1]), int(g[0])), g[3:8])
            if kind == "mdy":
                return _moment(date(int(g[2]), _month_number(g[0]), int(g[1])), g[3:8])
            return _month_period(int(g[1]), _month_number(g[0]))
        except (ValueError, KeyError, OverflowError):  # looks like a date but is none (31 February): not a date
            return None
    return None


def period(value: Any, bare_year_strings: bool = True) -> Period | None:
    """The period a filter value names: a year number (1000-9999), a date string, a ``date`` or ``datetime``;
    ``None`` when it names none. ``bare_year_strings``: whether the string ``"2021"`` is a year too."""
    if isinstance(value, bool):
        return None
    if isinstance(value, datetime):
        start = _instant_days(value)
        return Period(start, start, "instant")
    if isinstance(value, date):
        return Period(_days(value), _days(value) + 1, "day")
    if isinstance(value, (int, float)):
        if MIN_YEAR <= value <= MAX_YEAR and float(value).is_integer():  # range first: float(10**400) overflows
            return year_period(int(value))
        return None
    if isinstance(value, str):
        text = value.strip()
        if bare_year_strings and re.fullmatch(r"\d{4}", text):
            return year_period(int(text)) if MIN_YEAR <= int(text) <= MAX_YEAR else None
        return parse_text(text)
    return None


def date_value(value: Any) -> float | None:
    """Days since the epoch of a metadata value that is a date (its start for a month), else ``None``.
    Numbers (a plain 2019 included) and bare-year strings are not dates."""
    if isinstance(value, (date, datetime)):
        found = period(value)
    elif isinstance(value, str):
        found = parse_text(value)
    else:
        return None
    return None if found is None else found.start


def display(value: date | datetime) -> str:
    """A ``date``/``datetime`` metadata value as the string it is shown and matched as."""
    return value.isoformat()


def yearless(text: str) -> tuple[int, int | None] | None:
    """``(month, day)`` of a date written without its year ("15 July" -> (7, 15); "August" -> (8, None)), or
    ``None`` when ``text`` is no such date (31 February included)."""
    m = _YEARLESS.fullmatch(text.strip())
    if m is None:
        return None
    month = _month_number(m.group(2) or m.group(3))
    day = m.group(1) or m.group(4)
    if day is None:
        return month, None
    try:
        date(2000, month, int(day))  # a leap year: 29 February exists
    except ValueError:
        return None
    return month, int(day)


def yearless_period(year: int, month: int, day: int | None) -> Period | None:
    """The period of a yearless date in ``year`` (29 February in a common year: ``None``)."""
    if day is None:
        return _month_period(year, month)
    try:
        return Period(_days(date(year, month, day)), _days(date(year, month, day)) + 1, "day")
    except ValueError:
        return None
