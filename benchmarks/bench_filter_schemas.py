"""Held-out filter extraction: the rule extractor on three invented schemas it was not written against.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src .venv/bin/python benchmarks/bench_filter_schemas.py \
        [--out run.json] [--compare other_run.json] [--json]

Protocol. The schemas and the queries live in ``benchmarks/data/filter_schemas/``. ``data.py`` generates three
seeded collections of plain rows; ``cases.py`` holds, for each schema, catalogue queries with the conditions a
careful human would extract (alternatives, exclusions and optional conditions are marked) and questions that are
not catalogue queries, from which nothing should be extracted. The cases were written by someone who had not
seen the extractor's output, before any run, and then frozen: no query or expectation may change to suit an
extractor. The script checks a digest of ``CASES`` before it scores anything and refuses to run on others.

Schemas (today is pinned to 2025-06-01, which relative dates such as "next month" or "past events" are read
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
import calendar
import hashlib
import json
import math
import re
import sys
import traceback
from datetime import date
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent / "data"))  # filter_schemas/, however this is run
from filter_schemas.cases import CASES
from filter_schemas.data import DATE_FIELDS, SCHEMAS

import waypost
from waypost.filters.extract import FilterExtractor
from waypost.index.metadata import MetadataIndex

TODAY = date(2025, 6, 1)
# sha256 of repr(CASES): the frozen cases, as Python objects (layout changes to cases.py do not move it)
CASES_SHA256 = "d460a8391c0d9f53b8f8c580ded9396578ce65df6bde4efdb7621851c6a52ad1"

AGG_KEYS = "cat exact slots hits wrong spurious none none_clean excl excl_hits harmful errors".split()
HEADER = (
    "| schema | ver | exact (cat) | recall | wrong | spurious | none clean | excl recall | excl->positive | errors |"
)

Cond = tuple[Any, ...]
Atom = tuple[Any, ...]
Slot = tuple[Any, ...]


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
# scoring (no waypost here: runs are plain JSON)

NEG = {"ne", "nin"}


def norm_s(v: Any) -> str:
    return " ".join(str(v).split()).casefold()


class Schema:
    """What the scorer needs to know about one schema's rows: each field's kind, domain and range."""

    def __init__(self, name: str, rows: list[dict[str, Any]]) -> None:
        self.name = name
        self.date_fields = DATE_FIELDS[name]
        self.fields: dict[str, list[Any]] = {}
        for r in rows:
            for k, v in r.items():
                self.fields.setdefault(k, []).append(v)
        self.n = len(rows)
        self.kind: dict[str, str] = {}
        self.domain: dict[str, frozenset[Any]] = {}
        self.lo: dict[str, float] = {}
        self.hi: dict[str, float] = {}
        self.is_int: dict[str, bool] = {}
        self.full: dict[str, bool] = {}
        for k, vals in self.fields.items():
            flat = [x for v in vals for x in (v if isinstance(v, list) else [v])]
            is_list = any(isinstance(v, list) for v in vals)
            self.full[k] = (not is_list) and len(vals) == self.n and all(v not in (None, "") for v in vals)
            if k in self.date_fields:
                self.kind[k] = "date"
                ords = [date.fromisoformat(x).toordinal() for x in flat]
                self.lo[k], self.hi[k], self.is_int[k] = min(ords), max(ords), True
            elif all(isinstance(x, bool) for x in flat):
                self.kind[k] = "bool"
                self.domain[k] = frozenset(flat)
            elif all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in flat):
                self.kind[k] = "num"
                self.lo[k], self.hi[k] = min(flat), max(flat)
                self.is_int[k] = all(float(x).is_integer() for x in flat)
            else:
                self.kind[k] = "list" if is_list else "text"
                self.domain[k] = frozenset(norm_s(x) for x in flat)

    def period(self, v: Any) -> tuple[int, int] | None:
        """(first_ordinal, last_ordinal) of a date value, or None."""
        if isinstance(v, dict) and "date" in v:
            v = v["date"]
        if isinstance(v, (int, float)) and not isinstance(v, bool) and 1000 <= v <= 9999 and float(v).is_integer():
            y = int(v)
            return date(y, 1, 1).toordinal(), date(y, 12, 31).toordinal()
        if not isinstance(v, str):
            return None
        s = v.strip()[:10]
        m = re.fullmatch(r"(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?", s)
        if not m:
            return None
        y = int(m[1])
        if m[3]:
            d = date(y, int(m[2]), int(m[3])).toordinal()
            return d, d
        if m[2]:
            mo = int(m[2])
            return date(y, mo, 1).toordinal(), date(y, mo, calendar.monthrange(y, mo)[1]).toordinal()
        return date(y, 1, 1).toordinal(), date(y, 12, 31).toordinal()

    def cat(self, field: str, v: Any) -> Any:
        if self.kind.get(field) == "bool":
            if isinstance(v, bool):
                return v
            s = norm_s(v)
            return {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}.get(s, s)
        if isinstance(v, dict) and "date" in v:
            return v["date"]
        return norm_s(v)

    def atoms(self, cond: Cond) -> frozenset[Atom]:
        """The canonical atoms of one condition (field, op, value)."""
        f, op, v = cond
        kind = self.kind.get(f)
        raw = frozenset([("raw", f, op, json.dumps(v, sort_keys=True, default=str))])
        if kind is None:
            return raw
        if kind in ("num", "date"):
            if op in ("in", "nin") and isinstance(v, list) and len(v) == 1:
                op, v = {"in": "eq", "nin": "ne"}[op], v[0]
            if kind == "num" and op == "ne" and isinstance(v, (int, float)) and not isinstance(v, bool):
                x = float(v)
                if self.is_int[f] and x == self.lo[f]:
                    return frozenset([("lo", f, x + 1, False)])
                if self.is_int[f] and x == self.hi[f]:
                    return frozenset([("hi", f, x - 1, False)])
                return frozenset([("out", f, frozenset([x]))])
            if op in ("in", "nin", "ne"):
                return raw
            bounds: list[tuple[str, Any, bool]]
            if kind == "date":
                p = self.period(v)
                if p is None:
                    return raw
                a, b = p
                sides = {
                    "eq": [("lo", a), ("hi", b)],
                    "gte": [("lo", a)],
                    "gt": [("lo", b + 1)],
                    "lte": [("hi", b)],
                    "lt": [("hi", a - 1)],
                }[op]
                bounds = [(s, x, False) for s, x in sides]
            else:
                if isinstance(v, str):
                    try:
                        v = float(v)
                    except ValueError:
                        return raw
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    return raw
                x = float(v)
                if self.is_int[f]:
                    bounds = {
                        "eq": [("lo", math.ceil(x), False), ("hi", math.floor(x), False)],
                        "gte": [("lo", math.ceil(x), False)],
                        "gt": [("lo", math.floor(x) + 1, False)],
                        "lte": [("hi", math.floor(x), False)],
                        "lt": [("hi", math.ceil(x) - 1, False)],
                    }[op]
                else:
                    bounds = {
                        "eq": [("lo", x, False), ("hi", x, False)],
                        "gte": [("lo", x, False)],
                        "gt": [("lo", x, True)],
                        "lte": [("hi", x, False)],
                        "lt": [("hi", x, True)],
                    }[op]
            out = set()
            for side, x, strict in bounds:
                if side == "lo" and (x < self.lo[f] or (x == self.lo[f] and not strict)):
                    continue  # says nothing about this data
                if side == "hi" and (x > self.hi[f] or (x == self.hi[f] and not strict)):
                    continue
                out.add((side, f, float(x), strict))
            return frozenset(out)
        # categorical
        vals = v if isinstance(v, list) else [v]
        s = frozenset(self.cat(f, x) for x in vals)
        if op in ("eq", "in"):
            return frozenset([("in", f, s)])
        if op in NEG:
            dom = self.domain.get(f)
            if self.full.get(f) and dom is not None and kind != "list":
                return frozenset([("in", f, frozenset(dom - s))])
            return frozenset([("out", f, s)])
        return raw


def unpack(slot: Slot) -> tuple[list[list[Cond]], bool, list[Any] | None]:
    """(alternatives: list of list of conds, excl, bad)"""
    excl, bad = False, None
    if slot[0] == "X":
        excl, bad, slot = True, slot[2], slot[1]
    if slot[0] == "C":
        alts = [[slot[1:]]]
    else:
        alts = [[c[1:] for c in alt] for alt in slot[1]]
    return alts, excl, bad


def union(sets: list[frozenset[Atom]]) -> frozenset[Atom]:
    return frozenset().union(*sets) if sets else frozenset()


def cond_key(c: Any) -> str:
    return json.dumps(list(c), sort_keys=True, default=str)


def score_case(sch: Schema, case: dict[str, Any], got: list[list[Any]]) -> dict[str, Any]:
    got_conds = [tuple(c) for c in got]
    got_atoms_per = [sch.atoms(c) for c in got_conds]
    got_atoms = union(got_atoms_per)
    slots = [unpack(s) for s in case["expect"]]
    allowed: set[Atom] = set()
    for alts, _, _ in slots:
        for alt in alts:
            for c in alt:
                allowed |= sch.atoms(c)
    for c in case["opt"]:
        allowed |= sch.atoms(tuple(c[1:]))
    hits = 0
    missed: list[Slot] = []
    harmful: list[Cond] = []
    n_excl = 0
    for (alts, excl, bad), slot in zip(slots, case["expect"], strict=True):
        ok = any(union([sch.atoms(c) for c in alt]) <= got_atoms for alt in alts)
        hits += ok
        if not ok:
            missed.append(slot)
        if excl:
            assert bad is not None
            n_excl += 1
            f = alts[0][0][0]
            badset = {sch.cat(f, b) for b in bad}
            for c in got_conds:  # a positive filter on the excluded value expressed as a bound is not checked
                if c[0] == f and c[1] in ("eq", "in"):
                    vals = c[2] if isinstance(c[2], list) else [c[2]]
                    if sch.kind.get(f) in ("num",):
                        if any(float(x) in {float(b) for b in bad} for x in vals):
                            harmful.append(c)
                    elif {sch.cat(f, x) for x in vals} & badset:
                        harmful.append(c)
    wrong: list[Cond] = []
    spurious: list[Cond] = []
    exp_fields = {c[0] for alts, _, _ in slots for alt in alts for c in alt} | {c[1] for c in case["opt"]}
    exp_raw = {cond_key(x) for alts, _, _ in slots for alt in alts for x in alt} | {
        cond_key(x[1:]) for x in case["opt"]
    }
    for c, at in zip(got_conds, got_atoms_per, strict=True):
        vacuous = not at and cond_key(c) not in exp_raw
        if not at <= allowed or vacuous:  # vacuous: a bound outside the data (e.g. 'ten thousand' read as 10)
            (wrong if c[0] in exp_fields else spurious).append(c)
    exact = hits == len(slots) and got_atoms <= allowed
    return {
        "slots": len(slots),
        "hits": hits,
        "missed": missed,
        "wrong": wrong,
        "spurious": spurious,
        "exact": exact,
        "harmful": harmful,
        "n_excl": n_excl,
    }


def fmt(conds: list[Any]) -> str:
    return "; ".join(f"{c[0]} {c[1]} {c[2]!r}" for c in conds) or "-"


def fslot(s: Slot) -> str:
    alts, excl, _ = unpack(s)
    return " | ".join(fmt(alt) for alt in alts) + (" [excl]" if excl else "")


def is_worse(
    case: dict[str, Any], so: dict[str, Any], ro: dict[str, Any], sn: dict[str, Any], rn: dict[str, Any]
) -> bool:
    if case["kind"] == "none":
        return bool((not ro["conds"]) and rn["conds"])
    bad_o = len(so["wrong"]) + len(so["spurious"]) + len(so["harmful"])
    bad_n = len(sn["wrong"]) + len(sn["spurious"]) + len(sn["harmful"])
    return bool((so["exact"] and not sn["exact"]) or sn["hits"] < so["hits"] or bad_n > bad_o)


def report(runs: dict[str, dict[str, Any]], as_json: bool = False) -> None:
    """Score the runs (``{"OLD": run, "NEW": run}`` or ``{"NEW": run}``) and print the table and the failures."""
    table: list[tuple[str, str, dict[str, int]]] = []
    per: dict[tuple[str, str, str], tuple[dict[str, Any], dict[str, Any]]] = {}
    for name, gen in SCHEMAS.items():
        sch = Schema(name, gen())
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
    args = ap.parse_args()

    digest = cases_digest()
    if digest != CASES_SHA256:
        sys.exit(f"benchmarks/data/filter_schemas/cases.py changed (sha256 of CASES {digest}); the cases are frozen")
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
