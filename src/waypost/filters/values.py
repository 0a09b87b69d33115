"""Looking up a collection's string values from query words, through an index rather than a scan.

Every string value of every field (list elements one by one; people's names in a director or cast field with
thousands of values included) is indexed by its set of content stems. A query window matches a value whose
stems it equals exactly; values written as codes (``TV-MA``, ``PG-13``, ``R``) match as exact tokens. In a
field of people's names (many distinct values, each on few chunks, most of them two to four capitalised words), a run of
capitalised query words also matches the trailing words of exactly one name ("Nolan" -> "Christopher Nolan";
an ambiguous surname matches nothing), and a one-word match needs a capital letter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from waypost.filters.catalog import FieldCatalog, is_text
from waypost.filters.text import Token, stem_all, stop_stems

_CODE_TOKEN = re.compile(r"(?<![\w&-])[\w][\w&+.-]*(?<![.])")
_PARTICLES = frozenset("de da di del della van von der den la le du dos das bin al el y of and".split())
NAME_FIELD_MIN_VALUES = 20  # fewer distinct values than this: a category, not a field of names
NAME_MAX_USES = 10  # a value on more chunks than this on average: a category (names are rarely shared)
_BOOLEAN = frozenset({"true", "false"})


def is_code(value: str) -> bool:
    """One token with a digit or a hyphen, or a short upper-case word (``R``, ``NR``)."""
    return (
        " " not in value.strip()
        and (bool(re.search(r"\d|-", value)) or (value.isupper() and len(value) <= 5))
        and not value.replace(".", "").isdigit()
    )


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
    trailing: tuple[str, ...] = ()  # stems of a name's words, for surname matches


class ValueIndex:
    """String values by their content stems, codes by their text, names by their trailing words."""

    def __init__(self, catalog: FieldCatalog, synonyms: dict[str, str], kind_words: frozenset[str]) -> None:
        self.catalog = catalog
        self.by_content: dict[frozenset[str], list[ValueForm]] = {}
        self.codes: dict[str, list[tuple[str, str]]] = {}  # casefolded code -> (field, value)
        self.by_trailing: dict[tuple[str, ...], list[ValueForm]] = {}
        self.name_fields: set[str] = set()
        self.booleans: list[str] = []
        self.list_fields: set[str] = set()
        stop = stop_stems()
        for name in catalog.fields:
            kind = catalog.field_kind(name)
            if not is_text(kind):
                continue
            if kind == "strings":
                self.list_fields.add(name)
            counts = catalog.values(name)
            if counts and {v.casefold() for v in counts} <= _BOOLEAN:
                self.booleans.append(name)
                continue
            name_like = {v for v in counts if _looks_like_name(v)}
            names = len(name_like)
            per_value = sum(counts.values()) / max(1, len(counts))
            is_names = (
                len(counts) >= NAME_FIELD_MIN_VALUES and names >= 0.6 * len(counts) and per_value <= NAME_MAX_USES
            )
            if is_names:
                self.name_fields.add(name)
            words = [v for v in counts if is_names or not is_code(v)]
            for value in counts:
                if is_code(value) and not is_names:
                    self.codes.setdefault(value.casefold(), []).append((name, value))
            for value, norms in zip(words, stem_all(words, synonyms), strict=True):
                count = counts[value]
                content_stems = [s for s in norms if s not in stop]
                kinds = frozenset(s for s in content_stems if s in kind_words)
                content = frozenset(s for s in content_stems if s not in kind_words)
                if not content and not kinds:
                    continue
                trailing = tuple(norms) if is_names else ()
                form = ValueForm(name, value, content, kinds, count, trailing)
                self.by_content.setdefault(content, []).append(form)
                if trailing and value in name_like:
                    for i in range(1, len(trailing)):
                        self.by_trailing.setdefault(trailing[i:], []).append(form)

    def forms(self, content: frozenset[str]) -> list[ValueForm]:
        return self.by_content.get(content, [])

    def code_matches(self, query: str) -> list[tuple[re.Match[str], str, str]]:
        """(match, field, value) for each query token that is a code value; codes of one or two characters
        must match in case ("R" is a rating, "r" is not)."""
        out: list[tuple[re.Match[str], str, str]] = []
        for m in _CODE_TOKEN.finditer(query):
            for name, value in self.codes.get(m.group(0).casefold(), []):
                if len(value) > 2 or m.group(0) == value:
                    out.append((m, name, value))
        return out

    def surname(self, run: list[Token]) -> ValueForm | None:
        """The one name whose trailing words are this run of capitalised query words, if exactly one."""
        if not run or not all(t.capital for t in run) or len(run[-1].norm) < 3:
            return None
        found = self.by_trailing.get(tuple(t.norm for t in run), [])
        names = {(f.field, f.value) for f in found}
        return found[0] if len(names) == 1 else None

    @cached_property
    def boolean_words(self) -> dict[str, frozenset[str]]:
        """Stems of each true/false field's name words, without function words ("in_stock" -> stock)."""
        from waypost.filters.text import name_words, stem

        out: dict[str, frozenset[str]] = {}
        for name in self.booleans:
            words = frozenset(
                stem(w) for w in name_words(name) if stem(w) not in stop_stems() and w not in ("is", "has")
            )
            if words:
                out[name] = words
        return out
