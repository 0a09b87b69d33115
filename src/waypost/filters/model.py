"""Filter expressions: conditions (EQ, IN, GT, GTE, LT, LTE) combined with AND/OR."""

from __future__ import annotations

import csv
import json
import math
import re
from dataclasses import dataclass, field
from datetime import date
from enum import StrEnum
from typing import Any

from waypost.errors import FilterError
from waypost.filters.dates import period

# Limits on what a filter may be, so a hostile or broken one is a FilterError, never a RecursionError
# or a parse that runs for minutes.
MAX_FILTER_DEPTH = 32  # AND/OR levels
MAX_FILTER_CONDITIONS = 1_000  # leaf conditions in one filter (values of an IN list count once)
MAX_FILTER_CHARS = 100_000  # length of a filter's JSON text, or of one CLI clause
_JSON_BRACKETS = 2 * MAX_FILTER_DEPTH + 4  # each AND/OR level is an object and a list; a condition adds a few
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"?', re.DOTALL)  # an unclosed string runs to the end: linear
_BRACKET = re.compile(r"[\[\]{}]")


class Op(StrEnum):
    EQ = "eq"
    IN = "in"
    NE = "ne"  # no value (no element of a list) equals it; a row without the field matches
    NIN = "nin"  # no value equals any of them
    GT = "gt"
    GTE = "gte"
    LT = "lt"
    LTE = "lte"

    @property
    def symbol(self) -> str:
        return {"eq": "=", "in": "in", "ne": "!=", "nin": "not in", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}[
            self.value
        ]

    @property
    def negated(self) -> bool:
        """NE and NIN: the rows that EQ and IN would not match."""
        return self in (Op.NE, Op.NIN)

    @property
    def positive(self) -> Op:
        """EQ for NE, IN for NIN, the operator itself otherwise."""
        return {Op.NE: Op.EQ, Op.NIN: Op.IN}.get(self, self)


@dataclass(frozen=True)
class Condition:
    field: str
    op: Op
    value: Any

    def __post_init__(self) -> None:
        if not isinstance(self.field, str) or not self.field:
            raise FilterError(f"a filter needs a field name, got {self.field!r}")
        if self.op in (Op.IN, Op.NIN):
            if not isinstance(self.value, (list, tuple)) or not self.value:
                raise FilterError(
                    f"{self.op.name} on {self.field!r} needs a non-empty list of values, got {self.value!r}"
                )
            if not all(_is_scalar(v) for v in self.value):
                raise FilterError(
                    f"{self.op.name} on {self.field!r} takes plain values (text, numbers, dates, true/false): "
                    f"{self.value!r}"
                )
        elif self.op in (Op.EQ, Op.NE):
            if not _is_scalar(self.value):
                raise FilterError(
                    f"{self.op.name} on {self.field!r} takes one plain value, got {self.value!r}; "
                    f"use {'IN' if self.op is Op.EQ else 'NIN'} for lists"
                )
        elif not _is_number(self.value) and period(self.value, bare_year_strings=False) is None:
            raise FilterError(
                f"{self.op.name} on {self.field!r} needs a finite number or a date (2021-03-01, 2021-03, "
                f"March 2021, or a year as a number), got {self.value!r}"
            )

    def __str__(self) -> str:
        value = self.value.isoformat() if isinstance(self.value, date) else self.value
        return f"{self.field} {self.op.symbol} {value!r}"


@dataclass(frozen=True)
class And:
    items: tuple[Filter, ...]

    def __str__(self) -> str:
        return "(" + " AND ".join(str(i) for i in self.items) + ")"


@dataclass(frozen=True)
class Or:
    items: tuple[Filter, ...]

    def __str__(self) -> str:
        return "(" + " OR ".join(str(i) for i in self.items) + ")"


Filter = Condition | And | Or


def _is_number(value: Any) -> bool:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int past the float range
        return False


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (str, bool, date)) or _is_number(value)


def check_filter(flt: object) -> Filter:
    """``flt`` if it is a filter within the depth and size limits; a ``FilterError`` naming the limit otherwise."""
    stack: list[tuple[object, int]] = [(flt, 1)]
    leaves = 0
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Condition):
            leaves += 1
            if leaves > MAX_FILTER_CONDITIONS:
                raise FilterError(f"a filter may hold at most {MAX_FILTER_CONDITIONS} conditions")
        elif isinstance(item, (And, Or)):
            if depth > MAX_FILTER_DEPTH:
                raise FilterError(f"a filter may nest AND/OR at most {MAX_FILTER_DEPTH} levels deep")
            if not isinstance(item.items, tuple) or not item.items:
                raise FilterError(f"{type(item).__name__} needs a non-empty tuple of filters, got {item.items!r}")
            stack.extend((sub, depth + 1) for sub in item.items)
        else:
            raise FilterError(f"a filter is a Condition, And or Or, got {type(item).__name__}: {item!r:.80}")
    return flt  # type: ignore[return-value]


def conditions(flt: Filter) -> list[Condition]:
    """All leaf conditions of a filter, left to right."""
    if isinstance(flt, Condition):
        return [flt]
    return [c for item in flt.items for c in conditions(item)]


def all_of(items: list[Filter]) -> Filter | None:
    if not items:
        return None
    return items[0] if len(items) == 1 else And(tuple(items))


# The value is ``.*\S`` (greedy, then the trailing spaces): a lazy ``.+?\s*$`` is quadratic on long runs of spaces.
_CLAUSE = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*(>=|<=|!=|=|>|<|\bnot\s+in\b|\bin\b)\s*(.*\S)\s*$", re.IGNORECASE)
_OPS = {"=": Op.EQ, "!=": Op.NE, ">": Op.GT, ">=": Op.GTE, "<": Op.LT, "<=": Op.LTE, "in": Op.IN, "not in": Op.NIN}


def _scalar(raw: str) -> Any:
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        return raw[1:-1]
    try:
        return int(raw)
    except ValueError:  # not an integer: maybe a float, else the text itself
        pass
    try:
        return float(raw)
    except ValueError:
        return raw


def parse_filter(clauses: list[str]) -> Filter | None:
    """Parse CLI clauses such as ``year>=2015`` or ``country in India,Spain``; all are ANDed."""
    if isinstance(clauses, str):  # iterating it would read one clause per character
        raise FilterError(f"filter clauses must be a list, not the single string {clauses!r}; pass [{clauses!r}]")
    if len(clauses) > MAX_FILTER_CONDITIONS:
        raise FilterError(f"at most {MAX_FILTER_CONDITIONS} filter clauses, got {len(clauses)}")
    parsed: list[Filter] = []
    for clause in clauses:
        if not isinstance(clause, str):
            raise FilterError(f"a filter clause is text such as 'year>=2015', got {clause!r}")
        if len(clause) > MAX_FILTER_CHARS:
            raise FilterError(f"a filter clause may be at most {MAX_FILTER_CHARS:,} characters, got {len(clause):,}")
        m = _CLAUSE.match(clause)
        if not m:
            raise FilterError(
                f"cannot parse filter {clause!r}; use FIELD=VALUE, FIELD!=VALUE, FIELD>=N, 'FIELD in A,B' "
                "or 'FIELD not in A,B'"
            )
        fld, sym, raw = m.group(1), " ".join(m.group(2).lower().split()), m.group(3)
        op = _OPS[sym]
        if op in (Op.IN, Op.NIN):
            quote = "'" if "'" in raw and '"' not in raw else '"'
            try:
                value: Any = [_scalar(v) for v in next(csv.reader([raw], skipinitialspace=True, quotechar=quote))]
            except csv.Error as exc:  # a carriage return outside quotes, say
                raise FilterError(f"cannot read the list of values in {clause!r}: {exc}") from exc
        else:
            value = _scalar(raw)
        parsed.append(Condition(fld, op, value))
    return all_of(parsed)


def from_obj(obj: Any) -> Filter:
    """Build a filter from JSON-like data.

    ``{"and": [...]}`` / ``{"or": [...]}`` combine; ``{"field": "f", "op": "gte", "value": 3}`` is a
    condition; the shorthand ``{"f": value, "g": {"gte": 3}}`` ANDs equality and operator clauses.
    At most ``MAX_FILTER_DEPTH`` levels of and/or and ``MAX_FILTER_CONDITIONS`` conditions.
    """
    return check_filter(_from_obj(obj, 1))


def _from_obj(obj: Any, depth: int) -> Filter:
    if depth > MAX_FILTER_DEPTH:
        raise FilterError(f"a filter may nest and/or at most {MAX_FILTER_DEPTH} levels deep")
    if not isinstance(obj, dict) or not obj:
        raise FilterError(f"a filter must be a non-empty JSON object, got {obj!r}")
    if set(obj) == {"and"} or set(obj) == {"or"}:
        key = next(iter(obj))
        items = obj[key]
        if not isinstance(items, list) or not items:
            raise FilterError(f"{key!r} needs a non-empty list")
        if len(items) > MAX_FILTER_CONDITIONS:
            raise FilterError(f"{key!r} holds {len(items)} filters; a filter may hold at most {MAX_FILTER_CONDITIONS}")
        parts = tuple(_from_obj(i, depth + 1) for i in items)
        return And(parts) if key == "and" else Or(parts)
    if set(obj) == {"field", "op", "value"}:
        try:
            op = Op(str(obj["op"]).lower())
        except ValueError as exc:
            raise FilterError(f"unknown operator {obj['op']!r}; use one of {[o.value for o in Op]}") from exc
        return Condition(str(obj["field"]), op, obj["value"])
    parts_list: list[Filter] = []
    for fld, spec in obj.items():
        if isinstance(spec, dict) and not spec:
            raise FilterError(f'{fld!r}: an operator object needs at least one operator, such as {{"gte": 3}}')
        if isinstance(spec, dict):
            for op_name, value in spec.items():
                try:
                    op = Op(op_name.lower().lstrip("$"))
                except ValueError as exc:
                    raise FilterError(f"unknown operator {op_name!r} on {fld!r}") from exc
                parts_list.append(Condition(fld, op, value))
        elif isinstance(spec, list):
            parts_list.append(Condition(fld, Op.IN, spec))
        else:
            parts_list.append(Condition(fld, Op.EQ, spec))
    result = all_of(parts_list)
    assert result is not None
    return result


def parse_filter_json(text: str) -> Filter:
    """A filter from JSON text (see ``from_obj``), within ``MAX_FILTER_CHARS`` and the nesting limit."""
    if not isinstance(text, str):
        raise FilterError(f"filter JSON must be text, got {type(text).__name__}")
    if len(text) > MAX_FILTER_CHARS:
        raise FilterError(f"filter JSON may be at most {MAX_FILTER_CHARS:,} characters, got {len(text):,}")
    depth = deepest = 0
    for bracket in _BRACKET.finditer(_JSON_STRING.sub('""', text)):  # nesting outside string literals
        depth += 1 if bracket.group(0) in "[{" else -1
        deepest = max(deepest, depth)
    if deepest > _JSON_BRACKETS:
        raise FilterError(
            f"filter JSON nests {deepest} brackets deep; the limit is {_JSON_BRACKETS} "
            f"(at most {MAX_FILTER_DEPTH} levels of and/or)"
        )
    try:
        obj = json.loads(text)
    except ValueError as exc:  # JSONDecodeError, or an integer past Python's 4,300-digit limit
        raise FilterError(f"filter is not valid JSON: {exc}") from exc
    return from_obj(obj)


@dataclass
class Extraction:
    """A query read for filters: the filter, what is left to search by meaning, what was read and why."""

    filter: Filter | None
    semantic_query: str
    matches: list[str] = field(default_factory=list)
    # the query's words read as wanted values, numbers or field names (no request, cue, negation or stop
    # words): what the filter's rows hold in their fields
    read_words: list[str] = field(default_factory=list)
    # the words of the text values it wants ("Syrah", "Tom Hanks"): no number, field name or flag
    value_words: list[str] = field(default_factory=list)
    read_end: int = 0  # where the last character the reading used ends (0: none)

    @property
    def conditions(self) -> list[Condition]:
        return conditions(self.filter) if self.filter is not None else []
