"""Filter extraction from query text, driven by the collection's own fields and values.

"documentaries from India released after 2015" becomes
``categories = Documentaries AND countries = India AND release_year > 2015`` with nothing left over;
"horror movies about murder" keeps ``murder`` as the semantic query; "thriller movies from the 2010s scoring
8.5 or more on IMDb" becomes ``genres = Thriller AND 2010 <= year <= 2019 AND imdb_rating >= 8.5``.

The extractor reads the collection through a ``FieldCatalog`` (fields, kinds, ranges, values). No dataset
rules: string values are matched through an index of their stems (``filters.values``), numbers, ranges,
decades and relative years by comparison phrases bound to the field that nearby words, units or ranges name
(``filters.numbers``, ``filters.fields``), and date phrases against the date field the query names
(``filters.date_phrases``).
"""

from __future__ import annotations

import bisect
import copy
import functools
import itertools
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from datetime import date
from typing import TYPE_CHECKING

import numpy as np

from waypost.filters.advice import advice_question
from waypost.filters.binding import bind
from waypost.filters.catalog import FieldCatalog
from waypost.filters.clauses import read_parallel
from waypost.filters.date_phrases import date_phrases
from waypost.filters.fields import FieldAliases
from waypost.filters.flags import read_flags
from waypost.filters.kinds import ItemKinds
from waypost.filters.model import And, Condition, Extraction, Filter, Op, all_of
from waypost.filters.negation import NON_COMPOUND, Picked, excluded_start, outside_start
from waypost.filters.numbers import NumberPhrase, find_phrases
from waypost.filters.text import (
    DEFAULT_KIND_WORDS,
    DEFAULT_SYNONYMS,
    Token,
    name_words,
    permission_folded,
    stop_stems,
    tokenize,
)
from waypost.filters.text import (
    stem as _stem,
)
from waypost.filters.values import ValueForm, ValueIndex, synonyms_in_use
from waypost.validation import non_negative_int

if TYPE_CHECKING:
    from waypost.llm.accounting import QueryMetadata

__all__ = ["Extraction", "FilterExtractor", "Token", "_stem", "combine", "tokenize"]

_REQUEST = re.compile(
    r"^\s*(?:please\s+)?(?:(?:can you\s+)?show me|show|find me|find|list|give me|get me|"
    r"search for|i want|i'd like|recommend|which|what)\b",
    re.IGNORECASE,
)
EXTRACTIONS_KEPT = 256  # readings a FilterExtractor keeps, by query
_JOIN = re.compile(r"[\s-]*")  # what may separate two words of one name
_JOINED = re.compile(r"\band\b|&", re.IGNORECASE)  # a value that itself joins two words ("Action & Adventure")
_NEXT_WORD = re.compile(
    r"[\s-]+(\w+)(?=\s*(?:$|[,.;:!?)]|\s(?:and|or|with|for|in|on|under|over|from|by|that|which|at|to|of|than)\b))",
    re.IGNORECASE,
)  # not "a chain drive train", "Velora brand story", "director's cut"


_REGION_WORDS = frozenset({"latin", "south", "north", "central", "east", "west", "southeast", "northern", "southern"})
# Two values of a one-value field joined by "and" alone mean either ("movies and TV shows"; no title is both)
_AND_ONLY = re.compile(r"\s*(?:and|&)\s*", re.IGNORECASE)
# Words that make another place of a country's other name ("North Korea", "New Britain")
_PLACE_PREFIXES = _REGION_WORDS | {"new", "littl", "great", "upper", "lower"}
# People a demonym may describe ("American actors", "a British band"): the person's, not the catalogue's country
_PERSON_STEMS = frozenset(
    _stem(w)
    for w in "actors actresses directors bands singers authors writers players artists musicians people students "
    "chefs stars composers filmmakers teams citizens politicians scientists individuals farmers physicians doctors "
    "patients workers residents families children women men officials soldiers troops voters".split()
)
# "free" as the price: "for free", "free of charge", "free entry", or first ("free concerts in Berlin"); never
# before a value ("free jazz" is a genre), nor in a compound ("sugar free", "a free trial", "drinks are free")
_FREE = re.compile(
    r"\bfor\s+(?P<for>free)\b|\b(?P<charge>free)\s+(?:of\s+charge|entry|admission)\b|^\s*(?P<first>free)\s+(?=\w)",
    re.IGNORECASE,
)
_NEXT_VALUE_WORD = re.compile(r"\s+(\w+)")


class FilterExtractor:
    """Rule-based extraction over a ``FieldCatalog``. ``today``: the clock for "in the last 5 years";
    ``readings_kept``: how many recent queries' readings are kept (0: none)."""

    def __init__(
        self,
        index: FieldCatalog,
        synonyms: dict[str, str] | None = None,
        kind_words: frozenset[str] = DEFAULT_KIND_WORDS,
        today: Callable[[], date] = date.today,
        readings_kept: int = EXTRACTIONS_KEPT,
    ) -> None:
        non_negative_int(readings_kept, "readings_kept")
        self.index = index
        self.readings_kept = readings_kept
        self.synonyms = {**synonyms_in_use(index, DEFAULT_SYNONYMS, kind_words), **(synonyms or {})}
        self.kind_words = kind_words
        self.today = today
        self.values = ValueIndex(index, self.synonyms, kind_words)
        self.aliases = FieldAliases(index)
        self.kinds = ItemKinds(index, self.values, self.synonyms, kind_words)
        self._field_stems: frozenset[str] | None = None
        # stage 1, the router's features and the metadata strategy each read the same query
        self._readings: OrderedDict[tuple[str, date], Extraction] = OrderedDict()
        self._readings_lock = threading.Lock()

    # -- extraction ---------------------------------------------------------------------------
    def extract(self, query: str, usage: QueryMetadata | None = None) -> Extraction:
        """Rules only: ``usage`` (LLM accounting) is accepted for interface parity and left untouched. The
        last few readings are kept (by query and day); each caller gets its own copy."""
        key = (query, self.today())
        with self._readings_lock:
            found = self._readings.get(key)
            if found is not None:
                self._readings.move_to_end(key)
        if found is None:
            found = self._read_query(*key)
            with self._readings_lock:
                self._readings[key] = found
                while len(self._readings) > self.readings_kept:
                    self._readings.popitem(last=False)
        return copy.deepcopy(found)  # a condition's list of values is the caller's to change

    def _read_query(self, query: str, today: date) -> Extraction:
        """The query's reading: one clause, or parallel clauses as either (``clauses.read_parallel``)."""
        advice = advice_question(query, lambda rest: self._read_query(rest, today).filter is not None)
        if advice is not None:
            return Extraction(None, query.strip(), [f"{advice!r}: a question for advice, not for items"])
        clauses: dict[tuple[str, bool], Extraction] = {}  # each piece is read once however often it is split

        def read(text: str, imply: bool) -> Extraction:
            if (text, imply) not in clauses:
                clauses[text, imply] = self._read_clause(text, today, imply)
            return clauses[text, imply]

        return read_parallel(query, read, lambda found: bool(self.index.mask(found).any()))

    def _read_clause(self, query: str, today: date, imply: bool = True) -> Extraction:
        """One clause's reading; ``imply``: add what its values imply ("Horror Movies": type = Movie)."""
        used = bytearray(len(query) + 1)  # 1 where a character is read (bytes: far cheaper than numpy here)

        def free(a: int, b: int) -> bool:
            return used.find(1, a, b) < 0

        def mark(a: int, b: int) -> None:
            used[a:b] = b"\x01" * len(range(*slice(a, b).indices(len(used))))

        request = _REQUEST.match(query)
        if request:
            mark(request.start(), request.end())
        conds: list[Condition] = []
        matches: list[str] = []
        codes = self._codes(query, free, mark, matches)
        found, notes = date_phrases(query, free, mark, self.aliases, today)
        conds += found
        matches += notes
        self._numbers(query, free, mark, conds, matches, today, bare=False)
        read_flags(query, self.values, free, mark, conds, matches)
        wanted = self._words(query, free, mark, conds, matches, codes)
        self._numbers(query, free, mark, conds, matches, today, bare=True)
        self._free_of_charge(query, free, mark, conds, matches)
        fields_done = {c.field for c in conds}
        for c in list(conds) if imply else []:
            if c.op is Op.EQ and isinstance(c.value, str) and c.field not in self.values.flag_values:
                for other, v in self.kinds.implied_kinds(c.field, c.value):
                    if other not in fields_done:
                        conds.append(Condition(other, Op.EQ, v))
                        fields_done.add(other)
                        matches.append(f"{c.value!r} implies {other} = {v!r}")
        if not conds:
            return Extraction(None, query.strip(), matches)
        stop = stop_stems()
        content = [t for t in tokenize(query, {}) if t.norm not in stop and query[t.start : t.end].lower() not in stop]
        words = [query[t.start : t.end] for t in content if free(t.start, t.end)]
        read = [query[t.start : t.end] for t in content if not free(t.start, t.end) and self._value_word(t, wanted)]
        values = [query[t.start : t.end] for t in content if any(p.start <= t.start and t.end <= p.end for p in wanted)]
        return Extraction(all_of(list(conds)), " ".join(words), matches, read, values, used.rfind(1) + 1)

    def _value_word(self, token: Token, wanted: list[Picked]) -> bool:
        """A word of a wanted value, a number, or a word of a field's name: what the rows hold in their fields
        (a cue such as "more than" or "not" is none of them)."""
        if any(p.start <= token.start and token.end <= p.end for p in wanted):
            return True
        if self._field_stems is None:
            self._field_stems = frozenset(_stem(w) for name in self.index.fields for w in name_words(name))
        return any(c.isdigit() for c in token.word) or token.norm in self._field_stems

    def _codes(self, query: str, free: Free, mark: Mark, matches: list[str]) -> dict[str, list[Picked]]:
        """Code values ("PG-13", "HP"), as picks that ``_words`` completes with the values of the same field
        written as words ("HP or Lenovo")."""
        codes: dict[str, list[Picked]] = {}
        for m, name, value in self.values.code_matches(query):
            if free(m.start(), m.end()) and value not in [p.value for p in codes.get(name, [])]:
                excluded = excluded_start(query, m.start(), codes.get(name, []), m.end())
                start = excluded if excluded is not None else m.start()
                mark(start, m.end())
                codes.setdefault(name, []).append(Picked(m.start(), m.end(), value, excluded is not None))
                matches.append(
                    f"{query[start : m.end()]!r} -> {name} {'!=' if excluded is not None else '='} {value!r}"
                )
        return codes

    def _numbers(
        self,
        query: str,
        free: Free,
        mark: Mark,
        conds: list[Condition],
        matches: list[str],
        today: date,
        bare: bool,
    ) -> None:
        tokens = tokenize(query, {})
        phrases = find_phrases(query, free, today)
        covered = np.zeros(len(query) + 1, dtype=np.int32)  # how many phrases cover each character
        for p in phrases:
            covered[p.start : p.end] += 1
        for phrase in phrases:
            if phrase.bare != bare:
                continue

            def beside(a: int, b: int, phrase: NumberPhrase = phrase) -> bool:
                """Free, and inside no other number phrase."""
                if not free(a, b):
                    return False
                own = np.zeros(b - a, dtype=np.int32)
                own[max(phrase.start, a) - a : max(0, min(phrase.end, b) - a)] = 1
                return not (covered[a:b] > own).any()

            bound = bind(query, phrase, self.aliases, tokens, beside, today)
            if bound is None:
                continue
            found, named = bound
            mark(phrase.start, phrase.end)
            for t in named:
                mark(t.start, t.end)
            conds.extend(found)
            matches.append(f"{query[phrase.start : phrase.end].strip()!r} -> " + " AND ".join(map(str, found)))

    def _free_of_charge(self, query: str, free: Free, mark: Mark, conds: list[Condition], matches: list[str]) -> None:
        """ "free" as a price of 0 (``_FREE``), when exactly one money field holds 0 and nothing else is on it."""
        ranges = {n: self.aliases.catalog.numeric_range(n) for n, d in self.aliases.dimensions.items() if d == "money"}
        money = [n for n, rng in ranges.items() if rng is not None and rng[0] == 0]
        if len(money) != 1 or any(c.field == money[0] for c in conds):
            return
        for m in _FREE.finditer(query):
            group = m.lastgroup or "first"
            a, b = m.start(group), m.end(group)
            following = _NEXT_VALUE_WORD.match(query, b)
            if not free(a, b) or (
                group == "first" and following and self.values.forms(frozenset({_stem(following.group(1).lower())}))
            ):
                continue
            mark(a, b)
            conds.append(Condition(money[0], Op.EQ, 0))
            matches.append(f"{query[a:b]!r} -> {money[0]} = 0")
            return

    def _words(
        self,
        query: str,
        free: Free,
        mark: Mark,
        conds: list[Condition],
        matches: list[str],
        codes: dict[str, list[Picked]],
    ) -> list[Picked]:
        """Read the values written as words (completing ``codes``); returns the wanted (not excluded) picks."""
        tokens = tokenize(query, self.synonyms)
        picked: dict[str, list[Picked]] = {name: list(found) for name, found in codes.items()}
        scalar_taken = {c.field for c in conds} | {
            n for n, found in codes.items() if n not in self.values.list_fields and any(not p.excluded for p in found)
        }
        # the kinds of item the query asks for ("movies") and those its values imply ("Korean TV Shows": tv)
        # neither a request's "Show me" nor an excluded kind ("dramas but not TV shows"; one inside an excluded
        # value, "not Nordic TV Shows", leaves when that value is read)
        kind_words = {k: t for k, t in enumerate(tokens) if t.norm in self.kind_words and free(t.start, t.end)}
        excluded_kinds = {
            k for k, t in kind_words.items() if excluded_start(query, t.start, [], compound=False) is not None
        }
        asked = {k: t.norm for k, t in kind_words.items() if k not in excluded_kinds}
        # kinds excluded ("dramas, not movies"): a value of only those kinds yields to one of another kind
        avoided = frozenset(kind_words[k].norm for k in excluded_kinds)
        # kinds asked together ("Korean TV shows and movies"): no value named with one of them takes it, as
        # the words before them describe both
        together = self.kinds.together(tokens)
        implied: set[str] = set()
        n = len(tokens)
        spans = sorted(((i, j) for i in range(n) for j in range(i + 1, min(n, i + 6) + 1)), key=lambda s: s[0] - s[1])
        stop = stop_stems()
        unread = [free(t.start, t.end) for t in tokens]
        ends = [t.end for t in tokens]

        def refresh(a: int, b: int) -> None:  # the tokens a value taken marked read (linear in the query overall)
            for x in range(bisect.bisect_right(ends, a), len(tokens)):
                if tokens[x].start >= b:
                    break
                unread[x] = free(tokens[x].start, tokens[x].end)

        for i, j in spans:
            window = tokens[i:j]
            if not all(unread[i:j]) or window[0].norm in stop or window[-1].norm in stop:
                continue
            if (
                together
                and any(x in together for x in range(i, j))
                and any(t.norm not in self.kind_words for t in window)
            ):
                continue  # "TV dramas and movies": "TV Dramas" would drop the movies
            kinds_in = j - i > 1 and any(t.norm in self.kind_words for t in window[1:])
            if kinds_in and NON_COMPOUND.search(query, max(0, window[0].start - 40), window[0].start):
                continue  # "non-" negates its words, not the kind after them: "non-(South) Korean TV shows"
            inner = {t.word for t in window[1:-1]}
            if inner & {"or", "nor"}:  # "heated seats or leather seats" holds two values, not one
                continue
            stems = [t.norm for t in window if t.norm not in stop]
            content = frozenset(s for s in permission_folded(stems) if s not in self.kind_words)
            kinds = frozenset(s for s in stems if s in self.kind_words)
            name_ok = functools.partial(self._names_match, query, tokens, i, j)
            context = frozenset({*asked.values(), *implied})
            form = self._best(content, kinds, window, name_ok, context, avoided, bool(together))
            several = self.kinds.one_per_kind(content, window, name_ok, asked) if form is None and together else []
            for one in several:  # "comedies, movies or TV shows": the films' and the series' comedies
                refresh(*self._take(query, window, one, mark, picked, matches))
            if form is None or ("and" in inner and not _JOINED.search(form.value)):  # "A and B": two values
                continue
            if form.demonym and not self._demonym_of_items(tokens, i, j):
                continue
            if form.other_name and not self._own_place(query, tokens, i, j):
                continue  # "North Korea", "New Britain", "Little Britain" and "Korea Town" are other places
            earlier = picked.get(form.field, [])
            compound = window[0].norm not in self.kind_words  # "non-South Korean TV shows" are TV shows
            excluded = self._excluded_at(query, window[0].start, earlier, window[-1].end, compound, form) is not None
            if form.field in scalar_taken and not excluded and i not in together:
                # a second value of a one-value field: only as an alternative (kinds asked together are), or an
                # exclusion ("not steel")
                gaps = [query[p.end : window[0].start] if p.end <= window[0].start else query[window[-1].end : p.start]
                        for p in earlier]  # fmt: skip
                if not any(re.search(r"\bor\b|,", g) or _AND_ONLY.fullmatch(g) for g in gaps):
                    continue
            refresh(*self._take(query, window, form, mark, picked, matches))
            if not excluded:
                implied |= self.kinds.of(form)
            else:
                for x in range(i, j):
                    asked.pop(x, None)
            if form.field not in self.values.list_fields and not excluded:  # "ecology, not machine learning"
                scalar_taken.add(form.field)
        for i in range(n):  # surnames: "a Nolan film"
            for j in range(min(n, i + 3), i, -1):
                window = tokens[i:j]
                if not all(unread[i:j]):
                    continue
                form = self.values.surname(window)
                if form is None or not self._whole_run(query, tokens, i, j):
                    continue
                if form.field in self.values.list_fields or form.field not in scalar_taken:
                    refresh(*self._take(query, window, form, mark, picked, matches))
                    scalar_taken.add(form.field)
                    break
        for name, found in picked.items():
            found = sorted(found)
            none_of = [p.value for p in found if p.excluded]
            if none_of:  # "not diesel or petrol": none of them (in a list field, no element is one of them)
                conds.append(_one_of(name, none_of, True))
            kept = [p for p in found if not p.excluded]
            values = list(dict.fromkeys(p.value for p in kept))  # "Britain's ... Great Britain": once
            alternatives = any(  # a word read as one value per kind is their alternatives
                p.start == q.start or re.search(r"\bor\b", query[p.end : q.start]) for p, q in itertools.pairwise(kept)
            )
            if len(values) == 1:
                conds.append(Condition(name, Op.EQ, values[0]))
            elif name in self.values.list_fields and not alternatives:  # "thriller dramas": both genres
                conds.extend(Condition(name, Op.EQ, v) for v in values)
            elif values:
                conds.append(Condition(name, Op.IN, values))
        return [p for found in picked.values() for p in found if not p.excluded]

    def _demonym_of_items(self, tokens: list[Token], i: int, j: int) -> bool:
        """A demonym names a country before what the catalogue lists: a kind word, a value, or a plural that is
        no kind of person ("Indian movies", "Canadian jazz", "German events"); not "the Indian ocean", "American
        actors", "Latin American" or "in French"."""
        if i > 0 and tokens[i - 1].norm in _REGION_WORDS:
            return False
        if j >= len(tokens):
            return False
        after = tokens[j]
        if after.norm in self.kind_words or self.values.forms(frozenset({after.norm})):
            return True
        plural = after.word.endswith("s") and not after.word.endswith("ss") and after.norm != after.word
        return plural and after.norm not in _PERSON_STEMS

    def _own_place(self, query: str, tokens: list[Token], i: int, j: int) -> bool:
        """Whether a country's other name at ``tokens[i:j]`` stands alone: no place prefix before it, and no
        capitalised word joined to it that is not the query's first word, a kind word or a word of a value."""

        def joins(word: Token, a: Token, b: Token, first: bool) -> bool:
            if not word.capital or first or word.norm in self.kind_words or self.values.forms(frozenset({word.norm})):
                return False
            return query[a.end : b.start].isspace()

        if i > 0 and (tokens[i - 1].norm in _PLACE_PREFIXES or joins(tokens[i - 1], tokens[i - 1], tokens[i], i == 1)):
            return False
        return not (j < len(tokens) and joins(tokens[j], tokens[j - 1], tokens[j], False))

    def _names_match(self, query: str, tokens: list[Token], i: int, j: int, form: ValueForm) -> bool:
        """A person's name matches its own words in order, unstemmed; a one-word name only as the query's
        whole run of capitalised words ("Edward" is not "Edward Stafford")."""
        if tuple(t.word for t in tokens[i:j]) != form.words:
            return False
        return len(form.words) > 1 or self._whole_run(query, tokens, i, j)

    def _whole_run(self, query: str, tokens: list[Token], i: int, j: int) -> bool:
        """No capitalised word that could continue a name touches ``tokens[i:j]``: "Drew" in "Drew Fuller" is
        part of another name. Function and kind words do not continue one ("Which Nolan film", "Nolan
        Movies"), nor does a word after a comma or a possessive ("Nolan's Inception"). Any other capitalised
        word does, a genre or a sentence's first word included: a wrong filter empties a result, a missed
        one only leaves the name to the semantic query ("Okafor Thrillers" reads the genre alone)."""
        stop = stop_stems()

        def continues(a: Token, b: Token, other: Token) -> bool:
            return (
                other.capital
                and other.norm not in stop
                and other.norm not in self.kind_words
                and _JOIN.fullmatch(query[a.end : b.start]) is not None
                and not query[a.start : a.end].lower().endswith("'s")  # a token holds its ASCII "'s"
            )

        before = i > 0 and continues(tokens[i - 1], tokens[i], tokens[i - 1])
        after = j < len(tokens) and continues(tokens[j - 1], tokens[j], tokens[j])
        return not (before or after)

    def _excluded_at(
        self, query: str, start: int, earlier: list[Picked], end: int, compound: bool, form: ValueForm
    ) -> int | None:
        """Where the words excluding the value at ``start`` begin (``negation.excluded_start``), or "outside"
        before one of a field's single values ("hotels outside rome"; a list's "outside parking" is wanted)."""
        found = excluded_start(query, start, earlier, end, compound)
        if found is None and form.field not in self.values.list_fields:
            found = outside_start(query, start)
        return found

    def _take(
        self,
        query: str,
        window: list[Token],
        form: ValueForm,
        mark: Mark,
        picked: dict[str, list[Picked]],
        matches: list[str],
    ) -> tuple[int, int]:
        """Read ``form`` at ``window``; returns the span of the query it marked read."""
        start, end = window[0].start, window[-1].end
        compound = window[0].norm not in self.kind_words
        excluded = self._excluded_at(query, start, picked.get(form.field, []), end, compound, form)
        for t in window:
            mark(t.start, t.end)
        if excluded is not None:
            mark(excluded, start)
        marked = (start if excluded is None else excluded, end)  # a cue starts before the value
        named = _NEXT_WORD.match(query, end)  # "a belt drive": the field's own name ending the phrase after a value
        if named is not None and _stem(named.group(1).lower()) in {_stem(w) for w in name_words(form.field)}:
            mark(named.start(1), named.end(1))
            marked = (marked[0], max(end, named.end(1)))
        picked.setdefault(form.field, []).append(Picked(start, end, form.value, excluded is not None))
        sign = "!=" if excluded is not None else "="
        matches.append(
            f"{query[excluded if excluded is not None else start : end]!r} -> {form.field} {sign} {form.value!r}"
        )
        return marked

    def _best(
        self,
        content: frozenset[str],
        kinds: frozenset[str],
        window: list[Token],
        name_ok: Callable[[ValueForm], bool],
        context: frozenset[str] = frozenset(),
        avoided: frozenset[str] = frozenset(),
        several_kinds: bool = False,
    ) -> ValueForm | None:
        """The value ``window`` names. ``kinds``: the window's own kind words; ``context``: the kinds the rest
        of the query asks for or its values imply. A value whose own name says another kind is refused
        ("Korean movies" is no 'Korean TV Shows'), and one the data only ever finds with another kind yields
        to one found with this kind ("Korean dramas": 'TV Dramas', not the films' 'Dramas'); either
        conjunction would hold no row. ``avoided``: kinds the query excludes; a value found only with them
        yields to another ("dramas, not movies": 'TV Dramas'). ``several_kinds``: the query asks for several
        kinds together, so only a value of no particular kind is read ("Korean TV shows and movies": the
        country, not the series shelf; "anime series and movies": no value)."""
        candidates = [f for f in self.values.forms(content) if not f.words or name_ok(f)]
        if several_kinds and not kinds:  # no value, rather than one that drops the other kind
            candidates = [f for f in candidates if not f.kinds and not self.kinds.of(f)]
        if avoided and not kinds:
            candidates = [f for f in candidates if not (self.kinds.of(f) and self.kinds.of(f) <= avoided)] or candidates
        if context and not kinds:
            candidates = [f for f in candidates if not f.kinds or f.kinds & context]
            if any(self.kinds.of(f) & context for f in candidates):
                candidates = [f for f in candidates if not self.kinds.of(f) or self.kinds.of(f) & context]
        candidates = [f for f in candidates if not f.demonym] or candidates  # a value's own word first
        # one capital-less word is never a person's name ("love" is no actor's name, "Love" may be)
        if len(window) == 1 and not window[0].capital:
            candidates = [f for f in candidates if f.field not in self.values.name_fields]
        if not candidates:
            return None
        if kinds:
            agreeing = [f for f in candidates if kinds <= self.kinds.of(f) or kinds == f.kinds]
            if not agreeing:
                return None
            candidates = agreeing
        elif content:
            plain = [f for f in candidates if not f.kinds]
            candidates = plain or candidates
        else:
            return None
        return max(candidates, key=lambda f: f.count)


Free = Callable[[int, int], bool]
Mark = Callable[[int, int], None]


def _one_of(name: str, values: list[str], excluded: bool) -> Condition:
    if len(values) == 1:
        return Condition(name, Op.NE if excluded else Op.EQ, values[0])
    return Condition(name, Op.NIN if excluded else Op.IN, values)


def combine(*filters: Filter | None) -> Filter | None:
    parts = [f for f in filters if f is not None]
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else And(tuple(parts))
