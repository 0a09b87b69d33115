"""Pre-filter indexes over metadata: inverted lists for strings, sorted arrays for numbers and dates.

A filter evaluates to a boolean mask over chunk positions; retrieval then searches only inside it. String
values that are dates (see ``waypost.filters.dates``) stay in the inverted lists (equality, display) and
also go into a sorted column of days since 1970-01-01 UTC, for ranges.
"""

from __future__ import annotations

import json
import math
import operator
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from waypost.errors import FilterError
from waypost.filters.catalog import FieldKind, kind_of
from waypost.filters.dates import Period, date_value, display, period
from waypost.filters.model import And, Condition, Filter, Op, Or
from waypost.index.topk import Mask
from waypost.types import Metadata

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def _key(value: Any) -> Any:
    if isinstance(value, str):
        return value.casefold()
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, date):
        return display(value).casefold()
    return value


_RANGE_TESTS: dict[Op, Callable[[float, float], bool]] = {
    Op.GT: operator.gt, Op.GTE: operator.ge, Op.LT: operator.lt, Op.LTE: operator.le,
}  # fmt: skip


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _as_number(value: Any) -> float | None:
    """A finite number, also from a numeric-looking string; ``None`` otherwise."""
    if _is_number(value):
        return float(value)
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:  # text that is not a number: not a number, as documented
            return None
        return number if math.isfinite(number) else None
    return None


@dataclass
class NumericColumn:
    values: npt.NDArray[np.float64]
    positions: IntArray


@dataclass
class FieldStats:
    kind: str  # "string", "number", "date" or "mixed"
    is_list: bool = False
    documents: int = 0
    strings: int = 0  # positions holding a string (dates written as strings included)
    numbers: int = 0  # positions holding a number
    dates: int = 0  # positions holding a date


def field_kind(strings: int, numbers: int, dates: int, documents: int) -> str:
    """A field is a date field when at least half its positions hold a date (the rest may be junk text or
    plain numbers); otherwise string, number or mixed as the values say."""
    if dates and 2 * dates >= documents:
        return "date"
    if strings and numbers:
        return "mixed"
    return "string" if strings else "number"


def check_range(cond: Condition, st: FieldStats) -> None:
    """A clear error when a GT/GTE/LT/LTE condition cannot apply to a field with these statistics."""
    if not st.numbers and not st.dates:
        raise FilterError(f"{cond.op.name} needs a numeric or date field, and {cond.field!r} holds text")
    is_number = _is_number(cond.value)
    if st.dates and not st.numbers and period(cond.value) is None:
        raise FilterError(
            f"{cond.field!r} holds dates and {cond.value!r} is not a date; use 2021-03-01, 2021-03, "
            "March 2021 or a year such as 2021"
        )
    if st.numbers and not st.dates and not is_number:
        raise FilterError(f"{cond.field!r} holds numbers, not dates; compare it with a number, not {cond.value!r}")


def _searched(col: NumericColumn, op: Op, bound: float, instant: bool = True, end: float = 0.0) -> IntArray:
    """Positions of a sorted column in a range: against a number or an instant (``instant``), or against the
    period ``[bound, end)``: after it, from its start, before it, up to its end."""
    values = col.values
    if op is Op.GT:
        return col.positions[np.searchsorted(values, bound, "right") if instant else np.searchsorted(values, end) :]
    if op is Op.GTE:
        return col.positions[np.searchsorted(values, bound, "left") :]
    if op is Op.LT:
        return col.positions[: np.searchsorted(values, bound, "left")]
    if op is Op.LTE:
        return col.positions[: np.searchsorted(values, bound, "right") if instant else np.searchsorted(values, end)]
    lo = np.searchsorted(values, bound, "left")  # EQ: inside the period (at the instant)
    hi = np.searchsorted(values, bound, "right") if instant else np.searchsorted(values, end)
    return col.positions[lo:hi]


def _period_positions(col: NumericColumn, op: Op, p: Period) -> IntArray:
    return _searched(col, op, p.start, instant=p.precision == "instant", end=p.end)


@dataclass
class MetadataIndex:
    size: int
    inverted: dict[str, dict[Any, IntArray]] = field(default_factory=dict)
    numeric: dict[str, NumericColumn] = field(default_factory=dict)
    display: dict[str, dict[Any, str]] = field(default_factory=dict)
    stats: dict[str, FieldStats] = field(default_factory=dict)
    lists: dict[str, IntArray] = field(default_factory=dict)  # positions whose value for the field is a list
    dates: dict[str, NumericColumn] = field(default_factory=dict)  # days since the epoch, UTC
    _latest: dict[str, npt.NDArray[np.float64]] = field(default_factory=dict, repr=False, compare=False)

    def summary(self, name: str, live: BoolArray | None) -> FieldStats | None:
        """Kind, list-ness and count of a field over the ``live`` positions only (``None``: absent)."""

        def held(arrays: list[IntArray]) -> BoolArray:
            flags = np.zeros(self.size, dtype=np.bool_)
            if arrays:
                flags[np.concatenate(arrays)] = True
            return flags if live is None else flags & live

        strings = held(list(self.inverted.get(name, {}).values()))
        numbers = held([self.numeric[name].positions] if name in self.numeric else [])
        dated = held([self.dates[name].positions] if name in self.dates else [])
        counts = (int(strings.sum()), int(numbers.sum()), int(dated.sum()))
        if not any(counts):
            return None
        listed = self.lists.get(name)
        is_list = listed is not None and bool(listed.size if live is None else live[listed].any())
        documents = int((strings | numbers | dated).sum())
        return FieldStats(field_kind(*counts, documents), is_list, documents, *counts)

    def _restat(self) -> None:
        """Field statistics from what the index holds (after a build or a merge)."""
        names = set(self.inverted) | set(self.numeric) | set(self.dates)
        self.stats = {}
        for name in sorted(names):
            st = self.summary(name, None)
            if st is not None:
                self.stats[name] = st
        self.numeric = {n: c for n, c in self.numeric.items() if len(c.values)}
        self.dates = {n: c for n, c in self.dates.items() if len(c.values)}

    def _derive_dates(self) -> None:
        """Date columns from the string values that are dates (their positions stay in the inverted lists)."""
        for name, table in self.inverted.items():
            shown = self.display.get(name, {})
            days: list[npt.NDArray[np.float64]] = []
            where: list[IntArray] = []
            for key, pos in table.items():
                day = date_value(shown.get(key, key))
                if day is not None:
                    days.append(np.full(len(pos), day, dtype=np.float64))
                    where.append(np.asarray(pos, dtype=np.int64))
            if days:
                arr = np.concatenate(days)
                order = np.argsort(arr, kind="stable")
                self.dates[name] = NumericColumn(arr[order], np.concatenate(where)[order])

    @classmethod
    def build(cls, metadata: list[Metadata]) -> MetadataIndex:
        inverted: dict[str, dict[Any, list[int]]] = defaultdict(lambda: defaultdict(list))
        numbers: dict[str, tuple[list[float], list[int]]] = defaultdict(lambda: ([], []))
        display: dict[str, dict[Any, str]] = defaultdict(dict)
        lists: dict[str, list[int]] = defaultdict(list)
        for pos, meta in enumerate(metadata):
            for name, value in meta.items():
                values = value if isinstance(value, list) else [value]
                kept = False
                for v in values:
                    if v is None or v == "":
                        continue
                    if _is_number(v):  # a field may hold numbers in some documents, text in others
                        numbers[name][0].append(float(v))
                        numbers[name][1].append(pos)
                    elif isinstance(v, (str, bool, date)):  # a date object is kept as its ISO string
                        inverted[name][_key(v)].append(pos)
                        display[name].setdefault(_key(v), display_text(v))
                    else:
                        continue
                    kept = True
                if kept and isinstance(value, list):
                    lists[name].append(pos)
        index = cls(size=len(metadata), display=dict(display))
        for name, table in inverted.items():
            index.inverted[name] = {k: np.unique(np.asarray(v, dtype=np.int64)) for k, v in table.items()}
        for name, (vals, poss) in numbers.items():
            arr = np.asarray(vals, dtype=np.float64)
            order = np.argsort(arr, kind="stable")
            index.numeric[name] = NumericColumn(arr[order], np.asarray(poss, dtype=np.int64)[order])
        index.lists = {n: np.asarray(p, dtype=np.int64) for n, p in lists.items()}
        index._derive_dates()
        index._restat()
        return index

    @property
    def fields(self) -> list[str]:
        return sorted(self.stats)

    def field_kind(self, name: str) -> FieldKind | None:
        st = self.stats.get(name)
        return None if st is None else kind_of(st.kind, st.is_list)

    def values(self, name: str) -> dict[str, int]:
        """Display value -> number of chunks carrying it, for a string field."""
        return {self.display[name][k]: len(v) for k, v in self.inverted.get(name, {}).items()}

    def numeric_range(self, name: str) -> tuple[float, float] | None:
        col = self.numeric.get(name)
        if col is None or len(col.values) == 0:
            return None
        return float(col.values[0]), float(col.values[-1])

    def date_fields(self) -> list[str]:
        """Fields of kind "date", the one with the most dated positions first."""
        return date_fields_of(self.stats)

    def date_range(self, name: str) -> tuple[float, float] | None:
        """Earliest and latest date of a field, in days since 1970-01-01 UTC."""
        col = self.dates.get(name)
        if col is None or len(col.values) == 0:
            return None
        return float(col.values[0]), float(col.values[-1])

    def latest_dates(self, name: str) -> npt.NDArray[np.float64]:
        """Per position, its latest date for ``name`` in days since the epoch; NaN where it has none."""
        found = self._latest.get(name)
        if found is None:
            found = np.full(self.size, np.nan, dtype=np.float64)
            col = self.dates.get(name)
            if col is not None and len(col.values):
                # values ascend, so a position's last entry is its latest
                positions, first = np.unique(col.positions[::-1], return_index=True)
                found[positions] = col.values[::-1][first]
            found.flags.writeable = False
            self._latest[name] = found
        return found

    def _field_positions(self, name: str) -> IntArray:
        parts = [*self.inverted.get(name, {}).values()]
        if name in self.numeric:
            parts.append(self.numeric[name].positions)
        if name in self.dates:
            parts.append(self.dates[name].positions)
        return np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)

    def positions(self, name: str, value: Any) -> IntArray:
        return self.inverted.get(name, {}).get(_key(value), np.zeros(0, dtype=np.int64))

    def mask(self, flt: Filter, strict: bool = True) -> Mask:
        """Positions matching ``flt``. ``strict=False``: a field this index lacks matches nothing (one
        segment of many may not have seen a field that others have)."""
        if isinstance(flt, And):
            out = np.ones(self.size, dtype=np.bool_)
            for item in flt.items:
                out &= self.mask(item, strict)
            return out
        if isinstance(flt, Or):
            out = np.zeros(self.size, dtype=np.bool_)
            for item in flt.items:
                out |= self.mask(item, strict)
            return out
        return self._condition(flt, strict)

    def _condition(self, cond: Condition, strict: bool = True) -> Mask:
        if cond.op.negated:  # the complement: a row without the field holds no such value
            return ~self._condition(Condition(cond.field, cond.op.positive, cond.value), strict)
        if cond.field not in self.stats:
            if not strict:
                return np.zeros(self.size, dtype=np.bool_)
            raise FilterError(
                f"unknown metadata field {cond.field!r}; known fields: {', '.join(self.fields) or 'none'}"
            )
        out = np.zeros(self.size, dtype=np.bool_)
        values = cond.value if cond.op is Op.IN else [cond.value]
        dated = self.dates.get(cond.field)
        if cond.op in (Op.EQ, Op.IN):
            # A field may hold 2016 in one document and "2016" in another: look in both indexes.
            for v in values:
                number = _as_number(v)
                if number is not None and cond.field in self.numeric:
                    exact = self.numeric[cond.field]
                    lo = np.searchsorted(exact.values, number, "left")
                    hi = np.searchsorted(exact.values, number, "right")
                    out[exact.positions[lo:hi]] = True
                out[self.positions(cond.field, v)] = True
                if _is_number(v):
                    out[self.positions(cond.field, f"{v:g}")] = True
                within = period(v) if dated is not None else None  # 2021, "2021-03", a day: the whole period
                if dated is not None and within is not None:
                    out[_period_positions(dated, Op.EQ, within)] = True
            return out
        if strict:
            check_range(cond, self.stats[cond.field])
        col = self.numeric.get(cond.field)
        if col is not None and _is_number(cond.value):
            out[_searched(col, cond.op, float(cond.value))] = True
            if self.stats[cond.field].strings:  # "2018" beside 2019: compared as its number, as EQ reads it
                compare = _RANGE_TESTS[cond.op]
                for key, positions in self.inverted.get(cond.field, {}).items():
                    number = _as_number(key)
                    if number is not None and compare(number, float(cond.value)):
                        out[positions] = True
        bound = period(cond.value) if dated is not None else None
        if dated is not None and bound is not None:
            out[_period_positions(dated, cond.op, bound)] = True
        return out

    # -- segments: persist, merge --------------------------------------------------------------
    def save(self, path: Path) -> list[str]:
        keys: dict[str, list[str]] = {}
        ptr = [0]
        parts: list[IntArray] = []
        for name, table in self.inverted.items():
            keys[name] = list(table)
            for key in keys[name]:
                parts.append(table[key])
                ptr.append(ptr[-1] + len(table[key]))
        numeric_names = list(self.numeric)
        num_ptr = [0]
        for name in numeric_names:
            num_ptr.append(num_ptr[-1] + len(self.numeric[name].values))
        date_names = list(self.dates)
        empty = np.zeros(0, dtype=np.int64)
        arrays = {
            "metadata.inverted.npy": np.concatenate(parts) if parts else empty,
            "metadata.inverted_ptr.npy": np.asarray(ptr, dtype=np.int64),
            "metadata.numeric_values.npy": np.concatenate([self.numeric[n].values for n in numeric_names])
            if numeric_names
            else np.zeros(0, dtype=np.float64),
            "metadata.numeric_positions.npy": np.concatenate([self.numeric[n].positions for n in numeric_names])
            if numeric_names
            else empty,
            "metadata.numeric_ptr.npy": np.asarray(num_ptr, dtype=np.int64),
            "metadata.lists.npy": np.concatenate([self.lists[n] for n in self.lists]) if self.lists else empty,
            "metadata.lists_ptr.npy": np.cumsum([0, *(len(self.lists[n]) for n in self.lists)]).astype(np.int64),
            "metadata.date_values.npy": np.concatenate([self.dates[n].values for n in date_names])
            if date_names
            else np.zeros(0, dtype=np.float64),
            "metadata.date_positions.npy": np.concatenate([self.dates[n].positions for n in date_names])
            if date_names
            else empty,
            "metadata.date_ptr.npy": np.cumsum([0, *(len(self.dates[n].values) for n in date_names)]).astype(np.int64),
        }
        for file, arr in arrays.items():
            np.save(path / file, arr, allow_pickle=False)
        header = {
            "size": self.size,
            "keys": keys,
            "numeric": numeric_names,
            "lists": list(self.lists),
            "dates": date_names,
            "display": self.display,
            "stats": {
                n: [st.kind, st.is_list, st.documents, st.strings, st.numbers, st.dates] for n, st in self.stats.items()
            },
        }
        (path / "metadata.json").write_text(json.dumps(header, ensure_ascii=False))
        return [*arrays, "metadata.json"]

    @classmethod
    def load(cls, path: Path) -> MetadataIndex:
        header = json.loads((path / "metadata.json").read_text())
        positions = np.load(path / "metadata.inverted.npy", allow_pickle=False)
        ptr = np.load(path / "metadata.inverted_ptr.npy", allow_pickle=False)
        index = cls(size=int(header["size"]), display=header["display"])
        i = 0
        for name, keys in header["keys"].items():
            table: dict[Any, IntArray] = {}
            for key in keys:
                table[key] = positions[ptr[i] : ptr[i + 1]]
                i += 1
            index.inverted[name] = table
        if i + 1 != len(ptr):
            raise ValueError(f"inconsistent metadata index in {path}")
        values = np.load(path / "metadata.numeric_values.npy", allow_pickle=False)
        num_pos = np.load(path / "metadata.numeric_positions.npy", allow_pickle=False)
        num_ptr = np.load(path / "metadata.numeric_ptr.npy", allow_pickle=False)
        for j, name in enumerate(header["numeric"]):
            index.numeric[name] = NumericColumn(
                values[num_ptr[j] : num_ptr[j + 1]], num_pos[num_ptr[j] : num_ptr[j + 1]]
            )
        list_pos = np.load(path / "metadata.lists.npy", allow_pickle=False)
        list_ptr = np.load(path / "metadata.lists_ptr.npy", allow_pickle=False)
        index.lists = {n: list_pos[list_ptr[j] : list_ptr[j + 1]] for j, n in enumerate(header["lists"])}
        if "dates" not in header:  # saved before date columns: derive them from the strings, as a build would
            index._derive_dates()
            index._restat()
            return index
        date_values = np.load(path / "metadata.date_values.npy", allow_pickle=False)
        date_pos = np.load(path / "metadata.date_positions.npy", allow_pickle=False)
        date_ptr = np.load(path / "metadata.date_ptr.npy", allow_pickle=False)
        if len(date_ptr) != len(header["dates"]) + 1 or date_values.shape != date_pos.shape:
            raise ValueError(f"inconsistent date columns in {path}")
        for j, name in enumerate(header["dates"]):
            index.dates[name] = NumericColumn(
                date_values[date_ptr[j] : date_ptr[j + 1]], date_pos[date_ptr[j] : date_ptr[j + 1]]
            )
        index.stats = {
            n: FieldStats(v[0], bool(v[1]), int(v[2]), int(v[3]), int(v[4]), int(v[5]))
            for n, v in header["stats"].items()
        }
        return index

    @classmethod
    def merge(cls, parts: Sequence[tuple[MetadataIndex, BoolArray]]) -> MetadataIndex:
        """One index over the live positions of several, laid end to end."""
        remaps: list[IntArray] = []
        offset = 0
        for index, live in parts:
            remap = np.full(index.size, -1, dtype=np.int64)
            remap[live] = np.arange(offset, offset + int(live.sum()), dtype=np.int64)
            offset += int(live.sum())
            remaps.append(remap)
        merged = cls(size=offset)
        inverted: dict[str, dict[Any, list[IntArray]]] = defaultdict(lambda: defaultdict(list))
        numbers: dict[str, tuple[list[npt.NDArray[np.float64]], list[IntArray]]] = defaultdict(lambda: ([], []))
        days: dict[str, tuple[list[npt.NDArray[np.float64]], list[IntArray]]] = defaultdict(lambda: ([], []))
        list_parts: dict[str, list[IntArray]] = {}
        for (index, _live), remap in zip(parts, remaps, strict=True):
            for name, table in index.inverted.items():
                for key, pos in table.items():
                    moved = remap[pos]
                    moved = moved[moved >= 0]
                    if moved.size:
                        inverted[name][key].append(moved)
                        merged.display.setdefault(name, {}).setdefault(key, index.display[name][key])
            for columns, into in ((index.numeric, numbers), (index.dates, days)):
                for name, col in columns.items():
                    moved = remap[col.positions]
                    keep = moved >= 0
                    into[name][0].append(col.values[keep])
                    into[name][1].append(moved[keep])
            for name, pos in index.lists.items():
                moved = remap[pos]
                list_parts.setdefault(name, []).append(moved[moved >= 0])
        for name, lists in inverted.items():
            merged.inverted[name] = {k: np.sort(np.concatenate(v)) for k, v in lists.items()}
        for merged_columns, gathered in ((merged.numeric, numbers), (merged.dates, days)):
            for name, (vals, poss) in gathered.items():
                arr = np.concatenate(vals)
                pos_arr = np.concatenate(poss)
                order = np.argsort(arr, kind="stable")
                merged_columns[name] = NumericColumn(arr[order], pos_arr[order])
        merged.lists = {n: np.concatenate(p) for n, p in list_parts.items() if sum(x.size for x in p)}
        merged._restat()  # kinds and counts of what survived: a field only deleted rows had is gone
        return merged


def date_fields_of(stats: dict[str, FieldStats]) -> list[str]:
    return sorted((n for n, st in stats.items() if st.kind == "date"), key=lambda n: (-stats[n].dates, n))


def display_text(value: str | bool | date) -> str:
    return display(value) if isinstance(value, date) else str(value)
