"""Cost of the rule filter extractor on a real collection: its build and its per-query extraction.

    PYTHONPATH=$PWD/src OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_extractor.py \
        [--store ~/.cache/waypost/eval/netflix-*] [--data ../shared/data/netflix] [--repeat 7] [--dump out.json]

The store is one that ``waypost eval DATA --strategy metadata`` left behind; it is opened read-only (nothing
is added, deleted or built). The build is what the first metadata query after a write pays: a cold build is
the first in the process, warm builds follow over the same values, and "after write" builds see 20 new names
in each large field (caches that outlive one generation count for them). Queries are
the data set's own plus their lower-cased forms. ``--dump`` writes every extraction, to compare two versions.
``--other DIR...`` counts the questions of other data sets (not catalogue queries) that get a filter anyway.
Run the script with another checkout's ``src`` on PYTHONPATH for a baseline in the same session.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import glob
import inspect
import json
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any

import waypost
from waypost.engine import Engine
from waypost.filters.extract import FilterExtractor


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class AfterWrite:
    """The catalog as the next generation sees it: 20 new people's names in each field of many values."""

    def __init__(self, inner: Any, tag: int) -> None:
        self.inner, self.tag = inner, tag

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def values(self, name: str) -> dict[str, int]:
        counts = dict(self.inner.values(name))
        if len(counts) > 1000:
            counts.update({f"Newperson{self.tag}x{i} Written": 1 for i in range(20)})
        return counts


def read_texts(data: Path) -> list[str]:
    with (data / "queries.jsonl").open() as f:
        return [str(json.loads(line)["text"]) for line in f if line.strip()]


def load_queries(data: Path) -> list[str]:
    texts = read_texts(data)
    return texts + [t.lower() for t in texts]


def main() -> None:
    parser = argparse.ArgumentParser()
    found = sorted(glob.glob(os.path.expanduser("~/.cache/waypost/eval/netflix-*")))
    parser.add_argument("--store", type=Path, default=Path(found[-1]) if found else None)
    parser.add_argument("--data", type=Path, default=Path("/work/shared/data/netflix"))
    parser.add_argument("--collection", default="corpus")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--dump", type=Path, default=None)
    parser.add_argument(
        "--other",
        type=Path,
        nargs="*",
        default=[],
        help="data sets whose questions are not catalogue queries: report how many of them get a filter",
    )
    parser.add_argument(
        "--long",
        action="store_true",
        help="also time one extraction of two pasted texts (the set's queries end to end; one sentence dense in "
        "numbers, repeated) at 15,000 and 60,000 characters",
    )
    args = parser.parse_args()
    if args.store is None:
        parser.error("no store: run `waypost eval DATA --strategy metadata` first or pass --store")
    queries = load_queries(args.data)
    engine = Engine(args.store)
    metadata = engine.indexes.get(args.collection).metadata
    values = sum(len(metadata.values(n)) for n in metadata.fields)

    builds: list[float] = []
    first: list[float] = []
    extractor: Any = None
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        extractor = FilterExtractor(metadata)
        t1 = time.perf_counter()
        extractor.extract(queries[0])
        t2 = time.perf_counter()
        builds.append((t1 - t0) * 1000)
        first.append((t2 - t1) * 1000)
    after_write: list[float] = []
    for tag in range(args.repeat):
        t0 = time.perf_counter()
        FilterExtractor(AfterWrite(metadata, tag))
        after_write.append((time.perf_counter() - t0) * 1000)
    per_query: list[float] = []
    # each pass reads every query anew: no kept readings (older checkouts: none, or an lru_cache to clear)
    keeps = "readings_kept" in inspect.signature(FilterExtractor).parameters
    extractor = FilterExtractor(metadata, readings_kept=0) if keeps else FilterExtractor(metadata)
    forget = getattr(getattr(extractor, "_read", None), "cache_clear", lambda: None)
    extractor.extract(queries[0])
    for _ in range(3):
        for q in queries:
            forget()
            t0 = time.perf_counter()
            extractor.extract(q)
            per_query.append((time.perf_counter() - t0) * 1000)
    report: dict[str, Any] = {
        "code": str(Path(str(waypost.__file__)).parent),
        "store": str(args.store),
        "distinct_string_values": values,
        "build_cold_ms": round(builds[0], 1),
        "build_warm_median_ms": round(statistics.median(builds[1:] or builds), 1),
        "build_all_ms": [round(b, 1) for b in builds],
        "build_after_write_median_ms": round(statistics.median(after_write), 1),
        "first_query_median_ms": round(statistics.median(first), 2),
        "query_p50_ms": round(percentile(per_query, 0.5), 3),
        "query_p95_ms": round(percentile(per_query, 0.95), 3),
        "queries": len(queries),
        "load_avg": [round(x, 2) for x in os.getloadavg()],
    }
    if args.long:  # a pasted text: time should grow with its length, not its square
        pasted = " ".join(queries)
        numbers = "Dramas from 2010 rated above 7, at most 120 minutes long, with a Metascore of 45% before 1999. "
        for name, text in (("long_query_s", pasted), ("long_numbers_s", numbers)):
            text = text * (60_000 // len(text) + 1)
            for size in (15_000, 60_000):
                t0 = time.perf_counter()
                extractor.extract(text[:size])
                report.setdefault(name, {})[str(size)] = round(time.perf_counter() - t0, 3)
    fields: Counter[str] = Counter()  # per field: questions of other sets with a condition on it
    for other in args.other:  # precision: a question of another set should rarely read as a catalogue filter
        texts = read_texts(other)
        extractions = [extractor.extract(t) for t in texts]
        with_filter = [e for e in extractions if e.filter is not None]
        for e in with_filter:
            fields.update({c.field for c in e.conditions})
        report.setdefault("other_sets", {})[other.name] = {"questions": len(texts), "with_filter": len(with_filter)}
    if args.other:
        report["other_sets_fields"] = dict(fields.most_common())
    print(json.dumps(report))
    if args.dump is not None:
        out = {}
        for q in queries:
            ex = extractor.extract(q)
            out[q] = {"filter": str(ex.filter), "semantic_query": ex.semantic_query, "matches": ex.matches}
        args.dump.write_text(json.dumps(out, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
