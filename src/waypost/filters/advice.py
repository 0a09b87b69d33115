"""Questions that ask for advice, a definition or an opinion rather than for items ("how do I cancel booking
48213?", "what does 'foxing' mean?", "is it safe to hike alone in the Dolomites?", "do I need winter tyres in
Munich?"): the values they name are their topic, not a filter. In a collection that mixes items with help pages,
such a filter would hide the pages that answer them. Read from the question's opening words only, which are
English; when unsure, the question is read as a request, as before this rule.

Two kinds of opening. One asks for a judgement or a meaning ("should I buy a diesel?", "is it safe to buy ...",
"do I need to book ...", "what does X mean", "is 8GB enough"): a question that opens so is no request, unless a
later sentence has a filter of its own ("should I go for diesel? show me Volvo estates under 10000"). The other
asks how something is done ("how do I", "can you", "is it possible to", "what should I"): it is no request when
the verb after it says an errand rather than looking for items ("how do I cancel ...", "can you explain ...",
"how do I get to the hotel?"), or acts on the asker's own things without asking for items ("can I bring my dog
...", "how do I edit my listing?"). Any other verb reads as a request ("how do I find a Kia under 10000 euros?",
"can you display hotels in Rome?", "how do I make a vegan curry under 30 minutes?", "what should I watch?")."""

from __future__ import annotations

import re
from collections.abc import Callable

_GREETING = r"^\W*(?:(?:hi|hey|hello|ok|okay|so|quick\s+question|please)\W+)*"
# A judgement, a meaning or a comparison of kinds
_JUDGEMENT = re.compile(
    _GREETING + r"(?:how\s+(?:long|early|late|soon|often)\s+(?:do|does|should|will|would|can)\b"  # how long does
    r"|what\s+(?:does|do)\s+.+\s+(?:mean|do)\b(?:\W+\w+){0,4}\W*$"  # what does 'foxing' mean (on this site)
    r"|what(?:'s|’s|\s+is)\s+it\s+like\b"  # what's it like to work at ...
    r"|(?:what(?:'s|’s|\s+is|\s+are)\s+the\s+)?differences?\s+between\b"  # the difference between A and B
    r"|should\s+(?:i|we)\b"  # should I buy a diesel
    r"|do\s+(?:i|we|you)\s+(?:need|have\s+to|must)\b"  # do I need a visa, do I need to book
    r"|is\s+it\s+(?:safe|worth|ok|okay|normal|legal|allowed|necessary|true|better|wise)\b"
    r"|(?:is|are)\s+(?!there\b|any\b).{1,60}?\s+(?:too\s+\w+|a\s+good\s+\w+|normal|enough|worth\s+it)\W*"
    r"(?:for\b.*)?$)",  # is 8GB of RAM enough (not: is there ..., are any ...)
    re.IGNORECASE,
)
# How something is done: no request where an errand's verb follows, or the asker's own things
_PROCEDURE = re.compile(
    _GREETING + r"(?:how\s+(?:do|does|can|could|would)\s+(?:i|you|we|one)"
    r"|(?:can|could|would|will)\s+(?:i|you|we)|is\s+it\s+(?:possible|easy|hard)\s+to|what\s+should\s+(?:i|we))\b",
    re.IGNORECASE,
)
# Verbs of an errand, which never ask for items; another verb before the asker's own things ("how do I edit my
# listing", "can I bring my dog") is one too, unless it asks for items ("can you find my family a hotel")
_ERRAND = re.compile(
    r"\s+(?:(?:please|just|also|maybe|quickly|still|actually)\s+)*"
    r"(?:(?:cancel|contact|reach|call|email|message|refund|return|transfer|register|sell|pack|park|reset|log\s+in|"
    r"sign\s+(?:in|up)|upload|complain|convert|clean|fix|install|upgrade|apply|tip|explain|describe|define|"
    r"learn|become|pay\s+for|get\s+(?:to|a\s+refund|rid|in\s+touch|back))\b"
    r"|(?!(?:get|find|see|show|give|pick|list|search|recommend|suggest|book|rent|buy|order|choose)\b)"
    r"\w+(?:\s+(?!my\b|our\b)\w+){0,4}\s+(?:my|our)\b)",  # "how do I add a tow bar to my Volvo"
    re.IGNORECASE,
)
# Where a sentence ends: "?", "!", ";", or "." after a word of three letters or more ("St. Moritz" goes on)
_SENTENCE_END = re.compile(r"[?!;]+\s*|(?<=[^\W\d_]{3})\.\s+")


def advice_question(query: str, has_filter: Callable[[str], bool] | None = None) -> str | None:
    """The opening words that make ``query`` a question for advice rather than for items, if they do.
    ``has_filter`` reads a later sentence: one that asks for items of its own ("should I go for diesel? show me
    Volvo estates under 10000") makes the whole a request."""
    m = _JUDGEMENT.match(query)
    if m is not None:
        end = _SENTENCE_END.search(query, m.end())
        rest = query[end.end() :] if end is not None else ""
        if not (rest.strip() and has_filter is not None and has_filter(rest)):
            return m.group(0).strip()
    m = _PROCEDURE.match(query)
    if m is not None and _ERRAND.match(query, m.end()):
        return m.group(0).strip()
    return None
