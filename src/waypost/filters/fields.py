"""Which field a number in a query talks about, from the schema alone.

A field is named by its own words (``imdb_rating``: "imdb", "rating", "imdb rating", "imdbrating"), by the
unit in its name (``runtime_minutes``: "120 min", "2 hours"; ``weight_kg``: "3 kg", "500 g"; ``price_usd``:
"$40"), and, more weakly, by generic English words of the same concept ("rated", "scoring" and "stars" for a
rating or a score; "costs", "cheaper" for a price; "long", "shorter" for a runtime or a duration; "released",
"newer" for a year or a date). Nothing here knows a dataset: only field names, units and English.
"""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass, field
from datetime import date

from waypost.filters.catalog import FieldCatalog, is_numeric
from waypost.filters.text import FUNCTION_WORDS, name_words, stem

# unit word -> (dimension, size in the dimension's base unit); currencies are not converted into each other
UNITS: dict[str, tuple[str, float]] = {
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), ("time", 1 / 60)),
    **dict.fromkeys(("min", "mins", "minute", "minutes"), ("time", 1.0)),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), ("time", 60.0)),
    **dict.fromkeys(("day", "days"), ("time", 1440.0)),
    **dict.fromkeys(("mg", "milligram", "milligrams"), ("weight", 1e-6)),
    **dict.fromkeys(("g", "gram", "grams"), ("weight", 1e-3)),
    **dict.fromkeys(("kg", "kgs", "kilo", "kilos", "kilogram", "kilograms"), ("weight", 1.0)),
    **dict.fromkeys(("lb", "lbs", "pound", "pounds"), ("weight", 0.45359237)),
    **dict.fromkeys(("oz", "ounce", "ounces"), ("weight", 0.028349523125)),
    **dict.fromkeys(("mm", "millimeter", "millimeters", "millimetre", "millimetres"), ("length", 1e-3)),
    **dict.fromkeys(("cm", "centimeter", "centimeters", "centimetre", "centimetres"), ("length", 1e-2)),
    **dict.fromkeys(("meter", "meters", "metre", "metres"), ("length", 1.0)),
    **dict.fromkeys(("km", "kilometer", "kilometers", "kilometre", "kilometres"), ("length", 1e3)),
    **dict.fromkeys(("inch", "inches"), ("length", 0.0254)),
    **dict.fromkeys(("ft", "foot", "feet"), ("length", 0.3048)),
    **dict.fromkeys(("mile", "miles"), ("length", 1609.344)),
    **dict.fromkeys(("ml", "millilitre", "millilitres", "milliliter", "milliliters"), ("volume", 1e-3)),
    **dict.fromkeys(("cl", "centilitre", "centilitres", "centiliter", "centiliters"), ("volume", 1e-2)),
    **dict.fromkeys(("l", "litre", "litres", "liter", "liters"), ("volume", 1.0)),
    **dict.fromkeys(("kb", "kilobytes"), ("data", 1e-3)),
    **dict.fromkeys(("mb", "megabytes"), ("data", 1.0)),
    **dict.fromkeys(("gb", "gigabytes", "gig", "gigs"), ("data", 1e3)),
    **dict.fromkeys(("tb", "terabytes"), ("data", 1e6)),
    **dict.fromkeys(("$", "usd", "dollar", "dollars", "bucks"), ("money:usd", 1.0)),
    **dict.fromkeys(("€", "eur", "euro", "euros"), ("money:eur", 1.0)),
    **dict.fromkeys(("£", "gbp"), ("money:gbp", 1.0)),
    **dict.fromkeys(("chf", "francs"), ("money:chf", 1.0)),  # not "franc": Cabernet Franc
    **dict.fromkeys(("cent", "cents"), ("money:usd", 0.01)),
    **dict.fromkeys(("%", "percent", "pct", "percentage"), ("percent", 1.0)),
    "grand": ("money", 1.0),  # "2 grand" (the thousands are read as a scale): money in any currency
}
# A unit word with a second meaning, taken where no field has the first one's dimension ("under 30 pounds" is
# money in a catalogue that weighs nothing)
OTHER_READING: dict[str, str] = {"pound": "£", "pounds": "£"}
# Words of a field name that give its dimension when it carries no unit ("runtime" is a time).
DIMENSION_WORDS = {
    **dict.fromkeys(("runtime", "duration"), "time"),
    **dict.fromkeys(("price", "cost", "msrp", "fee", "fare", "budget", "revenue", "salary"), "money"),
    **dict.fromkeys(("weight", "mass"), "weight"),
    **dict.fromkeys(("distance", "height", "width", "depth"), "length"),
    **dict.fromkeys(("volume",), "volume"),  # not "capacity": an event's counts seats
}
# Generic English words of one concept; a field whose name holds one of them answers to all of them.
CONCEPTS: list[frozenset[str]] = [
    frozenset(
        "rating ratings rate rated score scores scored scoring star stars point points grade graded "
        "better worse higher lower".split()
    ),
    frozenset(
        "price prices priced pricing cost costs costing cheap cheaper cheapest expensive pricier pricey "
        "affordable msrp fee budget".split()
    ),
    frozenset("weight weigh weighs weighing weighed heavy heavier light lighter mass".split()),
    frozenset("runtime duration length long longer short shorter lasting lasts running runs minutes hours".split()),
    frozenset(
        "year years date dated release released releases made published produced founded "
        "built aired premiered new newer old older recent recently latest earlier later".split()
    ),
    frozenset("age aged old older young younger".split()),
    frozenset("height high tall taller".split()),
    frozenset("width wide wider".split()),
    frozenset("size big bigger large larger small smaller".split()),
    # how many people something holds or feeds ("for at least 4 people" on servings, "500 seats" on capacity)
    frozenset(
        "capacity people persons person guests guest attendees attendee participants visitors seats seated "
        "servings serving serves portions diners sleeps occupancy headcount".split()
    ),
]
# Name words too generic to name a field on their own.
_GENERIC = FUNCTION_WORDS | frozenset("id num no number count total is has at of dt ts value amount".split())
TIME_CONCEPT = 4  # index of the year/date concept in CONCEPTS
PEOPLE_CONCEPT = len(CONCEPTS) - 1  # how many people: only a field whose last word says so (max_guests, capacity;
# not guest_rating or price_per_person_eur)


@functools.cache
def _concept_stems(i: int) -> frozenset[str]:
    return frozenset(stem(w) for w in CONCEPTS[i])


def _derived(word: str) -> set[str]:
    """Stems of a name word and of its plain English derivations (citations -> cited, cite)."""
    out = {stem(word)}
    for suffix, repl in (("ations", "e"), ("ation", "e"), ("ions", "e"), ("ion", "e")):
        if word.endswith(suffix) and len(word) > len(suffix) + 2:
            out.add(stem(word[: -len(suffix)] + repl))
    return out


@dataclass
class FieldAliases:
    """For each numeric or date field: the stems that name it, its unit, its dimension and its concepts."""

    catalog: FieldCatalog
    names: dict[str, set[str]] = field(default_factory=dict)  # field -> stems of its own words
    heads: dict[str, str] = field(default_factory=dict)  # field -> the stem of its last word ("max_guests": guest)
    joined: dict[str, set[str]] = field(default_factory=dict)  # field -> stems of adjacent words run together
    units: dict[str, tuple[str, float]] = field(default_factory=dict)  # field -> (dimension, factor)
    dimensions: dict[str, str] = field(default_factory=dict)
    concepts: dict[str, set[int]] = field(default_factory=dict)
    time_fields: list[str] = field(default_factory=list)  # year-valued numbers first, then date fields

    def __post_init__(self) -> None:
        cat = self.catalog
        for name in cat.fields:
            kind = cat.field_kind(name)
            if not is_numeric(kind) and kind != "date":
                continue
            words = name_words(name)
            self.names[name] = {s for w in words if w not in _GENERIC for s in _derived(w)}
            own = [w for w in words if w not in _GENERIC]
            if own:
                self.heads[name] = stem(own[-1])
            self.joined[name] = {stem(a + b) for a, b in itertools.pairwise(words)}
            for w in words:
                if w in UNITS:
                    self.units[name] = UNITS[w]
                    self.dimensions[name] = UNITS[w][0].split(":")[0]
                elif w in DIMENSION_WORDS:
                    self.dimensions.setdefault(name, DIMENSION_WORDS[w])
            stems = {stem(w) for w in words}
            self.concepts[name] = {
                i
                for i, group in enumerate(CONCEPTS)
                if (stems if i != PEOPLE_CONCEPT else {self.heads.get(name, "")}) & _concept_stems(i)
            }
            if self.is_time(name):
                self.concepts[name].add(TIME_CONCEPT)
        years = [n for n in self.names if is_numeric(cat.field_kind(n)) and self.is_time(n)]
        years.sort(key=lambda n: "year" not in name_words(n))
        self.time_fields = years + [n for n in cat.date_fields() if n in self.names]

    def is_time(self, name: str) -> bool:
        """A date field, or a number field of years (named so, or all its values between 1800 and 2200)."""
        kind = self.catalog.field_kind(name)
        if kind == "date":
            return True
        if not is_numeric(kind):
            return False
        rng = self.catalog.numeric_range(name)
        if "year" in name_words(name):  # release_year, not warranty_years (1 to 5)
            return rng is None or 1000 <= rng[0]
        return rng is not None and 1800 <= rng[0] and rng[1] <= 2200

    def unit_weight(self, unit: str, name: str) -> float:
        """How strongly a unit written in the query names a field: its own unit, or the same dimension."""
        found = UNITS.get(unit.lower())
        if found is None:
            return 0.0
        own = self.units.get(name)
        if own is not None and own == found:
            return 5.0
        dimension = found[0].split(":")[0]
        return 4.0 if self.dimensions.get(name) == dimension else 0.0

    def convert(self, value: float, unit: str | None, name: str) -> float:
        """A query's number in the field's unit ("2 hours" on runtime_minutes is 120)."""
        found = UNITS.get(unit.lower()) if unit else None
        own = self.units.get(name)
        if found is None or own is None or found[0] != own[0]:
            return value
        converted = round(value * found[1] / own[1], 6)
        return float(int(converted)) if converted.is_integer() else converted

    def word_weights(self, word: str) -> dict[str, float]:
        """Fields a query word names, with a weight: own word 3 (4 when only one field has it, 3.5 for the
        field it ends), words run together ("metascore") 4, a unit 4-5, a word of the field's concept 1."""
        lowered = word.lower()
        token = stem(re.sub(r"[^\w$€£%]", "", lowered))
        out: dict[str, float] = {}
        owners = [n for n, stems in self.names.items() if token in stems]
        for n in owners:  # shared by several: the field it is the last word of ("guests": max_guests, not guest_rating)
            out[n] = 4.0 if len(owners) == 1 else 3.5 if self.heads.get(n) == token else 3.0
        for n, stems in self.joined.items():
            if token in stems:
                out[n] = max(out.get(n, 0.0), 4.0)
        for n in self.names:
            w = self.unit_weight(lowered, n)
            if w:
                out[n] = max(out.get(n, 0.0), w)
        groups = {i for i, group in enumerate(CONCEPTS) if lowered in group or token in {stem(g) for g in group}}
        for n, mine in self.concepts.items():
            if groups & mine:  # the concept of the field's last word first ("people": max_guests, not guest_rating)
                head = self.heads.get(n, "")
                out[n] = max(out.get(n, 0.0), 1.25 if any(head in _concept_stems(i) for i in groups) else 1.0)
        return out

    def contains(self, name: str, value: float) -> bool:
        """Whether ``value`` lies within the field's values (a year, for a date field)."""
        if self.catalog.field_kind(name) == "date":
            rng = self.catalog.date_range(name)
            if rng is None or not float(value).is_integer():
                return False
            from waypost.filters.dates import year_period

            year = year_period(int(value)) if 1000 <= value <= 9999 else None
            return year is not None and year.start <= rng[1] and year.end > rng[0]
        rng = self.catalog.numeric_range(name)
        return rng is not None and rng[0] <= value <= rng[1]

    def near_years(self, name: str, year: float, slack: int) -> bool:
        """Whether ``year`` lies near a year or date field's years: within their own spread, or ``slack`` years
        where they span fewer ("before 1990" on cars registered from 1995 to 2024 still means the registration;
        "till 2000" on bikes listed in 2024 and 2025 does not mean the listing)."""
        if self.catalog.field_kind(name) == "date":
            rng = self.catalog.date_range(name)
            if rng is None:
                return False
            from waypost.filters.dates import EPOCH_ORDINAL

            first, last = (date.fromordinal(int(d) + EPOCH_ORDINAL).year for d in rng)
        else:
            found = self.catalog.numeric_range(name)
            if found is None:
                return False
            first, last = int(found[0]), int(found[1])
        margin = max(slack, last - first)
        return first - margin <= year <= last + margin

    def far_outside(self, name: str, value: float) -> bool:
        """Whether ``value`` lies far outside the field's numbers (1990 on a 1-10 rating), more than the
        field's own spread (or size) away from them."""
        if self.catalog.field_kind(name) == "date":
            return False
        rng = self.catalog.numeric_range(name)
        if rng is None:
            return False
        margin = max(rng[1] - rng[0], abs(rng[1]))
        return not rng[0] - margin <= value <= rng[1] + margin
