"""Numbers, ranges, comparisons, decades and relative years in a query, as phrases (``find_phrases``).

"8.5 or more" is >= 8.5, "above 79" is > 79, "no longer than 120 min" is <= 120, "between 1990 and 1995"
and "1990-1995" include both ends, "the 2010s" is 2010..2019, "in the last 5 years" is >= this year - 5,
"under an hour" is < 1 hour. ``waypost.filters.binding`` binds each phrase to the field it talks about.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date

from waypost.filters.fields import UNITS
from waypost.filters.model import Op
from waypost.filters.relative import WORD_NUMBERS, months_before, number_of, relative_times

_DECADE_WORDS = {
    "twenties": 20, "thirties": 30, "forties": 40, "fifties": 50, "sixties": 60, "seventies": 70,
    "eighties": 80, "nineties": 90,
}  # fmt: skip
_MORE = "more greater higher longer larger bigger heavier newer later pricier taller wider better costlier".split()
_LESS = "less fewer lower shorter smaller lighter cheaper earlier younger worse".split()
_CMP = "|".join([*_MORE, *_LESS, "older"])
# (pattern ending right before the number, op); the first that matches wins, so longer phrases come first
_PREFIXES: list[tuple[str, Op | str]] = [
    (rf"\bno(?:t)?\s+({_CMP})\s+than", "not"),
    (rf"\b({_CMP})\s+than", "cmp"),
    (r"\b(?:at\s+least|no\s+less\s+than|not\s+less\s+than|a\s+minimum\s+of|minimum\s+of|minimum|min\.?|"
     r"starting\s+(?:at|from|in)|as\s+of)|>=|≥|=>", Op.GTE),
    (r"\b(?:at\s+most|up\s+to|a\s+maximum\s+of|maximum\s+of|maximum|max\.?|within)|<=|≤|=<", Op.LTE),
    (r"\b(?:until|till|through|thru)", Op.LTE),
    (r"\b(?:over|above|exceeding|beyond|after)|>", Op.GT),
    (r"\b(?:under|below|before|prior\s+to)|<", Op.LT),
    (r"\bsince", Op.GTE),
    (r"\b(?:in|during|from|of|dated)", "year"),
]  # fmt: skip
_PREFIX = [(re.compile(rf"(?:{p})\s*(?:the\s+|a\s+|an\s+)?$", re.IGNORECASE), op) for p, op in _PREFIXES]
_NOT_A_FILTER = re.compile(
    r"\b(?:top|best|worst|first|last|#|no\.|number|part|vol\.?|volume|chapter|episode|season|page)\s*$",
    re.IGNORECASE,
)
_SUFFIX_MORE = r"more|higher|greater|above|over|up|upwards|later|newer|after|better|longer|bigger|larger|heavier|plus"
_SUFFIX_LESS = r"less|fewer|lower|below|under|earlier|before|shorter|smaller|lighter|cheaper|worse"
# "20 euros and under"; not "over 20 euros and under 40 euros" (nor "... and less than USD 40", "... and under
# twelve"), where the word opens a number of its own
_NUMBER_AHEAD = (
    r"\s*(?:than\s+)?(?:[$€£]|(?:eur|usd|gbp|chf)(?![a-z]))?\s?(?:\d|"
    rf"(?:{'|'.join(w for w in WORD_NUMBERS if w not in ('a', 'few', 'couple of'))})\b)"
)
_SUFFIX = re.compile(
    rf"^(?:(?:\s+(?!or\b|and\b)[a-z]+)?\s*(?:or|and)\s+(?:({_SUFFIX_MORE})|({_SUFFIX_LESS})|(older))\b(?!{_NUMBER_AHEAD})|(\+)|\s+plus\b|\s+onwards?\b)",
    re.IGNORECASE,
)
# "12,500", "12 500" (a space, a no-break or a narrow no-break space between groups), "12500", "8.5"; "30k"/"30K"
_DIGITS = r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
# "30 000 euros", "€12 500", "120 000 km": groups split by spaces (see ``_grouped``)
_SPACED = r"(?P<num>\d{1,3}(?:[ \u00a0\u202f]\d{3})+)(?![\d,.])"
_ZEROS = re.compile(r"\s000$|\s000\s")
_RANGE_GAP = re.compile(r"\s*(?:-|–|to|and)\s*", re.IGNORECASE)
_MONEY_AFTER = re.compile(r"\s?(?:[$€£]|(?:eur|euros?|usd|dollars?|gbp|pounds?|chf|francs?)\b)", re.IGNORECASE)
_SUFFIX_LIMIT = re.compile(
    r"^(?:\s+(?!or\b|and\b)[a-z]+)?\s*(?:(max\b\.?|maximum\b|at\s+most\b|tops\b)|(?P<min>min\b\.?|minimum\b|at\s+least\b))",
    re.IGNORECASE,
)
# a currency before the number: a sign or a code ("$20", "EUR 30", "usd2000")
_CURRENCY = r"(?P<cur>[$€£]|(?i:usd|eur|gbp|chf)(?![a-zA-Z]))"
_NUMBER = re.compile(rf"(?<![\w.\-/]){_CURRENCY}?\s?{_DIGITS}(?P<k>[kK]\b)?(?P<pct>%)?")
_DATE_LIKE = re.compile(r"\d{4}[-/]\d{1,2}(?!\d)|\d{1,2}/\d{1,2}/\d")
_NUMBER_AT = re.compile(rf"{_CURRENCY}?\s?{_DIGITS}(?P<k>[kK]\b)?(?P<pct>%)?")
_SPACED_AT = re.compile(rf"{_CURRENCY}?\s?{_SPACED}(?P<k>(?!))?(?P<pct>(?!))?")
_SPACED_NUMBER = re.compile(rf"(?<![\w.\-/]){_SPACED_AT.pattern}")


def _grouped(query: str, m: re.Match[str] | None) -> bool:
    """Whether a space-grouped number is one number: an amount of money ("30 000 euros", "€12 500"), or one
    with a group of 000 ("120 000 km"); "a pack of 6 330 ml cans" is two."""
    if m is None:
        return False
    return bool(m.group("cur") or _MONEY_AFTER.match(query, m.end()) or _ZEROS.search(m.group("num")))


def _number_at(query: str, pos: int, grouped: bool = False) -> re.Match[str] | None:
    """The number starting at ``pos`` (a range's second end); ``grouped``: the first end was a space-grouped
    number, so this one may be too ("between $8 000 and 12 500")."""
    spaced = _SPACED_AT.match(query, pos)
    return spaced if spaced is not None and (grouped or _grouped(query, spaced)) else _NUMBER_AT.match(query, pos)


def _numbers(query: str) -> list[re.Match[str]]:
    """Every number of the query, left to right; space-grouped thousands as ``_grouped`` says, and the other end
    of a range with such a number."""
    candidates = list(_SPACED_NUMBER.finditer(query))
    spaced = [m for m in candidates if _grouped(query, m)]
    for m in candidates:  # "€12 500-30 500": the second end belongs to the first
        if m not in spaced and any(_RANGE_GAP.fullmatch(query[a.end() : m.start()]) for a in spaced):
            spaced.append(m)
    plain = [m for m in _NUMBER.finditer(query) if not any(s.start() <= m.start() < s.end() for s in spaced)]
    return sorted(spaced + plain, key=lambda m: m.start())


# "2015 L'Evangile": no litres; "5km-10km": a range's first end may carry the unit
_UNIT_AFTER = re.compile(r"^\s?-?\s?([a-zA-Z]+\.?|[$€£])(?![\w'’]|-(?!\d))")
_RANGE_JOIN = re.compile(r"^\s*(?:-|–|to|until|till|through|and)\s*", re.IGNORECASE)
_DECADE = re.compile(
    r"(?<![\w'’])(?:the\s+)?(?:(early|mid|late)[\s-]*)?(?:['’](\d0)|(1[5-9]\d0|20\d0|\d0))['’]?s\b"
    rf"|\b(?:the\s+)?(?:(early|mid|late)[\s-]*)?({'|'.join(_DECADE_WORDS)})\b",
    re.IGNORECASE,
)
_AGE = re.compile(rf"\b(\d+|{'|'.join(WORD_NUMBERS)})[\s-]+(?:years?|yrs?)[\s-]+old\b", re.IGNORECASE)
# "older than 10 years", "not older than 5 years", "younger than 3 yrs": an age without "old" after it
_AGE_THAN = re.compile(
    rf"(?P<neg>\bno(?:t)?\s+)?\b(?P<cmp>older|younger|newer)\s+than\s+(?P<n>\d+|{'|'.join(WORD_NUMBERS)})[\s-]+"
    r"(?:years?|yrs?)\b(?![\s-]+old\b)",
    re.IGNORECASE,
)
_NUMBER_WORD = re.compile(
    rf"\b(?:{'|'.join(w for w in WORD_NUMBERS if w not in ('a', 'few', 'couple of'))})\b", re.IGNORECASE
)
# "a dozen", "half a dozen", "two dozen", "3 dozen": twelve at a time
_DOZEN = re.compile(
    r"\b(?:(?P<half>half)\s+an?\s+|(?P<count>(?<![\d.,])\d+(?:\.\d+)?|an|"
    rf"{'|'.join(w for w in WORD_NUMBERS if w != 'few')})\s+)dozens?\b",
    re.IGNORECASE,
)
_RANGE_BEFORE = re.compile(r"\d\s*(?:-|–|to|and|or)\s*$", re.IGNORECASE)  # a range's first end before a count
# "grand" is a thousand (of money) except in the compounds it makes ("10 grand slams", "a grand piano")
_GRAND = r"grand(?!\s+(?:slams?|prix|pianos?|canyon|jur(?:y|ies)|masters?|finals?|opening|tours?|totals?)\b)"
# A quantity in words: "half an hour", "an hour and a half", "one and a half days", "half a km", "a kilo",
# "under a grand"
_SPOKEN_UNITS = "|".join(
    [_GRAND, *sorted((u for u in UNITS if u.isalpha() and len(u) > 1 and u != "grand"), key=len, reverse=True)]
)
_SPOKEN_QUANTITY = re.compile(
    r"\b(?:(?P<half>half)\s+an?\s+|(?P<whole>an?|one|two|three|\d+)\s+(?:(?P<and_half>and\s+a\s+half)\s+)?)"
    rf"(?P<unit>{_SPOKEN_UNITS})\b(?P<tail>\s+and\s+a\s+half\b)?",
    re.IGNORECASE,
)
_SCALES = {"hundred": 100.0, "thousand": 1000.0, "million": 1e6, "grand": 1000.0}  # "2 grand": $2,000 or €2,000
_SCALE = re.compile(rf"\s+(hundred|thousand|million|{_GRAND})\b", re.IGNORECASE)  # "ten thousand", "2 million"
# People whose age a phrase may give instead of the item's ("for kids less than 10 years old", "over 65 years
# old actors")
_PEOPLE = (
    r"kids?|child|children|bab(?:y|ies)|toddlers?|teens?|teenagers?|people|persons?|adults?|actors?|actress(?:es)?|"
    r"m[ae]n|wom[ae]n|boys?|girls?|sons?|daughters?|players?|patients?|students?|someone|anyone|users?"
)
MAX_AGE = 120  # a person's age is at most this
_AGE_COMPARISON = re.compile(r"(?:over|under|above|below|(?:older|younger|less|more)\s+than|at\s+(?:least|most))", re.I)
_PERSON_BEFORE = re.compile(rf"\b(?:{_PEOPLE}|aged?)\s+$", re.IGNORECASE)
_TIME_WORD = re.compile(
    r"(?:before|after|since|until|till|prior\s+to|(?:newer|older|younger|earlier|later)\s+than)\b", re.IGNORECASE
)
_AGE_WORDS = {"older": Op.GT, "not older": Op.LTE, "younger": Op.LT, "not younger": Op.GTE}  # of an age in years
YEARS_SPAN = 50  # a range of two years at most this far apart is a span of years ("2000-2010"), not of prices
_PERSON_AFTER = re.compile(rf"\s+(?:{_PEOPLE})\b", re.IGNORECASE)
# The person an age is said of, right before it: "for my dad who is", "my son, he's", "kids that are", "grandma"
_FAMILY = (
    r"dad|mum|mom|mother|father|grandma|grandpa|granny|grandmother|grandfather|grandparents?|parents?|wife|husband"
)
# A driver is a grown-up: "a driver older than 70 years" is the driver's age, "a learner driver under 5 years
# old" the car's
_DRIVER_SUBJECT = re.compile(
    r"\bdrivers?(?:\W+(?:both|all))?\s+(?:(?:who|that)\s+)?(?:(?:is|are|was|were)\s+)?$", re.IGNORECASE
)
DRIVING_AGE = 16
_PERSON_SUBJECT = re.compile(
    rf"(?:\b(?:{_PEOPLE}|{_FAMILY}|partner|friends?|mates?|retirees?|seniors?|pensioners?)"
    r"(?:\W+(?:both|all))?\s+(?:(?:who|that)\s+)?"  # "for my grandparents, both older than 70"
    r"(?:(?:is|are|was|were)\s+)?"  # "kids that are", "my dad", "grandma"
    r"|\b(?:owners?|sellers?|buyers?)\s+(?:(?:who|that)\s+)?(?:is|are|was|were)\s+"  # "whose owner is"
    r"|\b(?:who|he|she|i|we)\s+(?:is|am|are|was|were)\s+|\b(?:who|he|she|i|we)['’](?:s|m|re)\s+"
    r"|\b(?:we|us)\W+(?:(?:both|all)\s+)?)$",  # "we're over 70", "for us, both over 70"; not "they": the items
    re.IGNORECASE,
)


@dataclass
class NumberPhrase:
    start: int
    end: int
    bounds: list[tuple[Op | str, float]]  # "older": < on a date, > otherwise
    unit: str | None = None
    time_only: bool = False  # a decade, a relative period, "in 1995": only a year or date field
    bare: bool = False  # no comparison word: binds only to a field named right beside it
    dates: tuple[date, ...] = ()  # per bound, the day a time relative to today means on a date field
    dates_only: bool = False  # "upcoming", "past events": never a field of years
    day_only: bool = False  # "today", "since yesterday": only a date field
    age: tuple[Op, float] | None = None  # "less than 5 years old": (LT, 5), for a field of ages if there is one
    quiet: tuple[int, int] | None = None  # a span of the phrase that names no field ("min" in "3 gears min")
    reaches: date | None = None  # a time from today on: only a field with values from this day on
    person_age: bool = False  # right after a person ("people over 16", "kids under 12"): no field of the item
    dated: bool = False  # said as a time ("before 2010", "2000-2010", "2018+"): a year, if a date field holds it

    @property
    def value(self) -> float:
        return float(self.bounds[0][1])


def _num(m: re.Match[str]) -> float:
    value = float(re.sub(r"[,\s]", "", m.group("num")))
    return value * 1000 if m.group("k") else value


def _unit_after(query: str, end: int) -> tuple[str | None, int]:
    m = _UNIT_AFTER.match(query[end:])
    if m and m.group(1).rstrip(".").lower() in UNITS and m.group(1).lower() != "grand":  # a scale (_SCALE)
        return m.group(1).rstrip(".").lower(), end + m.end()
    return None, end


def _scale_after(query: str, m: re.Match[str]) -> tuple[float, int, str | None]:
    """The scale word after a number ("thousand", "million", "grand"): its factor (1 for none), where the
    number's words end, and "grand" where it is the scale (a sum of money). "30k" and "85%" take none."""
    scale = None if m.group("k") or m.group("pct") else _SCALE.match(query, m.end())
    if scale is None:
        return 1.0, m.end(), None
    word = scale.group(1).lower()
    return _SCALES[word], scale.end(), "grand" if word == "grand" else None


def year_like(value: float) -> bool:
    """Whether a number could be a calendar year (an integer from 1000 to 2999)."""
    return float(value).is_integer() and 1000 <= value <= 2999


def _grown_up(before: str, years: float) -> bool:
    """An age said of a driver right before it, when a driver could be that old."""
    return years >= DRIVING_AGE and _DRIVER_SUBJECT.search(before) is not None


def _age(start: int, end: int, cmp: Op, years: float, today: date) -> NumberPhrase:
    """An item's age compared with ``years`` ("less than 5 years old": made in the last 5 years)."""
    newer = Op.GTE if cmp in (Op.LT, Op.LTE) else Op.LTE
    since = (months_before(today, 12 * years),)
    return NumberPhrase(start, end, [(newer, today.year - years)], time_only=True, dates=since, age=(cmp, years))


def _decade(m: re.Match[str], this_year: int) -> tuple[int, int]:
    mod = (m.group(1) or m.group(4) or "").lower()
    if m.group(3) and len(m.group(3)) == 4:
        start = int(m.group(3))
    else:
        two = int(m.group(2) or m.group(3) or _DECADE_WORDS[m.group(5).lower()])
        start = 2000 + two if 2000 + two <= this_year else 1900 + two
    lo, hi = {"early": (0, 3), "mid": (3, 6), "late": (7, 9)}.get(mod, (0, 9))
    return start + lo, start + hi


LOOKBACK = 64  # characters before a number that a phrase about it may take ("no less than the", "between the years")


def _lookback(query: str, end: int) -> tuple[str, int]:
    """The text before ``end`` that a prefix phrase may take, from a word's start, and its offset in ``query``:
    prefix patterns end in ``$``, so searching the whole prefix for every number would be quadratic."""
    start = max(0, end - LOOKBACK)
    if start > 0:
        space = query.find(" ", start, end)
        start = end if space < 0 else space + 1
    return query[start:end], start


def _prefix_op_before(query: str, end: int) -> tuple[Op | str | None, int]:
    """``_prefix_op`` of the text before ``end``, with its position in ``query``."""
    text, offset = _lookback(query, end)
    op, at = _prefix_op(text)
    return op, at + offset


def _prefix_op(text: str) -> tuple[Op | str | None, int]:
    for pattern, op in _PREFIX:
        m = pattern.search(text)
        if m is None:
            continue
        if op in ("cmp", "not"):
            word = m.group(1).lower()
            more = word in _MORE
            if word in ("older", "younger"):  # a year ("older than 1990") or an age ("older than 10")
                return (word if op == "cmp" else f"not {word}"), m.start()
            if op == "not":
                return (Op.LTE if more else Op.GTE), m.start()
            return (Op.GT if more else Op.LT), m.start()
        return op, m.start()
    return None, len(text)


def find_phrases(query: str, free: Callable[[int, int], bool], today: date) -> list[NumberPhrase]:
    """Every number phrase in the parts of ``query`` that ``free(start, end)`` allows."""
    found: list[NumberPhrase] = []
    taken = bytearray(len(query) + 1)  # characters a phrase already holds

    def ok(a: int, b: int) -> bool:
        return free(a, b) and not any(taken[a:b])

    def add(p: NumberPhrase) -> None:
        found.append(p)
        taken[p.start : p.end] = b"\x01" * (p.end - p.start)

    year = today.year
    for rel in relative_times(query, ok, today):
        add(
            NumberPhrase(
                rel.start,
                rel.end,
                list(rel.years),
                time_only=True,
                dates=rel.dates,
                dates_only=rel.dates_only,
                day_only=rel.day_only,
                bare=rel.day_only,  # "posted today": the word beside it names the field; "jobs today" none
                reaches=rel.reaches,
            )
        )
    for m in _AGE.finditer(query):  # "less than 5 years old": made in the last 5 years
        cmp, at = _prefix_op_before(query, m.start())
        cmp = _AGE_WORDS.get(cmp, cmp) if isinstance(cmp, str) else cmp  # "younger than 5 years old"
        if not isinstance(cmp, Op) or cmp not in (Op.LT, Op.LTE, Op.GT, Op.GTE) or not ok(at, m.end()):
            continue
        before = _lookback(query, at)[0]
        years = number_of(m.group(1))
        said_of = _PERSON_BEFORE.search(before[-40:]) or _PERSON_SUBJECT.search(before) or _grown_up(before, years)
        if said_of or _PERSON_AFTER.match(query, m.end()):
            taken[at : m.end()] = b"\x01" * (m.end() - at)  # a person's age: no filter, nor another field's number
            continue  # "for kids less than 10 years old", "over 65 years old actors"
        add(_age(at, m.end(), cmp, years, today))
    for m in _AGE_THAN.finditer(query):  # "older than 10 years", "no older than 5 years"
        if not ok(m.start(), m.end()):
            continue
        before = _lookback(query, m.start())[0]
        if (
            _PERSON_SUBJECT.search(before)
            or _grown_up(before, number_of(m.group("n")))
            or _PERSON_AFTER.match(query, m.end())
        ):
            taken[m.start() : m.end()] = b"\x01" * (m.end() - m.start())
            continue  # "for kids older than 10 years", "my dad, who is older than 70 years"
        older = m.group("cmp").lower() == "older"
        cmp = (Op.LTE if older else Op.GTE) if m.group("neg") else (Op.GT if older else Op.LT)
        add(_age(m.start(), m.end(), cmp, number_of(m.group("n")), today))
    for m in _DECADE.finditer(query):
        if not ok(m.start(), m.end()):
            continue
        lo, hi = _decade(m, year)
        op, at = _prefix_op_before(query, m.start())
        start = at if op is not None else m.start()
        bounds: list[tuple[Op | str, float]] = [(Op.GTE, lo), (Op.LTE, hi)]
        if op in (Op.LT, Op.LTE):
            bounds = [(Op.LT, lo)]
        elif op is Op.GT:
            bounds = [(Op.GT, hi)]
        elif op is Op.GTE:
            bounds = [(Op.GTE, lo)]
        add(NumberPhrase(start, m.end(), bounds, time_only=True))
    for m in _DOZEN.finditer(query):  # before the digits and words, which would read "2" or "two" alone
        _dozen(query, m, ok, add)
    for m in _numbers(query):
        if not ok(m.start("num"), m.end()) or _NOT_A_FILTER.search(_lookback(query, m.start())[0]):
            continue
        if _DATE_LIKE.match(query, m.start("num")):  # 2019-05-01 is a date, not a range
            continue
        value = _num(m)
        unit = m.group("cur") or ("%" if m.group("pct") else None)
        factor, end, grand = _scale_after(query, m)  # "10 thousand", "$2 million"
        value *= factor
        unit = unit or grand
        if unit is None:
            unit, end = _unit_after(query, end)
        op, at = _prefix_op_before(query, m.start())
        start = at if op is not None else m.start()
        betw = _between(query, m.start())
        join = _RANGE_JOIN.match(query[end:])
        second = _number_at(query, end + join.end(), " " in m.group("num").strip()) if join else None
        if join and second and ok(second.start("num"), second.end()) and (join.group(0).strip() != "and" or betw >= 0):
            factor2, end2, grand2 = _scale_after(query, second)  # "between 10 and 20 thousand"
            high = _num(second) * factor2
            unit = unit or grand2
            unit2, end2 = _unit_after(query, end2)
            unit = unit or second.group("cur") or ("%" if second.group("pct") else None) or unit2
            start = betw if betw >= 0 else (at if op == "year" else m.start())
            factor2 = 1000.0 if second.group("k") else factor2
            if factor2 > 1 and factor == 1 and not m.group("k") and value * factor2 <= high:
                value *= factor2  # "15-20k", "10 to 20 thousand": both ends in thousands
            span = unit is None and year_like(value) and year_like(high) and 0 < high - value <= YEARS_SPAN
            add(NumberPhrase(start, end2, [(Op.GTE, value), (Op.LTE, high)], unit, dated=span))
            continue
        suffix = _SUFFIX.match(query[end:])
        limit = _SUFFIX_LIMIT.match(query[end:]) if suffix is None and op in (None, "year") else None
        if limit is not None and limit.group("min") and limit.start("min") == 1 and unit is None:
            limit = None  # "3 min" is three minutes; "3 gears min" is at least three gears
        if limit is not None:  # "15000 max", "2 owners at most", "3 gears min"
            quiet = (end + limit.start(limit.lastindex or 0), end + limit.end())  # the limit word names no field
            add(NumberPhrase(m.start(), end + limit.end(), [(Op.LTE if limit.group(1) else Op.GTE, value)], unit,
                             quiet=quiet))  # fmt: skip
        elif suffix is not None:
            bound: Op | str = Op.LTE if suffix.group(2) else "or older" if suffix.group(3) else Op.GTE
            start = at if op == "year" else m.start()
            onwards = "onward" in suffix.group(0).lower() or (suffix.group(4) is not None and value % 10 != 0)
            dated = unit is None and year_like(value) and onwards  # "2010 onwards", "2018+" (not "2000+")
            add(NumberPhrase(start, end + suffix.end(), [(bound, value)], unit, dated=dated))
        elif op == "year":  # "in 1995" is a year; "a rating of 8" needs the field named beside it
            yearly = unit is None and year_like(value)
            add(NumberPhrase(at, end, [(Op.EQ, value)], unit, time_only=yearly, bare=not yearly))
        elif op is not None:
            person = (
                unit is None
                and value <= MAX_AGE  # "shoes for women under 150" is a price
                and _AGE_COMPARISON.fullmatch(query[start : m.start()].strip())
                and _PERSON_BEFORE.search(_lookback(query, start)[0][-40:])
            )
            # "before 2010", "since 1999": a year, though a price may hold the number too
            dated = unit is None and year_like(value) and bool(_TIME_WORD.match(query[start : m.start()]))
            add(NumberPhrase(start, end, [(op, value)], unit, person_age=bool(person), dated=dated))
        else:
            add(NumberPhrase(m.start(), end, [(Op.EQ, value)], unit, bare=True))
    for m in _NUMBER_WORD.finditer(query):  # "fewer than three owners", "at least ten thousand"
        op, at = _prefix_op_before(query, m.start())
        scale = _SCALE.match(query, m.end())
        end = scale.end() if scale else m.end()
        value = number_of(m.group(0)) * (_SCALES[scale.group(1).lower()] if scale else 1)
        unit, after = _unit_after(query, end)
        unit = unit or ("grand" if scale and scale.group(1).lower() == "grand" else None)
        if isinstance(op, Op) and op is not Op.EQ and ok(at, after):
            add(NumberPhrase(at, after, [(op, value)], unit))
        elif op is None and ok(m.start(), after):  # "two terabytes", "one previous owner": as "2 terabytes"
            add(NumberPhrase(m.start(), after, [(Op.EQ, value)], unit, bare=True))
    for m in _SPOKEN_QUANTITY.finditer(query):  # "under an hour", "half an hour or less", "under a grand"
        op, at, end = _limit_around(query, m.start(), m.end())
        if isinstance(op, Op) and op is not Op.EQ and ok(at, end):
            whole = (m.group("whole") or "0").lower().replace("an", "a")
            value = number_of(whole) + (0.5 if m.group("half") or m.group("and_half") or m.group("tail") else 0.0)
            unit = m.group("unit").lower()
            add(NumberPhrase(at, end, [(op, value * (_SCALES["grand"] if unit == "grand" else 1))], unit))
    return sorted(found, key=lambda p: p.start)


def _limit_around(query: str, start: int, end: int) -> tuple[Op | str | None, int, int]:
    """The comparison around a quantity at ``query[start:end]``: a suffix after it ("... or less", "... and up")
    wins over a prefix before it ("under ..."); with the phrase's start and end."""
    suffix = _SUFFIX.match(query[end:])
    if suffix is not None and not suffix.group(3):
        return (Op.LTE if suffix.group(2) else Op.GTE), start, end + suffix.end()
    op, at = _prefix_op_before(query, start)
    return op, at, end


def _dozen(query: str, m: re.Match[str], ok: Callable[[int, int], bool], add: Callable[[NumberPhrase], None]) -> None:
    """A count of dozens, compared ("under a dozen", "two dozen or more") or with a unit; in digits also alone
    ("3 dozen"), as a number in digits is."""
    before = _lookback(query, m.start())[0]
    if _NOT_A_FILTER.search(before) or _RANGE_BEFORE.search(before):
        return  # "top 5 dozen"; "1 to 2 dozen" is a range the digits read
    count = m.group("count")
    value = 6.0 if m.group("half") else 12.0 * number_of("a" if count.lower() == "an" else count)
    op, at, end = _limit_around(query, m.start(), m.end())
    unit, after = _unit_after(query, end)
    if isinstance(op, Op) and op is not Op.EQ and ok(at, after):
        add(NumberPhrase(at, after, [(op, value)], unit))
    elif not isinstance(op, Op) and (unit is not None or (count or "")[:1].isdigit()) and ok(m.start(), after):
        add(NumberPhrase(m.start(), after, [(Op.EQ, value)], unit, bare=True))


def _between(query: str, start: int) -> int:
    """Where "between" begins, if it comes right before ``start`` ("between 1990 and 1995"); else -1."""
    text, offset = _lookback(query, start)
    m = re.search(r"\bbetween\s+(?:the\s+years\s+)?$", text, re.IGNORECASE)
    return m.start() + offset if m else -1
