"""Words that negate what follows them: a value ("not diesel", "without Kubernetes") or a flag ("not in stock",
"out of stock"). Shared by the value and the flag readers."""

from __future__ import annotations

import re

# A value right after one of these is excluded ("not diesel", "non-diesel", "without Kubernetes", "anything
# but a manual", "wines not from France", "jobs not requiring Kubernetes", "a bike with no lights", "neither
# carbon nor steel", "Mexican food, no beef", "a bike that has no lights", "absolutely no horror"); a verb of
# containing or making and a few function words may come between. Other verbs are not enough, nor "no" after
# other words: "is there really no comedy about dogs?" wants comedies, "I've not watched a documentary" wants one.
_CONTAINING = (
    r"requir(?:e|es|ed|ing)|includ(?:e|es|ed|ing)|contain(?:s|ed|ing)?|featur(?:e|es|ed|ing)|us(?:e|es|ing)|"
    r"need(?:s|ed|ing)?|hav(?:e|ing)|has|involv(?:e|es|ed|ing)|starr(?:ed|ing)|direct(?:ed|ing)|written|"
    r"produc(?:ed|ing)|made|set|located|based|rated|"
    r"[^\W\d_]+(?=\s+by\b)"  # "not hosted by", "not sold by"
)
EXCLUDED_BEFORE = re.compile(
    r"(?:\b(?:not|non|without|excluding|except|neither|nor|isn't|aren't|don't|doesn't|didn't)"
    r"|(?<![\w'])no"  # but see _NO_ASKS
    r"|\bother\s+than|\bany(?:thing|where|one|body)\s+(?:but|except)|\bbut\s+not|\bw/o)"
    rf"(?:\s+(?:{_CONTAINING}))?(?:[\s-]+(?:a|an|the|any|from|in|on|by|of|with|for|being))*[\s-]*$",
    re.IGNORECASE,
)
# A true/false field's words right after one of these mean false ("not in stock", "out of stock", "non-vegetarian")
NEGATED_FLAG = re.compile(rf"(?:{EXCLUDED_BEFORE.pattern.removesuffix('$')}|\bout\s+of\s*)$", re.IGNORECASE)
