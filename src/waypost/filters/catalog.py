"""What filter extraction reads about a collection's metadata: the ``FieldCatalog`` interface.

The metadata index (``waypost.index.metadata``) implements it; the extractor and the LLM extractor only
read through it, so query understanding does not depend on how the index stores its columns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from waypost.filters.model import Filter

# "strings": a field whose values are lists of strings (genres: ["Thriller", "Drama"]).
FieldKind = Literal["number", "date", "string", "strings", "mixed"]


class FieldCatalog(Protocol):
    """Fields, their kinds and ranges, and their string values with counts."""

    @property
    def fields(self) -> list[str]:
        """All field names, sorted."""
        ...

    def field_kind(self, name: str) -> FieldKind | None:
        """The kind of a field; ``None`` when the collection has no such field."""
        ...

    def numeric_range(self, name: str) -> tuple[float, float] | None:
        """Smallest and largest number a field holds; ``None`` when it holds none."""
        ...

    def date_fields(self) -> list[str]:
        """Fields of kind "date", the one with the most dated values first."""
        ...

    def date_range(self, name: str) -> tuple[float, float] | None:
        """Earliest and latest date of a field, in days since 1970-01-01 UTC."""
        ...

    def values(self, name: str) -> dict[str, int]:
        """Every string value of a field (list elements one by one) -> how many chunks carry it."""
        ...

    def positions(self, name: str, value: Any) -> npt.NDArray[np.int64]:
        """Chunk positions carrying ``value`` in ``name`` (to tell which values imply others)."""
        ...

    def mask(self, flt: Filter) -> npt.NDArray[np.bool_]:
        """Which positions a filter keeps (to tell whether any row holds a number exactly)."""
        ...


def kind_of(kind: str, is_list: bool) -> FieldKind:
    """A ``FieldKind`` from an index's kind name and list-ness."""
    if kind == "string":
        return "strings" if is_list else "string"
    if kind in ("number", "date"):
        return "number" if kind == "number" else "date"
    return "mixed"


def is_numeric(kind: FieldKind | None) -> bool:
    return kind in ("number", "mixed")


def is_text(kind: FieldKind | None) -> bool:
    return kind in ("string", "strings", "mixed")
