"""Fuzzing benchmark: hypothesis-generated inputs against every parser, loader, the chunker and the query path.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_fuzz.py [--examples 100000] [--targets chunker,query]

Targets (benchmarks/fuzz_targets.py, shared with tests/test_fuzz.py): filter-clauses, filter-json, chunker,
loader-{txt,md,html,pdf,jsonl,csv} (files written to disk and read by ``load_path``), extractor (the rule
filter extractor over a real collection's metadata), query (``Collection.retrieve`` with bm25, dense, hybrid
and metadata, random k and filters, real MiniLM) and query-expensive (tree, graph and passage strategies).

Per target it prints inputs, refusals (``WaypostError``: the accepted answer to bad input), crashes (any other
exception, or a broken invariant; each new kind is printed when first seen), hangs (inputs over the target's time
limit in CPU seconds, so a loaded machine does not make them) and time. A watchdog ends the run and prints the
input if one input runs past ``--hard-limit`` wall-clock seconds (a blocked input uses no CPU).
The bar: 0 crashes, 0 hangs.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fuzz_targets import Target, collection_targets, offline_targets, open_collection
from hypothesis import HealthCheck, Phase, given, seed, settings

from waypost.errors import WaypostError

SHOW_TRACEBACKS = 3


@dataclass
class Tally:
    target: str
    inputs: int = 0
    refusals: int = 0
    crashes: int = 0
    hangs: int = 0
    seconds: float = 0.0
    slowest: float = 0.0
    kinds: dict[str, int] = field(default_factory=dict)  # crash signature -> count
    tracebacks: list[str] = field(default_factory=list)
    hang_inputs: list[str] = field(default_factory=list)


class Watchdog:
    """Ends the process, naming the input, when one input runs past the hard limit (a real hang)."""

    def __init__(self, hard_limit: float) -> None:
        self.hard_limit = hard_limit
        self.started: float | None = None
        self.label = ""
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self) -> None:
        while True:
            time.sleep(1.0)
            started = self.started
            if started is not None and time.perf_counter() - started > self.hard_limit:
                print(f"\nHANG: {self.label} ran over {self.hard_limit:.0f} s; stopping", flush=True)
                os._exit(3)


def _signature(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "?"
    return f"{type(exc).__name__} at {where}"


def fuzz(target: Target, examples: int, run_seed: int, watchdog: Watchdog, progress_every: int = 5000) -> Tally:
    tally = Tally(target.name)
    wall = time.perf_counter()

    @settings(
        max_examples=examples,
        phases=[Phase.generate],
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @seed(run_seed)
    @given(target.inputs)
    def run(value: Any) -> None:
        watchdog.label = f"{target.name} input {value!r:.2000}"
        start, start_cpu = time.perf_counter(), time.process_time()
        watchdog.started = start
        try:
            target.feed(value)
        except WaypostError:
            tally.refusals += 1
        except Exception as exc:  # a crash: counted and shown, and the run goes on
            tally.crashes += 1
            sig = _signature(exc)
            tally.kinds[sig] = tally.kinds.get(sig, 0) + 1
            if tally.kinds[sig] == 1:  # each new kind of crash as soon as it is seen
                shown = f"input {value!r:.500}\n" + "".join(traceback.format_exception(exc))
                print(f"  new crash in {target.name}: {shown}", flush=True)
                if len(tally.tracebacks) < SHOW_TRACEBACKS:
                    tally.tracebacks.append(shown)
        finally:
            watchdog.started = None
            # A hang is counted in CPU seconds, so a loaded shared machine does not make one; a blocked input
            # (no CPU used) is what the watchdog's wall-clock limit is for.
            elapsed = time.process_time() - start_cpu
            tally.inputs += 1
            tally.slowest = max(tally.slowest, elapsed)
            if tally.inputs % progress_every == 0:  # partial counts survive a run cut short
                print(
                    f"  ... {target.name}: {tally.inputs} inputs, {tally.crashes} crashes, {tally.hangs} hangs, "
                    f"{time.perf_counter() - wall:.0f} s",
                    flush=True,
                )
            if elapsed > target.time_limit:
                tally.hangs += 1
                if len(tally.hang_inputs) < SHOW_TRACEBACKS:
                    wall_s = time.perf_counter() - start
                    tally.hang_inputs.append(f"{elapsed:.1f} s CPU ({wall_s:.1f} s wall): {value!r:.300}")

    run()
    tally.seconds = time.perf_counter() - wall  # generation included
    return tally


def report(tally: Tally, limit: float) -> None:
    print(
        f"{tally.target:16} inputs {tally.inputs:>7}  refusals {tally.refusals:>7}  crashes {tally.crashes:>4}  "
        f"hangs (>{limit:g} s CPU) {tally.hangs:>3}  time {tally.seconds:8.1f} s  slowest {tally.slowest:6.2f} s CPU",
        flush=True,
    )
    for sig, count in tally.kinds.items():
        print(f"    crash x{count}: {sig}")
    for text in tally.tracebacks:
        print("    " + text.replace("\n", "\n    "))
    for text in tally.hang_inputs:
        print(f"    hang: {text}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=100_000, help="inputs per target")
    parser.add_argument("--targets", default="", help="comma-separated target names (default: all)")
    parser.add_argument("--per-target", default="", help="inputs for some targets, e.g. query=5000,query-expensive=200")
    parser.add_argument("--progress", type=int, default=5000, help="print partial counts every N inputs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hard-limit", type=float, default=300.0, help="seconds before one input ends the run")
    parser.add_argument("--json", type=Path, help="also write the counts here")
    args = parser.parse_args()
    wanted = {t for t in args.targets.split(",") if t}
    watchdog = Watchdog(args.hard_limit)
    counts = {name: int(n) for name, n in (item.split("=") for item in args.per_target.split(",") if item)}

    targets = offline_targets()
    with tempfile.TemporaryDirectory(prefix="waypost-fuzz-") as tmp:
        engine = None
        if not wanted or wanted & {"extractor", "query", "query-expensive"}:
            engine, collection = open_collection(Path(tmp) / "store")
            targets += collection_targets(collection)
        unknown = wanted - {t.name for t in targets}
        if unknown:
            sys.exit(f"unknown targets {sorted(unknown)}; known: {[t.name for t in targets]}")
        order = [t for t in args.targets.split(",") if t] or [t.name for t in targets]
        by_name = {t.name: t for t in targets}
        tallies = []
        for target in (by_name[name] for name in order):
            tally = fuzz(target, counts.get(target.name, args.examples), args.seed, watchdog, args.progress)
            report(tally, target.time_limit)
            tallies.append(tally)
        if engine is not None:
            engine.close()
    total_crashes = sum(t.crashes for t in tallies)
    total_hangs = sum(t.hangs for t in tallies)
    print(f"total: {sum(t.inputs for t in tallies)} inputs, {total_crashes} crashes, {total_hangs} hangs")
    if args.json:
        rows = [{k: v for k, v in vars(t).items() if k != "tracebacks"} for t in tallies]
        args.json.write_text(json.dumps(rows, indent=2))
    sys.exit(1 if total_crashes or total_hangs else 0)


if __name__ == "__main__":
    main()
