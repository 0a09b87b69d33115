"""Filter expressions: conditions (EQ, IN, GT, GTE, LT, LTE) combined with AND/OR."""

from __future__ import annotations

import csv
import json
import math
import re
from dataclasses import dataclass
from datetime import date
from enum import StrEnum
from typing import Any

from waypost.errors import FilterError
from waypost.filters.dates import period


class Op(StrEnum):
    EQ = "eq"
    IN = "in"
    GT = "gt"
    GTE = "gte"
    LT = "lt"
    LTE = "lte"

    @property
    def symbol(self) -> str:
        return {"eq": "=", "in": "in", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}[self.value]


@dataclass(frozen=True)
class Condition:
    field: str
    op: Op
    value: Any

    def __post_init__(self) -> None:
        if not isinstance(self.field, str) or not self.field:
            raise FilterError(f"a filter needs a field name, got {self.field!r}")
        if self.op is Op.IN:
            if not isinstance(self.value, (list, tuple)) or not self.value:
                raise FilterError(f"IN on {self.field!r} needs a non-empty list of values, got {self.value!r}")
            if not all(_is_scalar(v) for v in self.value):
                raise FilterError(
                    f"IN on {self.field!r} takes plain values (text, numbers, dates, true/false): {self.value!r}"
                )
        elif self.op is Op.EQ:
            if not _is_scalar(self.value):
                raise FilterError(f"EQ on {self.field!r} takes one plain value, got {self.value!r}; use IN for lists")
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


def conditions(flt: Filter) -> list[Condition]:
    """All leaf conditions of a filter, left to right."""
    if isinstance(flt, Condition):
        return [flt]
    return [c for item in flt.items for c in conditions(item)]


def all_of(items: list[Filter]) -> Filter | None:
    if not items:
        return None
    return items[0] if len(items) == 1 else And(tuple(items))


_CLAUSE = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*(>=|<=|!=|=|>|<|\bin\b)\s*(.+?)\s*$", re.IGNORECASE)
_OPS = {"=": Op.EQ, ">": Op.GT, ">=": Op.GTE, "<": Op.LT, "<=": Op.LTE, "in": Op.IN}


def _scalar(raw: str) -> Any:
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        return raw[1:-1]
    try:
        return int(raw)
    except ValueError:
        pass
    try:
        return float(raw)
    except ValueError:
        return raw


def parse_filter(clauses: list[str]) -> Filter | None:
    """Parse CLI clauses such as ``year>=2015`` or ``country in India,Spain``; all are ANDed."""
    parsed: list[Filter] = []
    for clause in clauses:
        m = _CLAUSE.match(clause)
        if not m:
            raise FilterError(f"cannot parse filter {clause!r}; use FIELD=VALUE, FIELD>=N or 'FIELD in A,B'")
        fld, sym, raw = m.group(1), m.group(2).lower(), m.group(3)
        if sym == "!=":
            raise FilterError("'!=' is not supported; filters are EQ, IN, GT, GTE, LT, LTE")
        op = _OPS[sym]
        if op is Op.IN:
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
    """
    if not isinstance(obj, dict) or not obj:
        raise FilterError(f"a filter must be a non-empty JSON object, got {obj!r}")
    if set(obj) == {"and"} or set(obj) == {"or"}:
        key = next(iter(obj))
        items = obj[key]
        if not isinstance(items, list) or not items:
            raise FilterError(f"{key!r} needs a non-empty list")
        parts = tuple(from_obj(i) for i in items)
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
    try:
        obj = json.loads(text)
    except ValueError as exc:  # JSONDecodeError, or an integer past Python's 4,300-digit limit
        raise FilterError(f"filter is not valid JSON: {exc}") from exc
    return from_obj(obj)
