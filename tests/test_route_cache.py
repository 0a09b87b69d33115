"""The query cache: exact keys with the collection's version, LRU with TTL, thread-safe, never semantic."""

from __future__ import annotations

import threading

import pytest

from waypost.engine import Engine
from waypost.errors import InvalidInputError
from waypost.filters.model import Condition, Op
from waypost.route.cache import CacheKey, QueryCache, cache_key, normalize_query
from waypost.types import Document, Explanation, RetrievalResult

DOCS = [
    Document("bp1", "Licorice raises blood pressure by retaining sodium.", metadata={"kind": "food"}),
    Document("bp2", "Beta blockers lower blood pressure and slow the heart.", metadata={"kind": "drug"}),
    Document("sleep", "Melatonin helps with jet lag and sleep onset.", metadata={"kind": "drug"}),
]


def result(label: str) -> RetrievalResult:
    return RetrievalResult([], Explanation(label, label, label))


def key(query: str, version: str = "v1", pipeline: str = "hybrid") -> CacheKey:
    return CacheKey(normalize_query(query), pipeline, 10, "c", "", "m", version)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_normalization_folds_width_of_space_and_composition_but_keeps_case() -> None:
    assert normalize_query("  Blood\tPRESSURE\n drugs ") == "Blood PRESSURE drugs"
    assert normalize_query("cafe\u0301") == normalize_query("caf\u00e9")
    # the planner splits the first and not the second: they are routed differently
    assert normalize_query("Where were Odile Brask and Tomas Vell born?") != normalize_query(
        "where were odile brask and tomas vell born?"
    )


def test_a_query_and_its_negation_never_share_an_entry() -> None:
    cache = QueryCache()
    cache.put(key("drugs that raise blood pressure"), result("raise"))
    assert cache.get(key("drugs that do not raise blood pressure")) is None
    assert cache.get(key("drugs that  raise blood pressure ")) is not None
    assert cache.stats()["hits"] == 1 and cache.stats()["misses"] == 1


def test_entries_expire_after_the_ttl() -> None:
    clock = Clock()
    cache = QueryCache(ttl_s=10.0, clock=clock)
    cache.put(key("q"), result("q"))
    clock.now = 9.9
    assert cache.get(key("q")) is not None
    clock.now = 10.0
    assert cache.get(key("q")) is None
    assert cache.stats()["expirations"] == 1 and len(cache) == 0


def test_the_least_recently_used_entry_goes_first() -> None:
    cache = QueryCache(max_entries=2)
    cache.put(key("a"), result("a"))
    cache.put(key("b"), result("b"))
    assert cache.get(key("a")) is not None  # "b" is now the least recently used
    cache.put(key("c"), result("c"))
    assert cache.get(key("b")) is None
    assert cache.get(key("a")) is not None and cache.get(key("c")) is not None
    assert cache.stats()["evictions"] == 1


def test_a_caller_editing_its_copy_never_changes_the_cached_result(engine: Engine) -> None:
    col = engine.collection("c", create=True)
    col.add(DOCS)
    cache = QueryCache()
    original = col.retrieve("blood pressure", "hybrid", 3)
    cache.put(key("q"), original)
    original.hits.clear()  # the caller's own object: the cache kept its own list
    first = cache.get(key("q"))
    assert first is not None and len(first.hits) == 3
    notes = list(first.explanation.notes)
    first.explanation.notes.append("edited")
    first.explanation.timings_ms["extra"] = 1.0
    first.hits = first.hits[:1]
    first.hits.append(first.hits[0])
    again = cache.get(key("q"))
    assert again is not None and len(again.hits) == 3
    assert again.explanation.notes == notes and "extra" not in again.explanation.timings_ms


def test_settings_are_checked() -> None:
    with pytest.raises(InvalidInputError):
        QueryCache(max_entries=0)
    with pytest.raises(InvalidInputError):
        QueryCache(ttl_s=0)


def test_concurrent_use_keeps_counts_and_bounds() -> None:
    cache = QueryCache(max_entries=50)

    def work(offset: int) -> None:
        for i in range(300):
            k = key(f"q{(i + offset) % 80}")
            if cache.get(k) is None:
                cache.put(k, result(k.query))

    threads = [threading.Thread(target=work, args=(n * 7,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stats = cache.stats()
    assert stats["hits"] + stats["misses"] == 1200
    assert len(cache) <= 50


def test_warming_fills_without_counting() -> None:
    cache = QueryCache()
    assert cache.warm(["a", "b"], lambda q: (key(q), result(q))) == 2
    assert cache.stats()["hits"] == 0 and cache.stats()["misses"] == 0
    found = cache.get(key(" a"))
    assert found is not None and found.explanation.strategy == "a"


def test_a_write_or_a_delete_moves_the_key_and_a_deleted_document_is_never_served(engine: Engine) -> None:
    col = engine.collection("c", create=True)
    col.add(DOCS)
    cache = QueryCache()
    query = "what raises blood pressure"
    before = cache_key(col, query, "hybrid", 3)
    cache.put(before, col.retrieve(query, "hybrid", 3))
    assert cache.get(cache_key(col, query, "hybrid", 3)) is not None  # nothing changed: served

    col.delete(["bp1"])
    after = cache_key(col, query, "hybrid", 3)
    assert after != before and after.version != before.version
    assert cache.get(after) is None  # the entry that held bp1 is unreachable
    fresh = col.retrieve(query, "hybrid", 3)
    assert "bp1" not in {h.chunk.document_id for h in fresh.hits}
    cache.put(after, fresh)
    served = cache.get(cache_key(col, query, "hybrid", 3))
    assert served is not None and "bp1" not in {h.chunk.document_id for h in served.hits}

    col.add([Document("bp3", "Salt raises blood pressure in sensitive people.")])
    assert cache.get(cache_key(col, query, "hybrid", 3)) is None  # an added document invalidates too


def test_every_part_of_the_key_counts(engine: Engine) -> None:
    col = engine.collection("c", create=True)
    col.add(DOCS)
    base = cache_key(col, "blood pressure", "hybrid", 3)
    drug = Condition("kind", Op.EQ, "drug")
    others = [
        cache_key(col, "blood pressure", "bm25", 3),
        cache_key(col, "blood pressure", "hybrid", 5),
        cache_key(col, "blood pressure", "hybrid", 3, drug),
        cache_key(col, "blood pressure", "auto", 3),
    ]
    assert len({base, *others}) == 5
    assert cache_key(col, "blood   pressure ", "hybrid", 3) == base
    assert cache_key(col, "Blood Pressure", "hybrid", 3) != base  # case is kept
    col.describe("Medical facts.")  # a description is not content: the key stays
    assert cache_key(col, "blood pressure", "hybrid", 3) == base


def test_warming_from_a_query_list_serves_the_first_user_from_the_cache(engine: Engine) -> None:
    from waypost.route.cache import warm

    col = engine.collection("c", create=True)
    col.add(DOCS)
    assert warm(col, ["blood pressure", "  ", "Salt and Blood Pressure"], k=3) == 2
    served = col.retrieve("blood   pressure", "auto", 3).explanation.route
    assert served is not None and served["cache_hit"]
    assert not col.retrieve("blood pressure", "auto", 4).explanation.route["cache_hit"]  # another k


def test_warming_refuses_a_bare_string(engine: Engine) -> None:
    from waypost.route.cache import warm

    col = engine.collection("c", create=True)
    col.add(DOCS)
    with pytest.raises(InvalidInputError, match="not one string"):
        warm(col, "blood pressure")
