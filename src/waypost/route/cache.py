"""The query cache: an LRU with a time to live, keyed exactly (never by meaning).

A key names everything a result depends on: the normalized query text, the pipeline, k, the
collection, the filters, the embedding model and the collection's *version* (which moves on every
committed write or delete and changes on drop/recreate). A write therefore makes every older entry
unreachable, so a deleted document is never served from here; stale entries age out of the LRU.

Not a semantic cache: "drugs that raise blood pressure" and "drugs that do not raise blood pressure"
are close in embedding space but are different keys (semantic caches serve the answer of the opposite
question; see GPTCache #694)."""

from __future__ import annotations

import copy
import threading
import time
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from waypost.errors import InvalidInputError
from waypost.filters.model import Filter
from waypost.types import RetrievalResult

if TYPE_CHECKING:
    from waypost.engine import Collection

DEFAULT_MAX_ENTRIES = 500
DEFAULT_TTL_S = 1800.0


def normalize_query(query: str) -> str:
    """Unicode NFC, runs of whitespace collapsed to one space, ends trimmed. Case is kept: the planner and
    the router's entity features read capitals ("Odile Brask and Tomas Vell" splits, its lowercase does not),
    so two spellings may be routed differently and must not share an entry."""
    return " ".join(unicodedata.normalize("NFC", query).split())


@dataclass(frozen=True)
class CacheKey:
    query: str  # normalized (``normalize_query``)
    pipeline: str  # a pipeline label, or "auto"
    k: int
    collection: str
    filters: str  # canonical text of the filter ("" for none)
    embedder: str
    version: str  # the collection's store version: moves on every write and delete


def cache_key(collection: Collection, query: str, pipeline: str, k: int, filters: Filter | None = None) -> CacheKey:
    """The key of ``query`` run with ``pipeline`` (a label or "auto") on ``collection`` as it is now."""
    store = collection.engine.store
    return CacheKey(
        normalize_query(query),
        pipeline,
        int(k),
        collection.name,
        "" if filters is None else str(filters),
        collection.model,
        store.version(collection.name),
    )


class QueryCache:
    """Thread-safe LRU with a TTL. ``get`` hands back a copy (a new hit list, a new explanation), so a caller
    that trims, reorders or annotates the result never changes what the next caller gets."""

    def __init__(
        self,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        ttl_s: float = DEFAULT_TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1:
            raise InvalidInputError(f"max_entries must be a positive integer, got {max_entries!r}")
        if not isinstance(ttl_s, (int, float)) or isinstance(ttl_s, bool) or not ttl_s > 0:
            raise InvalidInputError(f"ttl_s must be a positive number of seconds, got {ttl_s!r}")
        self.max_entries = max_entries
        self.ttl_s = float(ttl_s)
        self._clock = clock
        self._entries: OrderedDict[CacheKey, tuple[float, RetrievalResult]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.evictions = 0
        self.expirations = 0

    def get(self, key: CacheKey) -> RetrievalResult | None:
        now = self._clock()
        with self._lock:
            found = self._entries.get(key)
            if found is not None and now - found[0] >= self.ttl_s:
                del self._entries[key]
                self.expirations += 1
                found = None
            if found is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            stored = found[1]
        return _copy(stored)

    def put(self, key: CacheKey, result: RetrievalResult) -> None:
        stored = _copy(result)  # outside the lock: later edits by the caller never reach the cache
        now = self._clock()
        with self._lock:
            self._entries[key] = (now, stored)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
                self.evictions += 1

    def warm(self, queries: Iterable[str], run: Callable[[str], tuple[CacheKey, RetrievalResult]]) -> int:
        """Fill the cache from a list of queries: ``run(query)`` returns the key and result to keep (for
        example the router's own key and result). Hit and miss counts are left alone; returns how many
        entries were stored."""
        if isinstance(queries, str):
            raise InvalidInputError("warm takes a list of queries, not one string")
        stored = 0
        for query in queries:
            key, result = run(query)
            self.put(key, result)
            stored += 1
        return stored

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def stats(self) -> dict[str, Any]:
        with self._lock:
            asked = self.hits + self.misses
            return {
                "entries": len(self._entries),
                "max_entries": self.max_entries,
                "ttl_s": self.ttl_s,
                "hits": self.hits,
                "misses": self.misses,
                "hit_rate": self.hits / asked if asked else 0.0,
                "evictions": self.evictions,
                "expirations": self.expirations,
            }


def _copy(result: RetrievalResult) -> RetrievalResult:
    """A copy a caller may edit: a new hit list (hits, chunks and provenance are frozen values) and a deep
    copy of the small explanation. Much cheaper than a deep copy of every chunk's text."""
    return RetrievalResult(list(result.hits), copy.deepcopy(result.explanation))


__all__ = ["DEFAULT_MAX_ENTRIES", "DEFAULT_TTL_S", "CacheKey", "QueryCache", "cache_key", "normalize_query"]


def warm(collection: Collection, queries: Iterable[str], k: int = 10) -> int:
    """Route each query of a list (a log of frequent queries, say) through ``strategy="auto"`` on
    ``collection``, so the engine's query cache holds their results before users ask; returns how many
    were run. Entries still follow the collection's version: a later write makes them unreachable."""
    if isinstance(queries, str):
        raise InvalidInputError("warm takes a list of queries, not one string (it would route each character)")
    done = 0
    for query in queries:
        if query.strip():
            collection.retrieve(query, "auto", k)
            done += 1
    return done
