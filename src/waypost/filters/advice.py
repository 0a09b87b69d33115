"""Questions that ask for advice, a definition or an opinion rather than for items ("how do I cancel booking
48213?", "what does 'foxing' mean?", "is it safe to hike alone in the Dolomites?", "do I need winter tyres in
Munich?"): the values they name are their topic, not a filter. In a collection that mixes items with help pages,
such a filter would hide the pages that answer them. Read from the question's opening words only, which are
English; when unsure, the question is read as a request, as before this rule.

Two kinds of opening. One asks for a judgement or a meaning ("should I buy a diesel?", "is it safe to buy ...",
"do I need to book ...", "what does X mean", "is 8GB enough"): a question of one sentence that opens so is no
request ("should I go for diesel? show me Volvo estates under 10000" is one, in its second sentence). The other
asks how something is done ("how do I", "can you", "is it possible to", "what should I"): it is no request when
the verb after it says an errand rather than looking for items ("how do I cancel ...", "can I bring my dog
...", "can you explain ...") or acts on the asker's own things or a way somewhere ("how do I see my booking?",
"how do I get to the hotel?"). Any other verb reads as a request ("how do I find a Kia under 10000 euros?", "can
you display hotels in Rome?", "can you narrow it down to ...", "what should I watch?")."""

from __future__ import annotations

import re

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
_ERRAND = re.compile(
    r"\s+(?:(?:please|just|also|maybe|quickly|still|actually)\s+)*"
    r"(?:(?:cancel|change|edit|update|delete|remove|contact|reach|call|email|message|pay|return|refund|transfer|"
    r"register|sell|bring|pack|park|use|reset|log|sign|upload|add|save|share|report|complain|convert|clean|fix|"
    r"install|upgrade|apply|tip|prepare|cook|make|store|ship|explain|describe|define|know|learn|become|"
    r"get\s+(?:to|a\s+refund|rid|in\s+touch|back))\b"
    r"|\w+\s+(?:my|our)\b)",  # "how do I see my booking", "how can I list my Hyundai"
    re.IGNORECASE,
)
_NEXT_SENTENCE = re.compile(r"[?.!;]\s*\w")


def advice_question(query: str) -> str | None:
    """The opening words that make ``query`` a question for advice rather than for items, if they do."""
    m = _JUDGEMENT.match(query)
    if m is not None and not _NEXT_SENTENCE.search(query, m.end()):
        return m.group(0).strip()
    m = _PROCEDURE.match(query)
    if m is not None and _ERRAND.match(query, m.end()):
        return m.group(0).strip()
    return None
