"""Filter extraction from query text, driven by the collection's own fields and values.

"documentaries from India released after 2015" becomes
``categories = Documentaries AND countries = India AND release_year > 2015`` with nothing left over;
"horror movies about murder" keeps ``murder`` as the semantic query.

No dataset rules: string values are matched as stemmed word sets (with a small synonym table and
"kind" words such as *movies*/*series* that must agree with the value), code-like values (``TV-MA``,
``R``) as exact tokens, numbers by comparison phrases whose unit names a numeric field, and date phrases
("after March 2021", "between 2019 and 2021", "last updated in May 2022") against a date field the query
names, else the only date field (a bare year goes to a numeric year field first, if there is one).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from waypost.filters.dates import DATE_IN_TEXT, Period, period
from waypost.filters.model import And, Condition, Filter, Op, all_of
from waypost.index.metadata import MetadataLookup

if TYPE_CHECKING:
    from waypost.llm.accounting import QueryMetadata

FUNCTION_WORDS = frozenset(
    "a an the and or of for to in on at by with from me my i we you is are be was were there that this these those "
    "which what who whose where when how do does did some any all please show find list give get want "
    "search looking up".split()
)
STOPWORDS = FUNCTION_WORDS | frozenset("produced made released rated rating ratings set filmed shot available".split())
TOPIC_MARKERS = frozenset("about involving featuring regarding concerning story stories plot theme themes".split())
DEFAULT_SYNONYMS = {
    "film": "movie",
    "films": "movies",
    "kid": "child",
    "kids": "children",
    "childrens": "children",
    "series": "tv",
    "shows": "tv",
    "show": "tv",
    "programme": "tv",
    "programmes": "tv",
    "docs": "documentaries",
    "sci": "sci",
    "scifi": "sci fi",
    "romance": "romantic",
    "comedy": "comedies",
    "&": "and",
}
# Words naming a kind of item; they may accompany a value only if they agree with it.
DEFAULT_KIND_WORDS = frozenset({"movi", "tv"})
_WORD = re.compile(r"[\w]+(?:'[\w]+)?|&", re.UNICODE)
_REQUEST = re.compile(
    r"^\s*(?:please\s+)?(?:(?:can you\s+)?show me|show|find me|find|list|give me|get me|"
    r"search for|i want|i'd like|recommend|which|what)\b",
    re.IGNORECASE,
)


@lru_cache(maxsize=1)
def _stemmer() -> object:
    import Stemmer

    return Stemmer.Stemmer("english")


def _stem(word: str) -> str:
    return str(_stemmer().stemWord(word))  # type: ignore[attr-defined]


@lru_cache(maxsize=1)
def _stop() -> frozenset[str]:
    """Stopwords and topic markers as stems, comparable with token norms."""
    return frozenset({_stem(w) for w in STOPWORDS | TOPIC_MARKERS} | STOPWORDS | TOPIC_MARKERS)


@dataclass(frozen=True)
class Token:
    norm: str
    start: int
    end: int


def tokenize(text: str, synonyms: dict[str, str]) -> list[Token]:
    tokens: list[Token] = []
    for m in _WORD.finditer(text):
        word = m.group(0).lower().removesuffix("'s").replace("'", "")
        for part in synonyms.get(word, word).split():
            tokens.append(Token(_stem(part), m.start(), m.end()))
    return tokens


@dataclass(frozen=True)
class ValueForm:
    field: str
    value: str
    content: frozenset[str]
    kinds: frozenset[str]
    count: int


@dataclass
class Extraction:
    filter: Filter | None
    semantic_query: str
    matches: list[str] = field(default_factory=list)

    @property
    def conditions(self) -> list[Condition]:
        from waypost.filters.model import conditions

        return conditions(self.filter) if self.filter is not None else []


_NUM = r"(\d+(?:\.\d+)?)"
_YEAR = r"(1[89]\d\d|2[01]\d\d)(?![-/]\d)"  # never the year of an ISO date


def _is_code(value: str) -> bool:
    return bool(re.search(r"\d|-", value)) or (value.isupper() and len(value) <= 5 and " " not in value)


class FilterExtractor:
    def __init__(
        self,
        index: MetadataLookup,
        max_values: int = 300,
        synonyms: dict[str, str] | None = None,
        kind_words: frozenset[str] = DEFAULT_KIND_WORDS,
    ) -> None:
        self.index = index
        self.synonyms = {**DEFAULT_SYNONYMS, **(synonyms or {})}
        self.kind_words = kind_words
        self.forms: list[ValueForm] = []
        self.codes: list[tuple[str, str, re.Pattern[str]]] = []
        for name in index.fields:
            if index.stats[name].kind != "string":
                continue
            counts = index.values(name)
            if not 0 < len(counts) <= max_values:
                continue
            for value, count in counts.items():
                if _is_code(value):
                    flags = 0 if len(value) <= 2 else re.IGNORECASE
                    self.codes.append((name, value, re.compile(rf"(?<![\w&-]){re.escape(value)}(?![\w&-])", flags)))
                    continue
                stems = [t.norm for t in tokenize(value, self.synonyms) if t.norm not in _stop()]
                kinds = frozenset(s for s in stems if s in kind_words)
                content = frozenset(s for s in stems if s not in kind_words)
                self.forms.append(ValueForm(name, value, content, kinds, count))
        self.codes.sort(key=lambda c: -len(c[1]))
        self._implied: dict[tuple[str, str], list[tuple[str, str]]] = {}
        self.date_fields = index.date_fields()
        # Words that name a date or numeric field ("updated" -> last_updated), for date phrases.
        self._field_words = {
            name: _name_stems(name) for name in index.fields if name in self.date_fields or name in index.numeric
        }

    # -- implications: "Horror Movies" only ever occurs with type = Movie ----------------------
    def implied(self, name: str, value: str) -> list[tuple[str, str]]:
        key = (name, value)
        if key not in self._implied:
            out: list[tuple[str, str]] = []
            pos = self.index.positions(name, value)
            if len(pos):
                for other in self.index.fields:
                    if other == name or self.index.stats[other].kind != "string" or self.index.stats[other].is_list:
                        continue
                    vals = self.index.values(other)
                    if len(vals) > 4:  # only kind-like fields (type: Movie | TV Show)
                        continue
                    for v in vals:
                        if np.isin(pos, self.index.positions(other, v)).all():
                            out.append((other, v))
            self._implied[key] = out
        return self._implied[key]

    def _kind_of(self, form: ValueForm) -> frozenset[str]:
        if form.kinds:
            return form.kinds
        kinds: set[str] = set()
        for _other, v in self.implied(form.field, form.value):
            kinds |= {t.norm for t in tokenize(v, self.synonyms)} & self.kind_words
        return frozenset(kinds)

    # -- extraction ---------------------------------------------------------------------------
    def extract(self, query: str, usage: QueryMetadata | None = None) -> Extraction:
        """Rules only: ``usage`` (LLM accounting) is accepted for interface parity and left untouched."""
        used = np.zeros(len(query) + 1, dtype=np.bool_)
        request = _REQUEST.match(query)
        if request:
            used[request.start() : request.end()] = True
        conds: list[Condition] = []
        matches: list[str] = []
        self._numeric(query, used, conds, matches)
        codes: dict[str, list[str]] = {}
        for name, value, pattern in self.codes:
            for m in pattern.finditer(query):
                if not used[m.start() : m.end()].any():
                    used[m.start() : m.end()] = True
                    codes.setdefault(name, []).append(value)
                    matches.append(f"{m.group(0)!r} -> {name} = {value!r}")
                    break
        for name, values in codes.items():  # "rated R or PG-13": alternatives of one field
            conds.append(Condition(name, Op.EQ, values[0]) if len(values) == 1 else Condition(name, Op.IN, values))
        self._words(query, used, conds, matches)
        fields_done = {c.field for c in conds}
        for c in list(conds):
            if c.op is Op.EQ and isinstance(c.value, str):
                for other, v in self.implied(c.field, c.value):
                    if other not in fields_done:
                        conds.append(Condition(other, Op.EQ, v))
                        fields_done.add(other)
                        matches.append(f"{c.value!r} implies {other} = {v!r}")
        if not conds:
            return Extraction(None, query.strip(), matches)
        rest = [t for t in tokenize(query, {}) if not used[t.start : t.end].any()]
        words = [
            query[t.start : t.end]
            for t in rest
            if t.norm not in _stop() and query[t.start : t.end].lower() not in _stop()
        ]
        return Extraction(all_of(list(conds)), " ".join(words), matches)

    def _words(self, query: str, used: np.ndarray, conds: list[Condition], matches: list[str]) -> None:
        tokens = tokenize(query, self.synonyms)
        taken_fields = {c.field for c in conds}
        n = len(tokens)
        spans = sorted(((i, j) for i in range(n) for j in range(i + 1, min(n, i + 6) + 1)), key=lambda s: s[0] - s[1])
        for i, j in spans:
            window = tokens[i:j]
            if any(used[t.start : t.end].any() for t in window):
                continue
            if window[0].norm in _stop() or window[-1].norm in _stop():
                continue
            stems = [t.norm for t in window if t.norm not in _stop()]
            content = frozenset(s for s in stems if s not in self.kind_words)
            kinds = frozenset(s for s in stems if s in self.kind_words)
            form = self._best(content, kinds, taken_fields)
            if form is None:
                continue
            for t in window:
                used[t.start : t.end] = True
            taken_fields.add(form.field)
            conds.append(Condition(form.field, Op.EQ, form.value))
            matches.append(f"{query[window[0].start : window[-1].end]!r} -> {form.field} = {form.value!r}")

    def _best(self, content: frozenset[str], kinds: frozenset[str], taken: set[str]) -> ValueForm | None:
        candidates = [f for f in self.forms if f.content == content and f.field not in taken]
        if not candidates:
            return None
        if kinds:
            agreeing = [f for f in candidates if kinds <= self._kind_of(f) or kinds == f.kinds]
            if not agreeing:
                return None
            candidates = agreeing
        elif content:
            plain = [f for f in candidates if not f.kinds]
            candidates = plain or candidates
        else:
            return None
        return max(candidates, key=lambda f: f.count)

    # -- numbers ------------------------------------------------------------------------------
    def _year_field(self) -> str | None:
        names = [n for n in self.index.numeric if n not in self.date_fields]
        for name in names:
            if "year" in name.lower():
                return name
        for name in names:
            rng = self.index.numeric_range(name)
            if rng and 1800 <= rng[0] and rng[1] <= 2200:
                return name
        return None

    def _unit_field(self, unit: str) -> str | None:
        stem = _stem(unit.lower())
        for name in self.index.numeric:
            parts = [_stem(p) for p in re.split(r"[_\W]+", name.lower()) if p]
            if stem in parts:
                return name
        return None

    def _numeric(self, query: str, used: np.ndarray, conds: list[Condition], matches: list[str]) -> None:
        def add(m: re.Match[str], items: list[tuple[str, Op, float]]) -> None:
            if used[m.start() : m.end()].any():
                return
            used[m.start() : m.end()] = True
            for name, op, value in items:
                num: int | float = int(value) if float(value).is_integer() else value
                conds.append(Condition(name, op, num))
            matches.append(f"{m.group(0).strip()!r} -> " + " AND ".join(f"{n} {o.symbol} {v:g}" for n, o, v in items))

        unit_re = (
            r"(?:under|below|less than|fewer than|shorter than|over|above|more than|longer than|at least|"
            r"at most|no more than|no less than|up to|minimum of|maximum of)"
        )
        cmp_ops = {
            "under": Op.LT,
            "below": Op.LT,
            "less than": Op.LT,
            "fewer than": Op.LT,
            "shorter than": Op.LT,
            "over": Op.GT,
            "above": Op.GT,
            "more than": Op.GT,
            "longer than": Op.GT,
            "at least": Op.GTE,
            "at most": Op.LTE,
            "no more than": Op.LTE,
            "no less than": Op.GTE,
            "up to": Op.LTE,
            "minimum of": Op.GTE,
            "maximum of": Op.LTE,
        }
        for m in re.finditer(rf"(?:with\s+)?({unit_re})\s+{_NUM}\s+([a-z]+)", query, re.IGNORECASE):
            fld = self._unit_field(m.group(3))
            if fld:
                add(m, [(fld, cmp_ops[m.group(1).lower()], float(m.group(2)))])
        for m in re.finditer(rf"(?:with\s+)?{_NUM}\s+([a-z]+)\s+or\s+(more|less|fewer)", query, re.IGNORECASE):
            fld = self._unit_field(m.group(2))
            if fld:
                add(m, [(fld, Op.GTE if m.group(3).lower() == "more" else Op.LTE, float(m.group(1)))])
        self._dates(query, used, conds, matches)
        year = self._year_field()
        if year is None:
            return
        patterns: list[tuple[str, list[tuple[Op, int]]]] = [
            (rf"\b(?:released\s+|made\s+|from\s+)?between\s+{_YEAR}\s+and\s+{_YEAR}\b", [(Op.GTE, 1), (Op.LTE, 2)]),
            (
                rf"\b(?:released\s+|made\s+)?from\s+{_YEAR}\s+(?:to|until|through|-)\s+{_YEAR}\b",
                [(Op.GTE, 1), (Op.LTE, 2)],
            ),
            (rf"\b(?:released\s+|made\s+|from\s+|in\s+)?{_YEAR}\s+or\s+(?:later|after|newer)\b", [(Op.GTE, 1)]),
            (rf"\b(?:released\s+|made\s+|from\s+|in\s+)?{_YEAR}\s+or\s+(?:earlier|before|older)\b", [(Op.LTE, 1)]),
            (rf"\b(?:released\s+|made\s+)?since\s+{_YEAR}\b", [(Op.GTE, 1)]),
            (rf"\b(?:released\s+|made\s+)?after\s+{_YEAR}\b", [(Op.GT, 1)]),
            (rf"\b(?:released\s+|made\s+)?before\s+{_YEAR}\b", [(Op.LT, 1)]),
            (rf"\b(?:released\s+|made\s+)?(?:from|in)\s+{_YEAR}\b", [(Op.EQ, 1)]),
        ]
        for pattern, spec in patterns:
            for m in re.finditer(pattern, query, re.IGNORECASE):
                add(m, [(year, op, float(m.group(g))) for op, g in spec])

    # -- dates --------------------------------------------------------------------------------
    def _named_field(self, query: str, start: int, used: np.ndarray) -> tuple[str, list[tuple[int, int]]] | None:
        """A date or numeric field named by one of the three words before ``start`` ("last updated in ..."),
        with the character spans of the naming words."""
        words = [m for m in re.finditer(r"[^\W\d_]+", query[:start]) if not used[m.start() : m.end()].any()][-3:]
        for i in range(len(words) - 1, -1, -1):
            word = words[i].group(0).lower()
            if word in FUNCTION_WORDS or len(word) < 3:
                continue
            stem = _stem(word)
            named = [n for n, stems in self._field_words.items() if stem in stems]
            if not named:
                continue
            dated = [n for n in named if n in self.date_fields]
            spans = [words[i].span()]
            if (
                i > 0
                and words[i - 1].group(0).lower() in _DATE_MODIFIERS
                and words[i - 1].end() + 1 >= words[i].start()
            ):
                spans.append(words[i - 1].span())
            return (dated or named)[0], spans
        return None

    def _date_target(
        self, query: str, start: int, used: np.ndarray, periods: list[Period]
    ) -> tuple[str, list[tuple[int, int]]] | None:
        """Which date field a phrase filters: the one the query names; else, unless a bare year belongs to a
        numeric year field, the collection's only date field. ``None``: leave the phrase alone."""
        named = self._named_field(query, start, used)
        if named is not None:
            return named if named[0] in self.date_fields else None
        if all(p.precision == "year" for p in periods) and self._year_field() is not None:
            return None
        return (self.date_fields[0], []) if len(self.date_fields) == 1 else None

    def _dates(self, query: str, used: np.ndarray, conds: list[Condition], matches: list[str]) -> None:
        if not self.date_fields:
            return
        for pattern, spec in _DATE_PHRASES:
            for m in pattern.finditer(query):
                if used[m.start() : m.end()].any():
                    continue
                periods = [period(m.group(g)) for _op, g in spec]
                found = [p for p in periods if p is not None]
                if len(found) != len(periods):
                    continue
                target = self._date_target(query, m.start(), used, found)
                if target is None:
                    continue
                name, spans = target
                used[m.start() : m.end()] = True
                for a, b in spans:
                    used[a:b] = True
                items = [(op, p.filter_value()) for (op, _g), p in zip(spec, found, strict=True)]
                conds.extend(Condition(name, op, value) for op, value in items)
                said = query[min([m.start(), *(a for a, _ in spans)]) : m.end()].strip()
                matches.append(f"{said!r} -> " + " AND ".join(f"{name} {op.symbol} {value}" for op, value in items))


_DATE_MODIFIERS = frozenset({"last", "first", "originally", "recently"})
_GENERIC_NAME_PARTS = frozenset({"date", "time", "at", "on", "dt", "ts", "day", "timestamp", "datetime"})


def _name_stems(name: str) -> frozenset[str]:
    """Stems of a field name's words (``last_updated``, ``publishedAt``), without generic ones such as *date*."""
    words = re.split(r"[_\W]+", re.sub(r"([a-z])([A-Z])", r"\1 \2", name).lower())
    return frozenset(_stem(w) for w in words if w and w not in _GENERIC_NAME_PARTS)


_D = rf"(?<![\w/-])({DATE_IN_TEXT})"
_DATE_PHRASES: list[tuple[re.Pattern[str], list[tuple[Op, int]]]] = [
    (re.compile(p, re.IGNORECASE), spec)
    for p, spec in [
        (rf"\bbetween\s+{_D}\s+and\s+{_D}", [(Op.GTE, 1), (Op.LTE, 2)]),
        (rf"\bfrom\s+{_D}\s*(?:to|until|till|through|-|–)\s*{_D}", [(Op.GTE, 1), (Op.LTE, 2)]),
        (rf"(?:\b(?:from|in)\s+)?{_D}\s+or\s+(?:later|after|newer)\b", [(Op.GTE, 1)]),
        (rf"(?:\b(?:from|in)\s+)?{_D}\s+or\s+(?:earlier|before|older)\b", [(Op.LTE, 1)]),
        (rf"\bsince\s+{_D}", [(Op.GTE, 1)]),
        (rf"\b(?:after|later\s+than|newer\s+than)\s+{_D}", [(Op.GT, 1)]),
        (rf"\b(?:before|earlier\s+than|older\s+than|prior\s+to)\s+{_D}", [(Op.LT, 1)]),
        (rf"\b(?:until|till|through)\s+{_D}", [(Op.LTE, 1)]),
        (rf"\b(?:in|on|during|from|dated)\s+{_D}", [(Op.EQ, 1)]),
    ]
]


def combine(*filters: Filter | None) -> Filter | None:
    parts = [f for f in filters if f is not None]
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else And(tuple(parts))
