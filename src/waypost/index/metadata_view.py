"""The metadata indexes of an index set's segments read as one (``MetadataView``): live positions only,
offset by each segment's place. The filter extractor reads a collection's fields through it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from waypost.errors import FilterError
from waypost.filters.catalog import FieldCatalog, FieldKind, kind_of
from waypost.filters.dates import format_day
from waypost.filters.model import Filter, Op, conditions
from waypost.index.metadata import (
    BoolArray,
    FieldStats,
    IntArray,
    MetadataIndex,
    check_range,
    date_fields_of,
    field_kind,
)
from waypost.index.topk import Mask

__all__ = ["MetadataLookup", "MetadataView"]


class MetadataView:
    """The metadata indexes of several segments as one, over live positions only."""

    def __init__(self, parts: Sequence[tuple[MetadataIndex, int, BoolArray | None]], size: int) -> None:
        self._parts = list(parts)
        self.size = size
        self._stats: dict[str, FieldStats] | None = None

    @staticmethod
    def _live(live: BoolArray | None, positions: IntArray) -> IntArray:
        return positions if live is None else positions[live[positions]]

    @property
    def stats(self) -> dict[str, FieldStats]:
        """Each field's kind, list-ness and count over live positions only."""
        if self._stats is None:
            stats: dict[str, FieldStats] = {}
            names = {n for index, _o, _l in self._parts for n in index.stats}
            for name in sorted(names):
                parts = [index.summary(name, live) for index, _o, live in self._parts]
                found = [p for p in parts if p is not None]
                if not found:
                    continue
                strings, numbers = sum(p.strings for p in found), sum(p.numbers for p in found)
                dates, documents = sum(p.dates for p in found), sum(p.documents for p in found)
                stats[name] = FieldStats(
                    field_kind(strings, numbers, dates, documents),
                    any(p.is_list for p in found),
                    documents,
                    strings,
                    numbers,
                    dates,
                )
            self._stats = stats
        return self._stats

    @property
    def fields(self) -> list[str]:
        return sorted(self.stats)

    def field_kind(self, name: str) -> FieldKind | None:
        st = self.stats.get(name)
        return None if st is None else kind_of(st.kind, st.is_list)

    @property
    def numeric(self) -> list[str]:
        """Names of the fields that hold numbers (in live positions)."""
        return [n for n, st in self.stats.items() if st.kind in ("number", "mixed")]

    def values(self, name: str) -> dict[str, int]:
        """Display value -> number of live chunks carrying it, for a string field."""
        counts: dict[str, int] = {}
        for index, _offset, live in self._parts:
            for key, pos in index.inverted.get(name, {}).items():
                n = len(pos) if live is None else int(live[pos].sum())
                if n:
                    shown = index.display[name][key]
                    counts[shown] = counts.get(shown, 0) + n
        return counts

    def distinct(self, name: str) -> int:
        return len(self.values(name))

    def numeric_range(self, name: str) -> tuple[float, float] | None:
        lo, hi = math.inf, -math.inf
        for index, _offset, live in self._parts:
            col = index.numeric.get(name)
            if col is None or len(col.values) == 0:
                continue
            values = col.values if live is None else col.values[live[col.positions]]
            if values.size:
                lo, hi = min(lo, float(values[0])), max(hi, float(values[-1]))
        return None if lo > hi else (lo, hi)

    def date_fields(self) -> list[str]:
        """Fields of kind "date" (over live positions), the one with the most dated positions first."""
        return date_fields_of(self.stats)

    def date_range(self, name: str) -> tuple[float, float] | None:
        """Earliest and latest live date of a field, in days since 1970-01-01 UTC."""
        lo, hi = math.inf, -math.inf
        for index, _offset, live in self._parts:
            col = index.dates.get(name)
            if col is None or len(col.values) == 0:
                continue
            values = col.values if live is None else col.values[live[col.positions]]
            if values.size:
                lo, hi = min(lo, float(values[0])), max(hi, float(values[-1]))
        return None if lo > hi else (lo, hi)

    def date_span(self, name: str) -> tuple[str, str] | None:
        """``date_range`` as ISO dates (for display)."""
        found = self.date_range(name)
        return None if found is None else (format_day(found[0]), format_day(found[1]))

    def positions(self, name: str, value: Any) -> IntArray:
        parts = [self._live(live, index.positions(name, value)) + offset for index, offset, live in self._parts]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def mask(self, flt: Filter) -> Mask:

        known = self.stats
        for cond in conditions(flt):
            if cond.field not in known:
                raise FilterError(
                    f"unknown metadata field {cond.field!r}; known fields: {', '.join(self.fields) or 'none'}"
                )
            if cond.op.positive not in (Op.EQ, Op.IN):
                check_range(cond, known[cond.field])
        if not self._parts:
            return np.zeros(0, dtype=np.bool_)
        return np.concatenate([index.mask(flt, strict=False) for index, _offset, _live in self._parts])


MetadataLookup = MetadataIndex | MetadataView  # one index or a segmented view


def _implements_catalog(index: MetadataIndex, view: MetadataView) -> tuple[FieldCatalog, FieldCatalog]:
    """Both are ``FieldCatalog``s (checked by mypy here, where the two meet)."""
    return index, view
