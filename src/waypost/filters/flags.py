"""True/false fields read from a query: "in stock", "out of stock", "pet-friendly", "with breakfast",
"unsigned", "breakfast not included", "electric: no"."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable

from waypost.filters.model import Condition, Op
from waypost.filters.negation import NEGATED_FLAG
from waypost.filters.text import PERMISSION_STEMS, Token, name_words, stem, tokenize
from waypost.filters.values import ValueIndex

Free = Callable[[int, int], bool]
Mark = Callable[[int, int], None]


# Words of a flag's name that only qualify the thing it names: "breakfast_included" is named by "breakfast",
# "signed_copy" by "signed" ("with breakfast", "signed novels")
QUALIFIER_STEMS = frozenset({"includ", "avail", "copi", "option", "enabl", "provid", "offer", "support", "equip"})


def _flag_words(words: frozenset[str]) -> frozenset[str]:
    """The words a query must hold to name a flag: its name's words without qualifiers, a word of permission
    standing for any of them ("pets_allowed": "pet-friendly")."""
    said = words - QUALIFIER_STEMS or words
    return said if not said & PERMISSION_STEMS else (said - PERMISSION_STEMS) | {"<allowed>"}


def _as_written(word: str, name: str) -> bool:
    """Whether a query word is a word of the field's name as written there, its plural or singular ("a speaker"
    for speakers_included), or it with "un"."""
    written = set(name_words(name))
    return any(f in written for w in (word, word.removeprefix("un")) for f in _numbers_of(w))


def _numbers_of(word: str) -> tuple[str, ...]:
    """A word, its singular and its plurals, as written."""
    return word, word.removesuffix("s"), word + "s", word + "es"


def _as_flag_word(norm: str, said: frozenset[str]) -> str:
    """A query word as a flag word: any word of permission for one, "unsigned" for "signed"."""
    if norm in PERMISSION_STEMS and "<allowed>" in said:
        return "<allowed>"
    return norm[2:] if norm.startswith("un") and norm not in said and norm[2:] in said else norm


_FLAG_STATED = re.compile(r"\s*[:=]\s*(yes|no|true|false|y|n)\b", re.IGNORECASE)
# After a flag's words: "breakfast not included", "parking is not offered", "pets aren't allowed", "excluded"
_NEGATED_AFTER = re.compile(
    r"\s+(?:(?:is|are|was|were)\s+)?(?:not|never|no\s+longer)\s+\w+(?:ed|able)\b(?=\s*(?:$|[,.;!?]|(?:and|or|but)\b))"
    r"|\s*(?:isn't|aren't|wasn't|weren't)\s+\w+(?:ed|able)\b|\s+(?:excluded|unavailable)\b",
    re.IGNORECASE,
)
_NEGATED_BETWEEN = re.compile(r"\b(?:not|never|no\s+longer)\b|n't\b", re.IGNORECASE)


def read_flags(
    query: str, values: ValueIndex, free: Free, mark: Mark, conds: list[Condition], matches: list[str]
) -> None:
    """A true/false field whose name words all appear ("in stock" -> in_stock = true; "out of stock",
    "not in stock" -> false)."""
    words_of_query = tokenize(query, {})
    pairs = [  # two words written apart that a flag's name runs together ("touch screen": touchscreen)
        Token(stem(a.word + b.word), a.start, b.end, a.capital, a.word + b.word)
        for a, b in itertools.pairwise(words_of_query)
        if re.fullmatch(r"[\s-]", query[a.end : b.start])
    ]
    for name, words in values.boolean_words.items():
        said = _flag_words(words)
        joined = [p for p in pairs if p.norm in said]
        tokens = sorted([*words_of_query, *joined], key=lambda t: t.start) if joined else words_of_query
        hits = [i for i, t in enumerate(tokens) if _as_flag_word(t.norm, said) in said and free(t.start, t.end)]
        if {_as_flag_word(tokens[i].norm, said) for i in hits} != said:
            continue
        shortened = bool(words & QUALIFIER_STEMS) and bool(words - QUALIFIER_STEMS)
        if shortened and not all(_as_written(tokens[i].word, name) for i in hits if tokens[i].norm in said):
            continue  # named by one word of several: only as the name writes it ("signed", not "signing")
        first = hits[0]
        cue = NEGATED_FLAG.search(query[max(0, tokens[first].start - 40) : tokens[first].start])
        between = query[tokens[first].end : tokens[hits[-1]].start]  # "pets are not allowed"
        stated = _FLAG_STATED.match(query, tokens[hits[-1]].end)  # "electric: no", "in stock = false"
        undone = any(tokens[i].norm.startswith("un") and tokens[i].norm not in said for i in hits)  # "unsigned"
        negated_after = _NEGATED_AFTER.match(query, tokens[hits[-1]].end)  # "breakfast not included"
        value = cue is None and not undone and not negated_after and not _NEGATED_BETWEEN.search(between)
        if stated is not None:
            value = stated.group(1).lower() in ("yes", "true", "y")
        start = tokens[first].start if cue is None else max(0, tokens[first].start - 40) + cue.start()
        if value and first > 0 and query[tokens[first - 1].start : tokens[first - 1].end].lower() in ("in", "is"):
            start = tokens[first - 1].start
        end = stated.end() if stated is not None else tokens[hits[-1]].end
        if stated is None and negated_after is not None:  # "breakfast not included": the negation and its verb
            verb = re.match(r"\s+\w+", query[negated_after.end() :])
            end = negated_after.end() + (verb.end() if verb and stem(verb.group(0).strip().lower()) in words else 0)
        mark(start, end)
        conds.append(Condition(name, Op.EQ, values.flag_values[name][0 if value else 1]))
        matches.append(f"{query[start:end]!r} -> {name} = {value}")
