"""Pre-filter indexes over metadata: inverted lists for strings, sorted arrays for numbers.

A filter evaluates to a boolean mask over chunk positions; retrieval then searches only inside it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from waypost.errors import FilterError
from waypost.filters.model import And, Condition, Filter, Op, Or
from waypost.index.topk import Mask
from waypost.types import Metadata

IntArray = npt.NDArray[np.int64]


def _key(value: Any) -> Any:
    if isinstance(value, str):
        return value.casefold()
    if isinstance(value, bool):
        return str(value).lower()
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _as_number(value: Any) -> float | None:
    """A finite number, also from a numeric-looking string; ``None`` otherwise."""
    if _is_number(value):
        return float(value)
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


@dataclass
class NumericColumn:
    values: npt.NDArray[np.float64]
    positions: IntArray


@dataclass
class FieldStats:
    kind: str  # "string", "number" or "mixed"
    is_list: bool = False
    documents: int = 0


@dataclass
class MetadataIndex:
    size: int
    inverted: dict[str, dict[Any, IntArray]] = field(default_factory=dict)
    numeric: dict[str, NumericColumn] = field(default_factory=dict)
    display: dict[str, dict[Any, str]] = field(default_factory=dict)
    stats: dict[str, FieldStats] = field(default_factory=dict)

    @classmethod
    def build(cls, metadata: list[Metadata]) -> MetadataIndex:
        inverted: dict[str, dict[Any, list[int]]] = defaultdict(lambda: defaultdict(list))
        numbers: dict[str, tuple[list[float], list[int]]] = defaultdict(lambda: ([], []))
        display: dict[str, dict[Any, str]] = defaultdict(dict)
        stats: dict[str, FieldStats] = {}
        for pos, meta in enumerate(metadata):
            for name, value in meta.items():
                values = value if isinstance(value, list) else [value]
                for v in values:
                    if v is None or v == "":
                        continue
                    if _is_number(v):
                        numbers[name][0].append(float(v))
                        numbers[name][1].append(pos)
                        kind = "number"
                    elif isinstance(v, (str, bool)):
                        inverted[name][_key(v)].append(pos)
                        display[name].setdefault(_key(v), str(v))
                        kind = "string"
                    else:
                        continue
                    st = stats.setdefault(name, FieldStats(kind))
                    st.is_list = st.is_list or isinstance(value, list)
                    if st.kind != kind:
                        st.kind = "mixed"  # numbers in some documents, text in others
        index = cls(size=len(metadata), display=dict(display), stats=stats)
        for name, table in inverted.items():
            index.inverted[name] = {k: np.unique(np.asarray(v, dtype=np.int64)) for k, v in table.items()}
        for name, (vals, poss) in numbers.items():
            arr = np.asarray(vals, dtype=np.float64)
            order = np.argsort(arr, kind="stable")
            index.numeric[name] = NumericColumn(arr[order], np.asarray(poss, dtype=np.int64)[order])
        for name, st in stats.items():
            st.documents = len(index._field_positions(name))
        return index

    @property
    def fields(self) -> list[str]:
        return sorted(self.stats)

    def values(self, name: str) -> dict[str, int]:
        """Display value -> number of chunks carrying it, for a string field."""
        return {self.display[name][k]: len(v) for k, v in self.inverted.get(name, {}).items()}

    def numeric_range(self, name: str) -> tuple[float, float] | None:
        col = self.numeric.get(name)
        if col is None or len(col.values) == 0:
            return None
        return float(col.values[0]), float(col.values[-1])

    def _field_positions(self, name: str) -> IntArray:
        parts = [*self.inverted.get(name, {}).values()]
        if name in self.numeric:
            parts.append(self.numeric[name].positions)
        return np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)

    def positions(self, name: str, value: Any) -> IntArray:
        return self.inverted.get(name, {}).get(_key(value), np.zeros(0, dtype=np.int64))

    def mask(self, flt: Filter) -> Mask:
        if isinstance(flt, And):
            out = np.ones(self.size, dtype=np.bool_)
            for item in flt.items:
                out &= self.mask(item)
            return out
        if isinstance(flt, Or):
            out = np.zeros(self.size, dtype=np.bool_)
            for item in flt.items:
                out |= self.mask(item)
            return out
        return self._condition(flt)

    def _condition(self, cond: Condition) -> Mask:
        if cond.field not in self.stats:
            raise FilterError(
                f"unknown metadata field {cond.field!r}; known fields: {', '.join(self.fields) or 'none'}"
            )
        out = np.zeros(self.size, dtype=np.bool_)
        values = cond.value if cond.op is Op.IN else [cond.value]
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
            return out
        col = self.numeric.get(cond.field)
        if col is None:
            raise FilterError(f"{cond.op.name} needs a numeric field, and {cond.field!r} holds text")
        bound = float(cond.value)
        if cond.op is Op.GT:
            out[col.positions[np.searchsorted(col.values, bound, "right") :]] = True
        elif cond.op is Op.GTE:
            out[col.positions[np.searchsorted(col.values, bound, "left") :]] = True
        elif cond.op is Op.LT:
            out[col.positions[: np.searchsorted(col.values, bound, "left")]] = True
        else:
            out[col.positions[: np.searchsorted(col.values, bound, "right")]] = True
        return out
