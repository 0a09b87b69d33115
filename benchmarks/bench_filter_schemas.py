"""Filter extraction on invented schemas the rules were not written against (held out until first run).

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src .venv/bin/python benchmarks/bench_filter_schemas.py \
        [--set a|b|c] [--out run.json] [--compare other_run.json] [--json]

Protocol. The schemas and the queries live in a package under ``benchmarks/data/``. ``data.py`` generates three
seeded collections of plain rows; ``cases.py`` holds, for each schema, catalogue queries with the conditions a
careful human would extract (alternatives, exclusions and optional conditions are marked) and questions that are
not catalogue queries, from which nothing should be extracted. The cases were written by someone who had not
seen the extractor's output, before any run, and then frozen: no query or expectation may change to suit an
extractor. The script checks a digest of ``CASES`` before it scores anything and refuses to run on others.

Two sets, each written and frozen before any run, by helpers who had not read the extractor: ``--set a``
(the default; ``benchmarks/data/filter_schemas/``) and ``--set b`` (``benchmarks/data/filter_schemas_b/``: stays,
laptops and books, 112 requests and 26 other questions, written after set a had been used for fixes). Each
set's first run is the held-out figure (the README gives both); fixes were then made from each set's failures,
so neither set is held out any more, and a new claim of generalization needs a new set.

Set a's schemas (today is pinned to 2025-06-01, which relative dates such as "next month" or "past events" are read
against):

* ``rentals``: 380 Berlin flats: district, rent_eur, rooms, area_m2, floor, available_from (date),
  pets_allowed ("yes"/"no"), furnished (bool), amenities (list), energy_class, landlord.
* ``events``: 260 tech events: city, country, start_date (date), ticket_price_usd, capacity, format, topics (list),
  speakers (list).
* ``recipes``: 320 recipes: cuisine, course, prep_time_min, calories, servings, protein_g, difficulty, diet (list),
  main_ingredients (list), author, rating, published (date).

Each schema's rows are indexed with ``MetadataIndex.build`` and every query goes through
``FilterExtractor.extract``. Conditions are compared as canonical "atoms", so that equivalent forms match:
numbers and dates become lower/upper bound atoms (``eq`` gives both; on an integer field ``> 3`` is ``>= 4``; a
date period such as 2025-07 stands for its first and last day; a bound at or beyond the data's min/max says
nothing and is dropped); text becomes case-insensitive sets; ``EQ x`` == ``IN [x]``; ``NE x`` == ``NIN [x]``;
on a single-valued field that every row has, ``not in S`` == ``in (domain - S)``. Columns of the table:

* exact (cat): catalogue queries whose every expected slot is met and nothing else was extracted;
* recall: expected slots met; wrong: extra or wrong conditions on an expected field; spurious: conditions on
  other fields; none clean: non-catalogue questions with nothing extracted;
* excl recall: exclusions read as exclusions; excl->positive: exclusions read as a positive filter on the very
  value excluded (``not in Mitte`` -> ``district = Mitte``), the harmful error; errors: extractor exceptions.

Alone, the script scores the run it makes, labelled NEW in the table. The failure listing shows every query
that is not exact (or, for a non-catalogue question, got a filter). With ``--compare OLD.json`` both runs are
scored, the other one as OLD and this one as NEW, and the queries where NEW is worse than OLD (lost exactness,
fewer slots met, more wrong/spurious/harmful conditions, or a filter on a question that OLD left alone) are
listed last.

Old against new: the script uses whatever ``waypost`` is on PYTHONPATH, so a baseline comes from another
checkout's ``src`` (say ``git worktree add /tmp/base <rev>``):

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=/tmp/base/src .venv/bin/python benchmarks/bench_filter_schemas.py \
        --out /tmp/filters-old.json
    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src .venv/bin/python benchmarks/bench_filter_schemas.py \
        --out /tmp/filters-new.json --compare /tmp/filters-old.json

``--json`` prints the table's counts, the number of failures and the NEW-worse queries as one JSON object
instead of markdown. The run JSON (``--out``) holds each query's extracted filter and conditions; it is also
what ``--compare`` reads, so a run saved once can serve as the baseline of many.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import hashlib
import importlib
import json
import sys
import traceback
from datetime import date
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent / "data"))  # filter_schemas/, however this is run
from filter_schemas.scoring import Schema, fmt, fslot, is_worse, score_case

import waypost
from waypost.filters.extract import FilterExtractor
from waypost.index.metadata import MetadataIndex

TODAY = date(2025, 6, 1)
# set -> (its package under benchmarks/data, sha256 of repr(CASES)): the frozen cases, as Python objects (layout
# changes to cases.py do not move it)
SETS = {
    "a": ("filter_schemas", "d460a8391c0d9f53b8f8c580ded9396578ce65df6bde4efdb7621851c6a52ad1"),
    "b": ("filter_schemas_b", "500378d2461df8143ef665b19db59923e81c6665ddeaca2653ed5165685c405c"),
    "c": ("filter_schemas_c", "62bc67a98714368c6b338698a2a0715dff555dfec26a7b4b55072c14c6d537d0"),
}
CASES: dict[str, list[dict[str, Any]]] = {}
SCHEMAS: dict[str, Any] = {}
DATE_FIELDS: dict[str, set[str]] = {}


def load_set(name: str) -> str:
    """Load a set's cases and schemas into the module's globals; the digest its cases must have."""
    package, digest = SETS[name]
    CASES.update(importlib.import_module(f"{package}.cases").CASES)
    data = importlib.import_module(f"{package}.data")
    SCHEMAS.update(data.SCHEMAS)
    DATE_FIELDS.update(data.DATE_FIELDS)
    return digest


AGG_KEYS = "cat exact slots hits wrong spurious none none_clean excl excl_hits harmful errors".split()
HEADER = (
    "| schema | ver | exact (cat) | recall | wrong | spurious | none clean | excl recall | excl->positive | errors |"
)


def cases_digest() -> str:
    return hashlib.sha256(repr(CASES).encode()).hexdigest()


# ---------------------------------------------------------------------------------------------------------------
# extraction


def ser(v: Any) -> Any:
    if isinstance(v, date):
        return {"date": v.isoformat()}
    if isinstance(v, (list, tuple)):
        return [ser(x) for x in v]
    return v


def extract_run() -> dict[str, Any]:
    """Every case through the extractor of the ``waypost`` on PYTHONPATH, as the run JSON."""
    out: dict[str, Any] = {
        "waypost": waypost.__file__,
        "today": TODAY.isoformat(),
        "cases_sha256": cases_digest(),
        "schemas": {},
    }
    for name, gen in SCHEMAS.items():
        rows = gen()
        ex = FilterExtractor(MetadataIndex.build(rows), today=lambda: TODAY)
        res: list[dict[str, Any]] = []
        for case in CASES[name]:
            try:
                e = ex.extract(case["q"])
                res.append(
                    {
                        "q": case["q"],
                        "filter": str(e.filter) if e.filter is not None else None,
                        "conds": [[c.field, c.op.value, ser(c.value)] for c in e.conditions],
                    }
                )
            except Exception:
                res.append({"q": case["q"], "error": traceback.format_exc(limit=3), "conds": []})
        out["schemas"][name] = res
    return out


# ---------------------------------------------------------------------------------------------------------------
def report(runs: dict[str, dict[str, Any]], as_json: bool = False) -> None:
    """Score the runs (``{"OLD": run, "NEW": run}`` or ``{"NEW": run}``) and print the table and the failures."""
    table: list[tuple[str, str, dict[str, int]]] = []
    per: dict[tuple[str, str, str], tuple[dict[str, Any], dict[str, Any]]] = {}
    for name, gen in SCHEMAS.items():
        sch = Schema(name, gen(), DATE_FIELDS[name])
        for ver, data in runs.items():
            res = data["schemas"][name]
            if len(res) != len(CASES[name]):
                sys.exit(f"{ver} run has {len(res)} {name} results for {len(CASES[name])} cases")
            agg = dict.fromkeys(AGG_KEYS, 0)
            for case, r in zip(CASES[name], res, strict=True):
                if case["q"] != r["q"]:
                    sys.exit(f"{ver} run does not match the cases: {r['q']!r} for {case['q']!r}")
                s = score_case(sch, case, r["conds"])
                s["error"] = r.get("error")
                per[(name, case["q"], ver)] = (s, r)
                agg["errors"] += bool(r.get("error"))
                if case["kind"] == "none":
                    agg["none"] += 1
                    agg["none_clean"] += not r["conds"]
                    continue
                agg["cat"] += 1
                agg["exact"] += s["exact"]
                agg["slots"] += s["slots"]
                agg["hits"] += s["hits"]
                agg["wrong"] += len(s["wrong"])
                agg["spurious"] += len(s["spurious"])
                agg["harmful"] += len(s["harmful"])
                for slot in case["expect"]:
                    if slot[0] == "X":
                        agg["excl"] += 1
                        agg["excl_hits"] += slot not in s["missed"]
            table.append((name, ver, agg))
    tot: dict[str, dict[str, int]] = {}
    for _, ver, a in table:
        t = tot.setdefault(ver, dict.fromkeys(a, 0))
        for k in a:
            t[k] += a[k]
    rows = table + [("ALL", v, t) for v, t in tot.items()]

    def failing(ver: str, name: str, case: dict[str, Any]) -> bool:
        s, r = per[(name, case["q"], ver)]
        return bool(r["conds"]) if case["kind"] == "none" else not s["exact"]

    worse = []
    if "OLD" in runs:
        for name in SCHEMAS:
            for case in CASES[name]:
                so, ro = per[(name, case["q"], "OLD")]
                sn, rn = per[(name, case["q"], "NEW")]
                if is_worse(case, so, ro, sn, rn):
                    worse.append((name, case, ro, rn))

    if as_json:
        summary: dict[str, Any] = {
            "today": TODAY.isoformat(),
            "waypost": {ver: data.get("waypost") for ver, data in runs.items()},
            "table": [{"schema": name, "ver": ver, **a} for name, ver, a in rows],
            "failures": {
                ver: sum(failing(ver, name, case) for name in SCHEMAS for case in CASES[name]) for ver in runs
            },
        }
        if "OLD" in runs:
            summary["new_worse_than_old"] = [
                {"schema": name, "q": case["q"], "old": ro["conds"], "new": rn["conds"]} for name, case, ro, rn in worse
            ]
        print(json.dumps(summary, indent=1, ensure_ascii=False))
        return

    print(HEADER)
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, ver, a in rows:
        print(
            f"| {name} | {ver} | {a['exact']}/{a['cat']} | {a['hits']}/{a['slots']} ({a['hits'] / a['slots']:.0%}) | "
            f"{a['wrong']} | {a['spurious']} | {a['none_clean']}/{a['none']} | {a['excl_hits']}/{a['excl']} | "
            f"{a['harmful']} | {a['errors']} |"
        )

    for ver in runs:
        print(f"\n## {ver} failures")
        for name in SCHEMAS:
            for case in CASES[name]:
                if not failing(ver, name, case):
                    continue
                s, r = per[(name, case["q"], ver)]
                print(f"[{name}] {case['q']!r}\n    got:  {fmt(r['conds'])}   filter={r.get('filter')}")
                if r.get("error"):
                    print("    ERROR", r["error"].strip().splitlines()[-1])
                if case["kind"] == "none":
                    print("    want: nothing (not a catalogue query)")
                    continue
                print(
                    f"    want: {'; '.join(fslot(x) for x in case['expect'])}"
                    + (f"   optional: {fmt([c[1:] for c in case['opt']])}" if case["opt"] else "")
                )
                if s["missed"]:
                    print(f"    missed: {'; '.join(fslot(x) for x in s['missed'])}")
                if s["wrong"] or s["spurious"]:
                    print(f"    wrong: {fmt(s['wrong'])}   spurious: {fmt(s['spurious'])}")
                if s["harmful"]:
                    print(f"    HARMFUL (exclusion turned positive): {fmt(s['harmful'])}")

    if "OLD" in runs:
        print("\n## NEW worse than OLD (per query)")
        for name, case, ro, rn in worse:
            print(f"[{name}] {case['q']!r}\n    OLD: {fmt(ro['conds'])}\n    NEW: {fmt(rn['conds'])}")
        print("count:", len(worse))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--out", type=Path, help="write this run's extractions (JSON) here")
    ap.add_argument("--compare", type=Path, help="a run JSON (from --out) to score as OLD against this run as NEW")
    ap.add_argument("--json", action="store_true", help="print the counts as JSON instead of markdown")
    ap.add_argument(
        "--set",
        choices=sorted(SETS),
        default="a",
        help="a: rentals, events, recipes; b: stays, laptops, books; c: cars, jobs, trails",
    )
    args = ap.parse_args()

    expected = load_set(args.set)
    digest = cases_digest()
    if digest != expected:
        package = SETS[args.set][0]
        sys.exit(f"benchmarks/data/{package}/cases.py changed (sha256 of CASES {digest}); the cases are frozen")
    old = None
    if args.compare is not None:
        old = json.loads(args.compare.read_text(encoding="utf-8"))
        other = old.get("cases_sha256")
        if other is not None and other != digest:
            sys.exit(f"{args.compare} was run on other cases (sha256 {other})")
        if old.get("today", TODAY.isoformat()) != TODAY.isoformat():
            sys.exit(f"{args.compare} was run with today = {old['today']}, not {TODAY}")

    run = extract_run()
    print("extracted with", run["waypost"], file=sys.stderr)
    if args.out is not None:
        args.out.write_text(json.dumps(run, indent=1, ensure_ascii=False), encoding="utf-8")
        print("wrote", args.out, file=sys.stderr)
    report({"OLD": old, "NEW": run} if old is not None else {"NEW": run}, as_json=args.json)


if __name__ == "__main__":
    main()
