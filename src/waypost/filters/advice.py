"""Questions that ask for advice, a definition or an opinion rather than for items ("how do I cancel booking
48213?", "what does 'foxing' mean?", "is it safe to hike alone in the Dolomites?", "do I need winter tyres in
Munich?"): the values they name are their topic, not a filter. In a collection that mixes items with help pages,
such a filter would hide the pages that answer them. Read from the question's opening words only, which are
English.

Two kinds of opening. One asks how or whether something can be done ("how do I", "can you", "is it
possible to", "what should I"): followed right away by a word of asking for items ("how do I find a Kia under
10000 euros?", "can you show me ...", "can I have diesel estates only?", "what should I watch?"), it is a
request; followed by that word and the asker's own things or a place to go ("how do I see my booking?", "how do
I get to the hotel?"), or by another verb ("what should I pack?"), it is not. The other asks for a judgement or
a meaning ("should I buy a diesel?", "is it safe to buy ...", "do I need to book ...", "what does X mean", "is
8GB enough"), and is never a request. A request asked as a question ("is there a diesel under 10k?", "how many
hotels have a pool?", "which estates have a tow bar?") opens with neither."""

from __future__ import annotations

import re

_GREETING = r"^\W*(?:(?:hi|hey|hello|ok|okay|so|quick\s+question|please)\W+)*"
# How or whether something can be done: a request when a word of asking for items follows
_PROCEDURE = re.compile(
    _GREETING + r"(?:how\s+(?:do|does|can|could|would)\s+(?:i|you|we|one)"
    r"|(?:can|could|would|will)\s+(?:i|you|we)|is\s+it\s+possible\s+to|what\s+should\s+(?:i|we))\b",
    re.IGNORECASE,
)
# Words of asking for items, right after the opening (a few softeners may come between)
_ASKING = re.compile(
    r"\s+(?:(?:please|just|only|also|maybe|quickly|help\s+me(?:\s+to)?|go\s+ahead\s+and)\s+)*"
    r"(?:get(?!\s+to\b)|find|see|show|book|rent|buy|have|order|hire|search|filter|browse|list|recommend|"
    r"suggest|give|look|compare|sort|pick|choose|view|check\s+out|watch|stream|read|pull\s+up|limit|narrow|"
    r"tell\s+me\s+which)\b(?!\s+(?:my|our|your|there|here|it|them|him|her|back|rid|in\s+touch|around|into)\b)",
    re.IGNORECASE,
)
# A judgement, a meaning or a comparison of kinds: never a request
_JUDGEMENT = re.compile(
    _GREETING + r"(?:how\s+(?:long|early|late|soon|often)\s+(?:do|does|should|will|would|can)\b"  # how long does
    r"|what\s+(?:does|do)\s+.+\s+(?:mean|do)\b(?:\W+\w+){0,4}\W*$"  # what does 'foxing' mean (on this site)
    r"|what(?:'s|’s|\s+is)\s+it\s+like\b"  # what's it like to work at ...
    r"|(?:what(?:'s|’s|\s+is|\s+are)\s+the\s+)?differences?\s+between\b"  # the difference between A and B
    r"|should\s+(?:i|we)\b"  # should I buy a diesel
    r"|do\s+(?:i|we|you)\s+(?:need|have\s+to|must)\b"  # do I need a visa, do I need to book
    r"|is\s+it\s+(?:safe|worth|ok|okay|normal|legal|allowed|necessary|true|hard|easy|better|wise)\b"
    r"|(?:is|are)\s+(?!there\b|any\b).{1,60}?\s+(?:too\s+\w+|a\s+good\s+\w+|normal|enough|worth\s+it)\W*"
    r"(?:for\b.*)?$)",  # is 8GB of RAM enough (not: is there ..., are any ...)
    re.IGNORECASE,
)


def advice_question(query: str) -> str | None:
    """The opening words that make ``query`` a question for advice rather than for items, if they do."""
    m = _JUDGEMENT.match(query)
    if m is not None:
        return m.group(0).strip()
    m = _PROCEDURE.match(query)
    if m is not None and not _ASKING.match(query, m.end()):
        return m.group(0).strip()
    return None
