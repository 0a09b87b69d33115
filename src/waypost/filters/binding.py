"""Binding a number phrase to the field it talks about, and the conditions it then means.

A phrase binds to the field that nearby words name (``FieldAliases``: its own words, its unit, its concept),
weighed with whether the field holds the number; else, for a phrase with a comparison or a year, to the only
field whose values contain it (a price where several do); a bare number ("Apollo 13", "top 10") binds only to
a field named right beside it ("2 seasons", "rated 8") and only where some row holds it.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import replace
from datetime import date

from waypost.filters.dates import EPOCH_ORDINAL
from waypost.filters.fields import OTHER_READING, PEOPLE_CONCEPT, UNITS, FieldAliases
from waypost.filters.model import Condition, Op
from waypost.filters.numbers import NumberPhrase, year_like
from waypost.filters.text import Token, name_words, tokenize

_RATE = frozenset("a an per each every".split())
_BOUNDARY = frozenset("with and but or that which who whose while where".split())
Free = Callable[[int, int], bool]


def _window(query: str, tokens: list[Token], phrase: NumberPhrase, free: Free) -> list[tuple[Token, int]]:
    """Words naming the phrase's field: its own, up to four before and three after, within its clause.
    ``tokens`` are ``tokenize(query, {})``: in text order, their starts and ends both non-decreasing."""
    # bisect instead of scanning every token: a long query has many phrases
    first_after = bisect.bisect_left(tokens, phrase.end, key=lambda t: t.start)
    first_inside = bisect.bisect_left(tokens, phrase.start, key=lambda t: t.start)
    ends_before = bisect.bisect_right(tokens, phrase.start, key=lambda t: t.end)
    quiet = phrase.quiet or (0, 0)
    inside = [
        (t, 0) for t in tokens[first_inside:first_after] if t.end <= phrase.end and not (quiet[0] <= t.start < quiet[1])
    ]
    glued = tokens[first_after - 1] if first_inside < first_after else None
    if glued is not None and glued.end > phrase.end and query[phrase.end : glued.end].isalpha():
        # "2500m": the letters glued to the number are a word beside it (a unit left unread, a field's suffix)
        letters = tokenize(query[phrase.end : glued.end], {})
        inside += [(replace(t, start=t.start + phrase.end, end=t.end + phrase.end), 0) for t in letters]
    before = tokens[max(0, ends_before - 4) : ends_before][::-1]
    after = tokens[first_after : first_after + 3]
    out = list(inside)
    for side, edge in ((before, phrase.start), (after, phrase.end)):
        for dist, t in enumerate(side):
            gap = query[min(edge, t.end) : max(edge, t.start)]
            word = query[t.start : t.end].lower()
            if not free(t.start, t.end) or "," in gap or ";" in gap or word in _BOUNDARY:
                break
            if side is after and word in _RATE:  # "90,000 a year": a rate's period names no field
                break
            out.append((t, dist))
            edge = t.start if side is before else t.end
    return out


def bind(
    query: str, phrase: NumberPhrase, aliases: FieldAliases, tokens: list[Token], free: Free, today: date
) -> tuple[list[Condition], list[Token]] | None:
    """The conditions a phrase means and the words that named its field; ``None``: not a filter."""
    unit = (phrase.unit or "").lower()
    other = OTHER_READING.get(unit)
    if other is not None and UNITS[unit][0] not in aliases.dimensions.values():
        phrase = replace(phrase, unit=other)
    if phrase.person_age:  # "courses for people over 16": a person's age, which no field of the item is
        return None
    if phrase.age is not None:  # "under 5 years old" is about a field of ages when the collection has one
        ages = [
            n
            for n in aliases.names
            if n not in aliases.time_fields
            and aliases.catalog.field_kind(n) == "number"
            and aliases.word_weights("age").get(n, 0.0) >= 3
        ]
        if len(ages) == 1:
            return [Condition(ages[0], phrase.age[0], int(phrase.age[1]))], []
    yearly = year_like(phrase.value)
    unfit = {n for n in aliases.names if not _fits(phrase, aliases, n)}
    allowed = [
        n
        for n in aliases.names
        if (n in aliases.time_fields if phrase.time_only else yearly or aliases.catalog.field_kind(n) != "date")
        and n not in unfit
        and (not phrase.dates_only or _straddles(aliases, n, today))
        and (not phrase.day_only or aliases.catalog.field_kind(n) == "date")
        and (phrase.reaches is None or _reaches(aliases, n, phrase.reaches))
    ]
    words = _window(query, tokens, phrase, free)
    if phrase.bare:  # only the word right beside the number may name the field
        words = [(t, d) for t, d in words if d == 0 and (t.end <= phrase.start + 1 or t.start >= phrase.end - 1)]
        words = [w for w in words if not query[w[0].start : w[0].end].replace(".", "").isdigit()]
    scores: dict[str, float] = {}
    named: dict[str, list[Token]] = {}
    named_unfit = False  # a word names a field the phrase cannot be about ("30 years" and a year field)
    for t, dist in words:
        for name, weight in aliases.word_weights(query[t.start : t.end]).items():
            named_unfit |= name in unfit
            if name in allowed:
                scores[name] = scores.get(name, 0.0) + weight * (1 - 0.15 * dist)
                if weight >= 3 or dist == 0:  # a word of the field's own name, or right beside the number
                    named.setdefault(name, []).append(t)
    if phrase.unit:
        for name in allowed:
            w = aliases.unit_weight(phrase.unit, name)
            if w:
                scores[name] = scores.get(name, 0.0) + w
    chosen: str | None = None
    if scores:
        total = {n: scores.get(n, 0.0) + _plausible(phrase, aliases, n) for n in allowed}
        best = max(total.values())
        tied = [n for n in allowed if total[n] == best]
        if best <= 0:  # every field a word named is far from this number
            chosen = None
        elif len(tied) == 1:
            chosen = tied[0]
        elif all(n in aliases.time_fields for n in tied):  # a year field before a date field
            chosen = min(tied, key=aliases.time_fields.index)
    elif not phrase.bare and phrase.unit is None and not named_unfit:  # "10%" names no field by its value
        chosen = _by_range(phrase, aliases, allowed, yearly)
    if chosen is None:
        return None
    found = _conditions(phrase, aliases, chosen, today)
    if phrase.bare and len(found) == 1 and found[0].op is Op.EQ and _holds_at_most(aliases, chosen):
        found = [replace(found[0], op=Op.GTE)]  # "for 4 guests" on max_guests: room for at least 4
    if phrase.bare and chosen not in aliases.time_fields and not _held(aliases, found):
        nominal = _nominal(aliases, found) if phrase.unit else None
        if nominal is None:
            return None  # "the timing belt at 120,000 km" asks about a mileage, not for cars with exactly that one
        found = nominal
    return found, named.get(chosen, [])


YEARS_SLACK = 10  # a year said as a time this close to a field's years (or their spread) is about that field

# Name words of a field that holds how many people something takes at most: a number said plainly is a minimum
_UPPER_LIMIT = frozenset({"max", "maximum", "capacity", "sleeps"})


def _holds_at_most(aliases: FieldAliases, name: str) -> bool:
    """A field of how many people something takes at most (max_guests, capacity; not speed_limit, max_temp)."""
    return bool(_UPPER_LIMIT & set(name_words(name))) and PEOPLE_CONCEPT in aliases.concepts.get(name, set())


def _nominal(aliases: FieldAliases, found: list[Condition]) -> list[Condition] | None:
    """A whole number with its unit that no row holds exactly, as the size class it names where rows hold
    numbers near it: from half a unit below to a unit above ("a 24 inch monitor" is 23.8, "a 15 inch laptop"
    15.6, "a 32 inch screen" 31.5)."""
    if len(found) != 1 or found[0].op is not Op.EQ or not isinstance(found[0].value, int):
        return None
    name, value = found[0].field, found[0].value
    span = [Condition(name, Op.GTE, value - 0.5), Condition(name, Op.LT, value + 1)]
    return span if bool((aliases.catalog.mask(span[0]) & aliases.catalog.mask(span[1])).any()) else None


def _straddles(aliases: FieldAliases, name: str, today: date) -> bool:
    """A date field with days both before and after today: where nothing is upcoming (a catalogue's
    "date added"), "upcoming" names no field."""
    rng = aliases.catalog.date_range(name) if aliases.catalog.field_kind(name) == "date" else None
    return rng is not None and rng[0] < float(today.toordinal() - EPOCH_ORDINAL) < rng[1]


def _reaches(aliases: FieldAliases, name: str, day: date) -> bool:
    """Whether the field holds a value on or after ``day`` (a year field: in its year or later): "next month"
    or "this year" asks nothing of a catalogue whose years all lie in the past."""
    if aliases.catalog.field_kind(name) == "date":
        rng = aliases.catalog.date_range(name)
        return rng is not None and rng[1] >= float(day.toordinal() - EPOCH_ORDINAL)
    rng = aliases.catalog.numeric_range(name)
    return rng is not None and rng[1] >= day.year


def _held(aliases: FieldAliases, found: list[Condition]) -> bool:
    """Whether some row holds what equality conditions ask for (an equality no row meets is no filter)."""
    return all(c.op is not Op.EQ or bool(aliases.catalog.mask(c).any()) for c in found)


def _fits(phrase: NumberPhrase, aliases: FieldAliases, name: str) -> bool:
    """Whether the phrase can be about the field at all: a field of calendar years or dates takes only years
    ("by the age of 14 years" is no release year), and a unit of one dimension never binds to a field of
    another ("40 mg" is no runtime, "85%" no duration) nor to a calendar field; currencies are not converted,
    so "90 euros" is no ``price_usd``."""
    years = all(year_like(float(v)) for _op, v in phrase.bounds)
    if name in aliases.time_fields and not phrase.time_only and not years:
        return False
    found = UNITS.get(phrase.unit.lower()) if phrase.unit else None
    if found is None:
        return True
    if name in aliases.time_fields and aliases.dimensions.get(name) is None:  # a calendar year has no unit:
        # "after EUR 2023", "2024 kg" are no dates (a price_usd of 1800 to 2200 looks like years, and keeps $)
        return False
    own_unit = aliases.units.get(name)
    if own_unit is not None and found[0].startswith("money:") and own_unit[0] != found[0]:
        return False
    own = aliases.dimensions.get(name)
    return own is None or found[0].split(":")[0] == own


def _plausible(phrase: NumberPhrase, aliases: FieldAliases, name: str) -> float:
    """+1.5 when the field holds the number, -4 when the number is far outside everything it holds."""
    value = _in_unit(phrase, aliases, name)
    return 1.5 if aliases.contains(name, value) else -4.0 if aliases.far_outside(name, value) else 0.0


def _in_unit(phrase: NumberPhrase, aliases: FieldAliases, name: str) -> float:
    return aliases.convert(phrase.value, phrase.unit, name)


def _by_range(phrase: NumberPhrase, aliases: FieldAliases, allowed: list[str], yearly: bool) -> str | None:
    """No word names a field. A year said as a time ("before 1990", "2000-2010", "since 2019") goes to the first
    year field whose years hold one of its ends, or the one date field that does, else to the one such field
    near them (``FieldAliases.near_years``); a year-like number said plainly goes to such a field only where no
    other field holds it ("flats under 1999" stays the rent). Another number goes to the only field whose
    values contain it, or, where several do and one of them is a price, to the price (a bare amount to compare
    is most often what something costs)."""
    holding = [n for n in allowed if n not in aliases.time_fields and aliases.contains(n, phrase.value)]
    if phrase.time_only or yearly:
        dates = aliases.catalog.date_fields()
        numbers = [n for n in aliases.time_fields if n in allowed and aliases.catalog.field_kind(n) != "date"]
        ends = [v for _op, v in phrase.bounds]
        said_as_time = phrase.time_only or phrase.dated
        if said_as_time or not holding:
            # a year field first; else the one date field whose years hold it (two: "news from 2021" is either)
            held = [n for n in numbers if any(aliases.contains(n, v) for v in ends)]
            held = held or [n for n in dates if n in allowed and any(aliases.contains(n, v) for v in ends)]
            if len(held) == 1 or (held and held[0] in numbers):
                return held[0]
        if said_as_time:
            times = [n for n in [*numbers, *dates] if n in allowed]
            near = [n for n in times if any(aliases.near_years(n, v, YEARS_SLACK) for v in ends)]
            if len(near) == 1:
                return near[0]
        if phrase.time_only or not holding:  # a year outside every field's years: still a year
            only_date = dates[0] if len(dates) == 1 and dates[0] in allowed else None
            return numbers[0] if numbers else only_date
    money = [n for n in holding if aliases.dimensions.get(n) == "money"]
    exact = [n for n in holding if n not in money and _holds_exactly(aliases, n, phrase.value)]
    if len(holding) > 1 and len(money) == 1 and not exact:  # "laptops under 700" (storage 256 to 2000): a price
        return money[0]  # but "at least 512" names no field when storage_gb is 512 for some rows
    return holding[0] if len(holding) == 1 else None


def _holds_exactly(aliases: FieldAliases, name: str, value: float) -> bool:
    return bool(aliases.catalog.mask(Condition(name, Op.EQ, value)).any())


def _conditions(phrase: NumberPhrase, aliases: FieldAliases, name: str, today: date) -> list[Condition]:
    is_date = aliases.catalog.field_kind(name) == "date"
    is_time = name in aliases.time_fields
    out: list[Condition] = []
    for op, raw in phrase.bounds:
        value: int | float | str = aliases.convert(raw, phrase.unit, name)
        if not isinstance(op, Op):  # "older than 1990" is before it; "older than 10" (an age) is above it
            op = {
                "older": (Op.LT, Op.GT),
                "or older": (Op.LTE, Op.GTE),
                "not older": (Op.GTE, Op.LTE),
                "younger": (Op.GT, Op.LT),
                "not younger": (Op.LTE, Op.GTE),
            }[op][0 if is_time else 1]
        if is_date and phrase.dates:
            value = phrase.dates[len(out)].isoformat()
        elif isinstance(value, float) and value.is_integer():
            value = int(value)
        out.append(Condition(name, op, value))
    return out
