"""Questions that ask for advice, a definition or an opinion rather than for items ("how do I cancel booking
48213?", "what does 'foxing' mean?", "is it safe to hike alone in the Dolomites?", "do I need winter tyres in
Munich?"): the values they name are their topic, not a filter. In a collection that mixes items with help pages,
such a filter would hide the pages that answer them. Read from the question's opening words only, which are
English; a request asked as a question ("is there a diesel under 10k?", "can I get a room under 100?", "how many
hotels have a pool?") is still a request."""

from __future__ import annotations

import re

# verbs of asking for items after "can I" / "can you": the question is a request ("can you show me ...")
_ASKING = (
    "get|find|see|book|rent|buy|have|order|hire|search|filter|browse|show|list|recommend|suggest|give|look|"
    "compare|sort|pick|choose|view|check\\s+out"
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
    r"|(?:is|are)\s+.{1,60}?\s+(?:too\s+\w+|a\s+good\s+\w+|normal|enough|worth\s+it)\W*(?:for\b.*)?$"  # is 8GB enough
    rf"|can\s+(?:i|you|we)\s+(?!(?:{_ASKING})\b)\w+"  # can I bring my dog (not: can I get ...)
    r")",
    re.IGNORECASE,
)


def advice_question(query: str) -> str | None:
    """The opening words that make ``query`` a question for advice rather than for items, if they do."""
    m = _ADVICE.match(query)
    return m.group(0).strip() if m else None
