"""Looking up a collection's string values from query words, through an index rather than a scan.

Every string value of every field (list elements one by one; people's names in a director or cast field with
thousands of values included) is indexed by its set of content stems. A query window matches a value whose
stems it equals exactly; values written as codes (``TV-MA``, ``PG-13``, ``R``) match as exact tokens. In a
field of people's names (many distinct values, each on few chunks, most of them two to four capitalised words),
words are compared unstemmed and in order ("Nation" is not "National", "Andrew Scott" is not "Scott Andrew"), and
a run of capitalised query words also matches the trailing words of exactly one name ("Nolan" -> "Christopher
Nolan"; an ambiguous surname matches nothing). A one-word match needs a capital letter, and a match that is not
the whole name must be the query's whole run of capitalised words: "Drew Fuller" names someone other than
"Vivian Drew", and "Edward Stafford" someone other than "Edward" (the extractor checks the run).

Stemming tens of thousands of names is the expensive part, so the analysis of each field's values is kept for
the process and shared by every build: a new generation (after a write) stems only the values it adds, and
each build filters lookups through its own generation's value counts.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from functools import cached_property

from waypost.filters.catalog import FieldCatalog, is_text
from waypost.filters.fields import UNITS
from waypost.filters.places import PLACE_FIELD_MIN, country_names, other_names
from waypost.filters.text import (
    DEFAULT_KIND_WORDS,
    Token,
    folded_words,
    permission_folded,
    stem,
    stem_word_lists,
    stems,
    stop_stems,
)

_CODE_TOKEN = re.compile(r"(?<![\w&-])[\w][\w&+.-]*(?<![.])")
_PARTICLES = frozenset("de da di del della van von der den la le du dos das bin al el y of and".split())
NAME_FIELD_MIN_VALUES = 20  # fewer distinct values than this: a category, not a field of names
NAME_MAX_USES = 10  # a value on more chunks than this on average: a category (names are rarely shared)
# A field whose values are only these is a flag: (what true is, what false is), as the field stores it
_FLAGS = (("true", "false"), ("yes", "no"))


SYNONYM_FIELD_MAX_VALUES = 1000  # fields with more distinct values (people's names) hold no category words
KIND_FIELD_MAX_VALUES = 4  # a string field of at most this many values may say what kind each item is


def synonyms_in_use(
    catalog: FieldCatalog, synonyms: dict[str, str], kind_words: frozenset[str] = DEFAULT_KIND_WORDS
) -> dict[str, str]:
    """The synonyms whose every target word occurs in the collection's category-like values: "series" becomes
    "tv" only where some value says "TV" (a film catalogue), never where "5 Series" is a car's model line. In a
    catalogue with a field whose every value names a kind of item (type: "Movie" | "TV Show"; ``kind_words``) a
    target word counts by its stem ("films" -> "movies"; "docs" -> "documentaries" where a genre says
    "Documentary"); elsewhere only the exact word ("docs" is no format "Documentary" of a catalogue of courses,
    even one with a subject "Film & TV Studies")."""
    words: set[str] = set()
    kinds_named = False
    for name in catalog.fields:
        if is_text(catalog.field_kind(name)):
            values = catalog.values(name)
            if len(values) <= SYNONYM_FIELD_MAX_VALUES:
                words.update(w for v in values for w in folded_words(v, {}))
            if catalog.field_kind(name) == "string" and 0 < len(values) <= KIND_FIELD_MAX_VALUES:
                kinds_named |= all(any(stem(w) in kind_words for w in folded_words(v, {})) for v in values)
    stems = {stem(w) for w in words}
    by_stem = kinds_named

    def held(word: str) -> bool:
        return word in words or (by_stem and stem(word) in stems)

    return {k: v for k, v in synonyms.items() if not k.isalpha() or all(held(w) for w in folded_words(v, {}))}


def is_code(value: str) -> bool:
    """One token with a digit (``PG-13``, ``X5``), a hyphenated one in capitals (``TV-MA``), or a short upper-case
    word (``R``, ``NR``). "Full-time", "Sci-Fi" and "Mercedes-Benz" are words, matched by their stems."""
    token = value.strip()
    if " " in token or token.replace(".", "").isdigit():
        return False
    if re.search(r"\d", token):
        return True
    if "-" in token:
        return all(part.isupper() for part in token.split("-") if part)
    return token.isupper() and len(token) <= 5


# Two-letter English words: a two-letter code written in lower case is the code unless it is one of these
_TWO_LETTER_WORDS = frozenset(
    "ad ah am an as at aw ax be by do eh go ha he hi hm ho id if in is it me mm my no of oh ok on or ow ox "
    "pa pi so to uh um un up ur us we ya ye yo".split()
)


def _plural_code(token: str) -> bool:
    """A code in capitals with a lower-case "s" added: "SUVs", "B&Bs", "PCs" (not "Bus")."""
    stem = token[:-1]
    return len(stem) >= 2 and token.endswith("s") and stem.upper() == stem and any(c.isalpha() for c in stem)


def _two(token: str) -> bool:
    """A two-letter token in lower case that is no English word nor a unit ("hp", "lg"; not "gb", "km"): a code
    in any case."""
    return (
        len(token) == 2
        and token.isalpha()
        and token.islower()
        and token not in _TWO_LETTER_WORDS
        and token not in UNITS
    )


def _case_blind(value: str) -> bool:
    """A short code that may match in any case: letters and digits together ("a4" is "A4"), unlike "R"."""
    return bool(re.search(r"\d", value)) and bool(re.search(r"[^\W\d_]", value))


def _flag(counts: dict[str, int]) -> tuple[bool | str, bool | str] | None:
    """A flag field's true and false values (True/False, or "yes"/"no" as written), else None."""
    folded = {v.casefold(): v for v in counts}
    for yes, no in _FLAGS:
        if folded and set(folded) <= {yes, no}:
            if yes == "true":
                return True, False
            return folded.get(yes, yes), folded.get(no, no)
    return None


def _looks_like_name(value: str) -> bool:
    words = value.split()
    return 2 <= len(words) <= 4 and all(w[:1].isupper() or w.lower() in _PARTICLES for w in words)


@dataclass(frozen=True)
class ValueForm:
    field: str
    value: str
    content: frozenset[str]  # stems without stopwords and kind words
    kinds: frozenset[str]  # kind words the value carries ("Horror Movies": movi)
    count: int
    words: tuple[str, ...] = ()  # a name's folded words, unstemmed (empty outside fields of names)
    demonym: bool = False  # the value said by its people's name ("Indian" for India)
    other_name: bool = False  # the value said by another name of its country ("Korea" for South Korea)


@dataclass(frozen=True)
class _Analysed:
    value: str
    content: frozenset[str]
    kinds: frozenset[str]
    words: tuple[str, ...]  # every folded word, unstemmed, stopwords included (a name's trailing words)


class _FieldValues:
    """Every value one field name has held in this process, analysed once: grows with each generation (the
    values a write adds), never shrinks; a ``ValueIndex`` reads it through its own generation's counts."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.by_content: dict[frozenset[str], list[_Analysed]] = {}
        self.by_trailing: dict[tuple[str, ...], list[_Analysed]] = {}
        self.codes: dict[str, list[str]] = {}  # casefolded code -> values
        self.code_like: set[str] = set()
        self.name_like: set[str] = set()
        self.places: set[str] = set()  # values that name a country
        self.by_other_name: dict[frozenset[str], list[_Analysed]] = {}  # "Indian" -> India
        self.by_country_name: dict[frozenset[str], list[_Analysed]] = {}  # "Korea" -> South Korea
        self.abbreviations: dict[str, list[str]] = {}  # "US" -> United States, as written without final dots

    def add(self, values: list[str], synonyms: dict[str, str], kind_words: frozenset[str]) -> None:
        stop = stop_stems()
        for value in values:
            if is_code(value):
                self.code_like.add(value)
                self.codes.setdefault(value.casefold(), []).append(value)
            if _looks_like_name(value):
                self.name_like.add(value)
        self._add_places(values, synonyms, kind_words)
        split = [folded_words(value, synonyms) for value in values]
        for value, words, norms in zip(values, split, stem_word_lists(split), strict=True):
            content_stems = permission_folded([s for s in norms if s not in stop])
            kinds = frozenset(s for s in content_stems if s in kind_words)
            content = frozenset(s for s in content_stems if s not in kind_words)
            if not content and not kinds:
                continue
            form = _Analysed(value, content, kinds, tuple(words))
            self.by_content.setdefault(content, []).append(form)
            if value in self.name_like:
                for i in range(1, len(form.words)):
                    self.by_trailing.setdefault(form.words[i:], []).append(form)
        self.seen.update(values)

    def _add_places(self, values: list[str], synonyms: dict[str, str], kind_words: frozenset[str]) -> None:
        stop = stop_stems()
        for value in values:
            others, codes = other_names(value)
            if not others and not codes:
                continue
            self.places.add(value)
            for other in others:
                content = frozenset(s for s in stems(other, synonyms) if s not in stop and s not in kind_words)
                if content:
                    self.by_other_name.setdefault(content, []).append(_Analysed(value, content, frozenset(), ()))
            for name in country_names(value):
                content = frozenset(s for s in stems(name, synonyms) if s not in stop and s not in kind_words)
                if content:
                    self.by_country_name.setdefault(content, []).append(_Analysed(value, content, frozenset(), ()))
            for code in codes:
                self.abbreviations.setdefault(code.rstrip("."), []).append(value)


# (field name, synonyms, kind words) -> the field's values analysed so far, shared by every build in the process
_SHARED: dict[tuple[str, tuple[tuple[str, str], ...], frozenset[str]], _FieldValues] = {}
_SHARED_LOCK = threading.Lock()
_REBUILD_FACTOR = 4  # start a field afresh when it holds this many times more values than a build needs


def _field_values(
    name: str, counts: dict[str, int], synonyms: dict[str, str], kinds: frozenset[str]
) -> tuple[_FieldValues, int]:
    """The shared analysis of a field, brought up to date with ``counts`` (only values never seen before are
    stemmed: after a write, the new generation's few new values), and how many of ``counts`` look like names."""
    key = (name, tuple(sorted(synonyms.items())), kinds)
    with _SHARED_LOCK:
        found = _SHARED.get(key)
        if found is None or len(found.seen) > _REBUILD_FACTOR * len(counts) + 10_000:
            found = _SHARED[key] = _FieldValues()
        if not found.seen:
            found.add(list(counts), synonyms, kinds)
        else:
            new = counts.keys() - found.seen
            if new:
                found.add(sorted(new), synonyms, kinds)
        return found, len(found.name_like.intersection(counts))


class ValueIndex:
    """String values by their content stems, codes by their text, names by their trailing words.

    The analysis of values (stems, codes, names) is shared across builds and only extended with new values;
    what one build owns is its generation's value counts, through which every lookup is filtered."""

    def __init__(self, catalog: FieldCatalog, synonyms: dict[str, str], kind_words: frozenset[str]) -> None:
        self.catalog = catalog
        self.name_fields: set[str] = set()
        self.flag_values: dict[str, tuple[bool | str, bool | str]] = {}  # a flag field's true and false values
        self.list_fields: set[str] = set()
        self.place_fields: set[str] = set()  # fields of countries: their people's names count
        self._fields: list[tuple[str, dict[str, int], _FieldValues]] = []
        for name in catalog.fields:
            kind = catalog.field_kind(name)
            if not is_text(kind):
                continue
            if kind == "strings":
                self.list_fields.add(name)
            counts = catalog.values(name)
            flag = _flag(counts)
            if flag is not None:
                self.flag_values[name] = flag
                continue
            if not counts:
                continue
            shared, names = _field_values(name, counts, synonyms, kind_words)
            per_value = sum(counts.values()) / len(counts)
            if len(counts) >= NAME_FIELD_MIN_VALUES and names >= 0.6 * len(counts) and per_value <= NAME_MAX_USES:
                self.name_fields.add(name)
            self._fields.append((name, counts, shared))
            if len(shared.places.intersection(counts)) >= PLACE_FIELD_MIN:
                self.place_fields.add(name)

    def forms(self, content: frozenset[str]) -> list[ValueForm]:
        out: list[ValueForm] = []
        for name, counts, shared in self._fields:
            is_names = name in self.name_fields
            for a in shared.by_content.get(content, ()):
                count = counts.get(a.value)
                if count and (is_names or a.value not in shared.code_like):
                    out.append(ValueForm(name, a.value, a.content, a.kinds, count, a.words if is_names else ()))
            if name in self.place_fields:
                for a in shared.by_country_name.get(content, ()):  # said as the country's own name would be
                    count = counts.get(a.value)
                    if count and all(f.value != a.value or f.field != name for f in out):
                        out.append(ValueForm(name, a.value, a.content, a.kinds, count, other_name=True))
                for a in shared.by_other_name.get(content, ()):
                    count = counts.get(a.value)
                    if count and all(f.value != a.value or f.field != name for f in out):
                        out.append(ValueForm(name, a.value, a.content, a.kinds, count, demonym=True))
        return out

    def code_matches(self, query: str) -> list[tuple[re.Match[str], str, str]]:
        """(match, field, value) for each query token that is a code value; codes of one or two characters
        must match in case ("R" is a rating, "r" is not) unless they mix letters and digits ("x5")."""
        out: list[tuple[re.Match[str], str, str]] = []
        fields = [
            (n, c, s) for n, c, s in self._fields if (s.codes or n in self.place_fields) and n not in self.name_fields
        ]
        for m in _CODE_TOKEN.finditer(query):
            token = m.group(0)
            if _plural_code(token):  # "B&Bs", "SUVs": the code's plural
                token = token[:-1]
            for name, counts, shared in fields:
                for value in shared.codes.get(token.casefold(), ()):
                    if value in counts and (len(value) > 2 or token == value or _case_blind(value) or _two(token)):
                        out.append((m, name, value))
                if name in self.place_fields and token.isupper():  # "the US", "U.S." (its final dot left out)
                    out.extend((m, name, v) for v in shared.abbreviations.get(token, ()) if v in counts)
        return out

    def surname(self, run: list[Token]) -> ValueForm | None:
        """The one name whose trailing words are this run of capitalised query words, if exactly one."""
        if not run or not all(t.capital for t in run) or len(run[-1].word) < 3:
            return None
        key = tuple(t.word for t in run)
        found = [
            ValueForm(name, a.value, a.content, a.kinds, counts[a.value], a.words)
            for name, counts, shared in self._fields
            if name in self.name_fields
            for a in shared.by_trailing.get(key, ())
            if a.value in counts
        ]
        names = {(f.field, f.value) for f in found}
        return found[0] if len(names) == 1 else None

    @cached_property
    def boolean_words(self) -> dict[str, frozenset[str]]:
        """Stems of each true/false field's name words, without function words ("in_stock" -> stock)."""
        from waypost.filters.text import name_words, stem

        out: dict[str, frozenset[str]] = {}
        for name in self.flag_values:
            words = frozenset(
                stem(w) for w in name_words(name) if stem(w) not in stop_stems() and w not in ("is", "has")
            )
            if words:
                out[name] = words
        return out
