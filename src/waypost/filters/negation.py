"""Words that negate what follows them: a value ("not diesel", "without Kubernetes") or a flag ("not in stock",
"out of stock"). Shared by the value and the flag readers."""

from __future__ import annotations

import re
from dataclasses import dataclass

# A value right after one of these is excluded ("not diesel", "non-diesel", "without Kubernetes", "anything
# but a manual", "wines not from France", "jobs not at Acme", "jobs not requiring Kubernetes", "a bike with no
# lights", "neither carbon nor steel", "Mexican food, no beef", "a bike that has no lights", "absolutely no
# horror"); a verb of containing or making and a few function words may come between. Other verbs are not
# enough, nor "no" after other words: "is there really no comedy about dogs?" wants comedies, "I've not
# watched a documentary" wants one.
_CONTAINING = (
    r"requir(?:e|es|ed|ing)|includ(?:e|es|ed|ing)|contain(?:s|ed|ing)?|featur(?:e|es|ed|ing)|us(?:e|es|ing)|"
    r"need(?:s|ed|ing)?|hav(?:e|ing)|has|involv(?:e|es|ed|ing)|starr(?:ed|ing)|direct(?:ed|ing)|written|"
    r"produc(?:ed|ing)|made|set|located|based|rated|"
    r"[^\W\d_]+(?=\s+by\b)"  # "not hosted by", "not sold by"
)
EXCLUDED_BEFORE = re.compile(
    r"(?:\b(?:not|non|without|excluding|except|neither|nor|isn't|aren't|don't|doesn't|didn't)"
    r"|(?<![\w'])no"  # but see NO_ASKS
    r"|\bother\s+than|\bany(?:thing|where|one|body)\s+(?:but|except)|\bbut\s+not|\bw/o)"
    rf"(?:\s+(?:{_CONTAINING}))?(?:[\s-]+(?:a|an|the|any|from|in|at|on|by|of|with|for|being))*[\s-]*$",
    re.IGNORECASE,
)
# A true/false field's words right after one of these mean false ("not in stock", "out of stock", "non-vegetarian")
NEGATED_FLAG = re.compile(rf"(?:{EXCLUDED_BEFORE.pattern.removesuffix('$')}|\bout\s+of\s*)$", re.IGNORECASE)

# "Outside X" excludes X where X is one of a field's single values, a place more often than not ("hikes outside
# Switzerland", "hotels outside rome"); not a thing a list holds ("hotels offering outside parking"), nor after an
# article, "with", "has" or "for" ("an outside pool", "tents for outside winter camping"). See ``outside_start``.
OUTSIDE = re.compile(r"\boutside(?:\s+of)?(?:\s+the)?\s+$", re.IGNORECASE)
_DESCRIBING = re.compile(r"\b(?:a|an|the|with|has|have|having|for)\s+$", re.IGNORECASE)

# "No" after these asks whether any exists or says none was found ("is there really no comedy about dogs?",
# "there's no ...", "I've seen no westerns"): the value is wanted, not excluded
NO_ASKS = re.compile(
    r"\b(?:there|there's|is|are|was|were|seen|saw|found|heard|know|knew)\s+(?:\w+ly\s+)?$", re.IGNORECASE
)
_NO_WORD = re.compile(r"no\b", re.IGNORECASE)
_FINE_AFTER = re.compile(r"\s+(?:is|are)\s+(?:fine|ok|okay|good|great|welcome|allowed)\b", re.IGNORECASE)
# "non-" negates the whole capitalised compound after it: "non-South Korean" excludes a value that starts at
# "Korean" as much as one that starts at "South" (a value in capitals, part of the compound)
NON_COMPOUND = re.compile(r"(?i:\bnon)-(?:[A-Z][\w']*[\s-]+)*$")
_ALTERNATIVE = re.compile(r"^\s*(?:,|or|nor|and|,\s*or|,\s*nor)\s*$", re.IGNORECASE)  # after an excluded value


@dataclass(frozen=True, order=True)
class Picked:
    """A value read from the query at ``start:end``; ``excluded``: the query asks for anything but it."""

    start: int
    end: int
    value: str
    excluded: bool = False


def outside_start(query: str, start: int) -> int | None:
    """Where "outside" begins, if it comes right before ``start`` and does not describe a thing."""
    m = OUTSIDE.search(query, max(0, start - 40), start)
    if m is None or _DESCRIBING.search(query, max(0, m.start() - 12), m.start()):
        return None
    return m.start()


def excluded_start(
    query: str, start: int, earlier: list[Picked], end: int | None = None, compound: bool = True
) -> int | None:
    """Where the words excluding the value at ``start`` begin ("not", "non-", "anything but a"), or, for another
    value of an excluded one's list ("not diesel or petrol", "not from India and Pakistan"), ``start`` itself;
    ``None``: not excluded. A comma before "and" ends the list, and so does a wanted value ("not horror and
    dramas are fine"); ``end``: where the value ends; ``compound``: a value inside a capitalised compound after
    "non-" is excluded too (not so a kind word: "non-South Korean TV shows" are TV shows)."""
    m = EXCLUDED_BEFORE.search(query, max(0, start - 40), start)
    if m is not None and not (_NO_WORD.match(m.group(0)) and NO_ASKS.search(query, 0, m.start())):
        return m.start()
    inside = compound and query[start : start + 1].isupper()  # "non-United Kingdom comedies" wants comedies
    m = NON_COMPOUND.search(query, max(0, start - 40), start) if inside else None
    if m is not None:
        return m.start()
    last = max(earlier, default=None)
    if last is None or not last.excluded or last.end > start or not _ALTERNATIVE.match(query[last.end : start]):
        return None
    if end is not None and _FINE_AFTER.match(query, end):
        return None
    return start
