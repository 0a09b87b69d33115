"""Scoring for ``benchmarks/bench_filter_schemas.py``: extracted conditions against a case's expected slots, as
canonical atoms (see that script's docstring). No waypost here: runs are plain JSON."""

from __future__ import annotations

import calendar
import json
import math
import re
from datetime import date
from typing import Any

Cond = tuple[Any, ...]
Atom = tuple[Any, ...]
Slot = tuple[Any, ...]


NEG = {"ne", "nin"}


def norm_s(v: Any) -> str:
    return " ".join(str(v).split()).casefold()


class Schema:
    """What the scorer needs to know about one schema's rows: each field's kind, domain and range."""

    def __init__(self, name: str, rows: list[dict[str, Any]], date_fields: set[str]) -> None:
        self.name = name
        self.date_fields = date_fields
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
