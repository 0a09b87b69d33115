"""Questions that ask for advice, a definition or an opinion rather than for items ("how do I cancel booking
48213?", "what does 'foxing' mean?", "is it safe to hike alone in the Dolomites?", "do I need winter tyres in
Munich?"): the values they name are their topic, not a filter. In a collection that mixes items with help pages,
such a filter would hide the pages that answer them. Read from the question's opening words only, which are
English; a request asked as a question ("is there a diesel under 10k?", "can I get a room under 100?", "how many
hotels have a pool?", "how do I find a hotel in Rome?") is still a request."""

from __future__ import annotations

import re

# Words of asking for items: a question with one of them anywhere is a request ("how do I find a hotel under 100
# in Rome?", "can you help me find ...", "can you tell me which hotels ...", "is it possible to get ...")
_ASKING = re.compile(
    r"\b(?:get|find|see|show|book|rent|buy|order|hire|search|browse|list|recommend|suggest|watch|stream|look|"
    r"view|compare|pick|choose|pull|which|available)\b",
    re.IGNORECASE,
)
_ADVICE = re.compile(
    r"^\W*(?:(?:hi|hey|hello|ok|okay|so|quick\s+question)\W+)*(?:"
    r"how\s+(?:do|does|can|could|should|would)\s+(?:i|you|we|one|they)\b"  # how do I cancel ...
    r"|how\s+(?:long|early|late|soon|often)\s+(?:do|does|should|will|would|can)\b"  # how long does ... take
    r"|what\s+(?:does|do)\s+.+\s+(?:mean|do)\b(?:\W+\w+){0,4}\W*$"  # what does 'foxing' mean (on this site)
    r"|what(?:'s|’s|\s+is)\s+it\s+like\b"  # what's it like to work at ...
    r"|(?:what(?:'s|’s|\s+is|\s+are)\s+the\s+)?differences?\s+between\b"  # the difference between A and B
    r"|(?:what\s+)?should\s+(?:i|we)\b"  # should I put Python first, what should I pack
    r"|do\s+(?:i|we|you)\s+(?:need|have\s+to|must)\b"  # do I need a visa
    r"|is\s+it\s+(?:safe|worth|ok|okay|normal|legal|allowed|possible|necessary|true|hard|easy|better|wise)\b"
    r"|(?:is|are)\s+(?!there\b|any\b).{1,60}?\s+(?:too\s+\w+|a\s+good\s+\w+|normal|enough|worth\s+it)\W*"
    r"(?:for\b.*)?$"  # is 8GB of RAM enough (not: is there ..., are any ...)
    r"|can\s+(?:i|you|we)\s+\w+"  # can I bring my dog
    r")",
    re.IGNORECASE,
)


def advice_question(query: str) -> str | None:
    """The opening words that make ``query`` a question for advice rather than for items, if they do: no
    word of asking for items may follow them."""
    m = _ADVICE.match(query)
    if m is None or _ASKING.search(query):
        return None
    return m.group(0).strip()
