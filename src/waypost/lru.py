"""A bounded map from collection name to a per-collection object (live index, tree, graph): at most
``capacity`` stay open; opening one more closes the least recently used, outside the map's lock."""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

from waypost.errors import WaypostError

V = TypeVar("V")

DEFAULT_OPEN_COLLECTIONS = 8

logger = logging.getLogger("waypost.lru")


class CollectionLRU(Generic[V]):
    """``get(name)`` returns the open object for ``name``, made by ``make(name)`` on first use. Past
    ``capacity`` the least recently used is removed and handed to ``close`` (which must leave nothing
    unsaved: a later ``get`` makes the object afresh from what was saved)."""

    def __init__(self, capacity: int, make: Callable[[str], V], close: Callable[[str, V], None] | None = None) -> None:
        if capacity < 1:
            raise WaypostError(f"max_open_collections must be at least 1, got {capacity}")
        self.capacity = capacity
        self._make = make
        self._close = close
        self._open: OrderedDict[str, V] = OrderedDict()
        self._lock = threading.Lock()
        self.evictions = 0

    def get(self, name: str) -> V:
        with self._lock:
            found = self._open.get(name)
            if found is not None:
                self._open.move_to_end(name)
                return found
            found = self._make(name)
            self._open[name] = found
            evicted: list[tuple[str, V]] = []
            while len(self._open) > self.capacity:
                evicted.append(self._open.popitem(last=False))
            self.evictions += len(evicted)
        for old_name, old in evicted:  # closing may save work: never under the lock every query takes
            logger.debug("closing collection %r: more than %d open", old_name, self.capacity)
            try:
                self._closed(old_name, old)
            except Exception:  # not this caller's failure; what was not saved is rebuilt from the store
                logger.exception("closing collection %r failed", old_name)
        return found

    def pop(self, name: str) -> V | None:
        """Remove ``name`` without closing it (the caller decides what happens to it)."""
        with self._lock:
            return self._open.pop(name, None)

    def close_all(self) -> None:
        """Close every open object (each one even if another fails; the first failure is raised)."""
        with self._lock:
            items = list(self._open.items())
            self._open.clear()
        failure: BaseException | None = None
        for name, value in items:
            try:
                self._closed(name, value)
            except Exception as exc:  # the rest still close; re-raised below
                failure = failure or exc
        if failure is not None:
            raise failure

    def _closed(self, name: str, value: V) -> None:
        if self._close is not None:
            self._close(name, value)

    def __len__(self) -> int:
        return len(self._open)

    def __contains__(self, name: object) -> bool:
        return name in self._open

    def names(self) -> list[str]:
        """Open collections, least recently used first."""
        with self._lock:
            return list(self._open)


__all__ = ["DEFAULT_OPEN_COLLECTIONS", "CollectionLRU"]
