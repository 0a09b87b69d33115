"""What a query's wording says beyond its parts: a date range, document types, the collections it names,
expansions (acronyms it defines, the question without its question words) and a precision, balanced or
recall mode. No rule names a data set; every rule reads the query's own words."""

from __future__ import annotations

import re
from datetime import date

from waypost.route.plan_rules import (
    QUESTION_WORDS,
    QUOTED,
    REQUESTS,
    content_words,
    is_code_like,
    strip_question,
    tokens,
)

_YEAR = r"(1[89]\d\d|20\d\d)"
_MONTHS = {m: i for i, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split(), start=1)}
_MONTH_NAME = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)


def _month_end(year: int, month: int) -> str:
    nxt = date(year + month // 12, month % 12 + 1, 1)
    return date.fromordinal(nxt.toordinal() - 1).isoformat()


def date_range(query: str, today: date | None = None) -> tuple[str | None, str | None] | None:
    """A date range the query states: a year, a month, a decade, a span of years, an open end."""
    text = query.lower()
    if m := re.search(rf"\b(?:between|from)\s+{_YEAR}\s+(?:and|to|until|through|till)\s+{_YEAR}\b", text):
        a, b = sorted((int(m.group(1)), int(m.group(2))))
        return f"{a}-01-01", f"{b}-12-31"
    if m := re.search(rf"\b{_YEAR}\s*[-–]\s*{_YEAR}\b", text):
        a, b = sorted((int(m.group(1)), int(m.group(2))))
        return f"{a}-01-01", f"{b}-12-31"
    if m := re.search(r"\b(?:in|during|over)\s+the\s+(?:last|past)\s+(\d{1,2})\s+years?\b", text):
        now = today or date.today()
        return date(now.year - int(m.group(1)), now.month, min(now.day, 28)).isoformat(), None
    if m := re.search(r"(?:\b(1[89]\d|20\d)0s\b|(?:\bthe\s+|')(\d)0s\b)", text):
        if m.group(1):
            start = int(m.group(1)) * 10
        else:
            decade = int(m.group(2)) * 10
            start = 1900 + decade if decade >= 30 else 2000 + decade
        return f"{start}-01-01", f"{start + 9}-12-31"
    if m := re.search(rf"\b(after|since|from|before|until|prior\s+to)\s+{_YEAR}\b", text):
        year = int(m.group(2))
        word = m.group(1)
        if word == "after":
            return f"{year + 1}-01-01", None
        if word in ("since", "from"):
            return f"{year}-01-01", None
        if word == "until":
            return None, f"{year}-12-31"
        return None, f"{year - 1}-12-31"
    if m := re.search(rf"\b{_MONTH_NAME}\s+{_YEAR}\b", text):
        month, year = _MONTHS[m.group(1)[:3]], int(m.group(2))
        return f"{year}-{month:02d}-01", _month_end(year, month)
    if m := re.search(r"\b(1[89]\d\d|20\d\d)-(\d\d)-(\d\d)\b", text):
        return m.group(0), m.group(0)
    years = set(re.findall(rf"\b{_YEAR}\b", text))
    if len(years) == 1:
        year = years.pop()
        return f"{year}-01-01", f"{year}-12-31"
    return None


_TYPES = {
    "pdf": "pdf",
    "pdfs": "pdf",
    "slide": "slides",
    "slides": "slides",
    "slide deck": "slides",
    "slide decks": "slides",
    "presentation": "slides",
    "presentations": "slides",
    "email": "email",
    "emails": "email",
    "e-mail": "email",
    "e-mails": "email",
    "spreadsheet": "spreadsheet",
    "spreadsheets": "spreadsheet",
    "word document": "doc",
    "word documents": "doc",
    "docx": "doc",
}
_TYPE = "(" + "|".join(sorted(map(re.escape, _TYPES), key=len, reverse=True)) + ")"
_TYPE_PHRASES = [
    re.compile(rf"\b(?:in|from|among|as|only|within)\s+(?:the\s+|my\s+|our\s+|a\s+|an\s+)?{_TYPE}\b", re.IGNORECASE),
    re.compile(rf"\b{_TYPE}\s+(?:files?|documents?|attachments?|decks?)\b", re.IGNORECASE),
    re.compile(
        rf"(?:^|\b(?:the|any|all|which|find|show|list)\s+){_TYPE}\s+(?:about|on|from|that|which|mentioning|where)\b",
        re.IGNORECASE,
    ),
]


def document_types(query: str) -> list[str]:
    """Document types named as a type ("in the PDFs", "slides about X", "email from"), not as a topic."""
    found: list[str] = []
    for pattern in _TYPE_PHRASES:
        for m in pattern.finditer(query):
            kind = _TYPES[m.group(1).lower()]
            if kind not in found:
                found.append(kind)
    return found


_COLLECTION = re.compile(r"\bin\s+(?:the\s+|my\s+)?([\w-]+)\s+collection\b", re.IGNORECASE)


def collections(query: str) -> list[str]:
    return list(dict.fromkeys(m.group(1) for m in _COLLECTION.finditer(query)))


# -- expansions and mode ---------------------------------------------------------------------------

_ACRONYM_AFTER = re.compile(r"(?<![\w-])((?:[A-Za-z][\w-]*\s+){1,7}[A-Za-z][\w-]*)\s*\(([A-Z][A-Za-z0-9]{1,9})\)")
_ACRONYM_BEFORE = re.compile(r"\b([A-Z][A-Z0-9]{1,9})\s*\(((?:[A-Za-z][\w-]*\s+){1,7}[A-Za-z][\w-]*)\)")


def _initials_match(acronym: str, words: list[str]) -> bool:
    letters = [c.lower() for c in acronym if c.isalpha()]
    parts = [p for w in words for p in w.split("-") if p]
    return len(parts) >= len(letters) and [p[0].lower() for p in parts[-len(letters) :]] == letters


def acronyms(query: str) -> dict[str, str]:
    """Acronyms the query defines itself: "retrieval augmented generation (RAG)" or "RAG (retrieval ...)"."""
    found: dict[str, str] = {}
    if "(" not in query:
        return found
    for m in _ACRONYM_AFTER.finditer(query):
        words, acronym = m.group(1).split(), m.group(2)
        letters = sum(c.isalpha() for c in acronym)
        if _initials_match(acronym, words):
            found[acronym] = " ".join(words[-letters:])
    for m in _ACRONYM_BEFORE.finditer(query):
        acronym, words = m.group(1), m.group(2).split()
        if _initials_match(acronym, words):
            found[acronym] = " ".join(words)
    return found


def expansions(query: str) -> list[str]:
    out: list[str] = []
    for acronym, long_form in acronyms(query).items():
        text = re.sub(rf"\s*\({re.escape(acronym)}\)|\s*\({re.escape(long_form)}\)", "", query)
        text = re.sub(rf"\b{re.escape(acronym)}\b", long_form, text)
        if text != query:
            out.append(text)
    words = tokens(query)
    if words and (words[0].lower in QUESTION_WORDS or words[0].lower in REQUESTS or query.rstrip().endswith("?")):
        bare = strip_question(query)
        if bare and bare.lower() != query.lower().strip(" ?") and len(content_words(bare)) >= 1:
            out.append(bare)
    return list(dict.fromkeys(out))


_RECALL = re.compile(
    r"\b(?:all|every|each|list|enumerate|summari[sz]e|summary|summaries|overview|everything|comprehensive)\b",
    re.IGNORECASE,
)


# Thai, Lao, Khmer, Myanmar, kana and CJK ideographs: written without spaces between words
_UNSPACED = re.compile(r"[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u9fff]")


def word_count(query: str) -> int:
    """The query's words: split at spaces, or by the language's segmenter where its script has none."""
    if not _UNSPACED.search(query):
        return len(tokens(query))
    from waypost.text.analyzers import analyzers
    from waypost.text.language import detector

    return max(len(tokens(query)), len(analyzers()(detector().detect(query)).terms(query)))


def mode(query: str, include: list[str]) -> tuple[str, str]:
    """precision for short exact, quoted or code-like queries; recall for "all/every/list/summarize"; else
    balanced. Returns the mode and why."""
    if _RECALL.search(query):
        return "recall", "asks for everything or a summary"
    words = tokens(query)
    if include and QUOTED.search(query):
        return "precision", "quoted phrase"
    if any(is_code_like(w.text) for w in words):
        return "precision", "code-like term"
    if word_count(query) <= 3 and not (words and words[0].lower in QUESTION_WORDS):
        return "precision", "short exact query"
    return "balanced", ""
