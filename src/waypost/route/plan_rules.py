"""The text rules of the rule planner: the query's words, where a question splits into sub-queries, and the
phrases it must or must not contain (``route.plan_hints`` reads dates, document types, named collections,
expansions and the mode). No rule names a data set; every rule reads the query's own words."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

MAX_SUB_QUERIES = 4

# Words that open a question or a request; stripped from sub-queries and from the "bare" expansion.
QUESTION_WORDS = frozenset(
    "what which who whom whose when where why how".split()
    + "is are was were do does did can could should would will shall has have had may might".split()
)
AUXILIARIES = QUESTION_WORDS - frozenset("what which who whom whose when where why how".split())
PLURAL_AUXILIARIES = frozenset("are were do did have can could should would will may might".split())
REQUESTS = frozenset("compare contrast list show find tell give describe explain summarize summarise name".split())
ARTICLES = frozenset({"the", "a", "an"})
CONNECTORS = frozenset("of the de la le du da del von van der den di y & and".split())  # inside a name
FUNCTION_WORDS = (
    QUESTION_WORDS
    | REQUESTS
    | ARTICLES
    | frozenset(
        "both either neither each same and or but not of in on at to for from by with about between "
        "me us you i we they it this that these those than then also please".split()
    )
)
CUE_WORDS = frozenset("both either neither same between compare contrast versus vs difference differences".split())

_TOKEN = re.compile(r"\S+")
_EDGE_PUNCT = "\"'“”‘’()[]{}<>,.;:!?"
_CODE = re.compile(
    r"^(?:[A-Za-z_]\w*\(\)|\w+(?:\.\w+)+\(?|.*::.*|[a-z]+_[a-z0-9_]+|[a-z]+[A-Z]\w*|--?[a-z][\w-]+|#\d+|0x[0-9a-fA-F]+"
    r"|[A-Z]{2,}-\d+|\w+\.(?:py|js|ts|rs|go|java|json|md|yaml|yml|toml|sql|sh|c|h|cpp))$"
)


@dataclass(frozen=True)
class Token:
    text: str  # without edge punctuation
    raw: str
    start: int
    end: int

    @property
    def lower(self) -> str:
        return self.text.lower()

    @property
    def closes(self) -> bool:
        """The raw token ends a phrase (a comma, a question mark, a full stop after it)."""
        return self.raw[-1:] in ",;:?!." and not self.text.endswith(".")


@lru_cache(maxsize=1024)
def tokens(text: str) -> tuple[Token, ...]:
    """The words of ``text`` with their offsets, edge punctuation off (cached: the rules read a query often)."""
    out = []
    for m in _TOKEN.finditer(text):
        raw = m.group(0)
        stripped = raw.strip(_EDGE_PUNCT)
        if stripped:
            lead = raw.find(stripped)
            out.append(Token(stripped, raw, m.start() + lead, m.start() + lead + len(stripped)))
    return tuple(out)


def is_code_like(word: str) -> bool:
    return bool(_CODE.match(word))


def _entity_word(token: Token) -> bool:
    """A name-like word: capitalised, a number, or code-like; never a function word."""
    word = token.text
    if token.lower in FUNCTION_WORDS:
        return False
    return word[:1].isupper() or word[:1].isdigit() or is_code_like(word) or any(c.isupper() for c in word[1:])


def _numeric(words: Sequence[Token]) -> bool:
    return all(re.fullmatch(r"[\d.,'’s-]+", t.text) for t in words)


def content_words(text: str) -> list[str]:
    return [t.lower for t in tokens(text) if t.lower not in FUNCTION_WORDS and len(t.text) > 1]


def strip_question(text: str) -> str:
    """The question without its question words, request verbs, cue words and final punctuation."""
    words = tokens(text)
    i = 0
    openers = QUESTION_WORDS | REQUESTS | {"please", "me", "us"}
    while i < len(words) and words[i].lower in openers:
        i += 1
    if i < len(words) and words[i].lower in {"many", "much", "long", "old", "often", "far"} and i > 0:
        i += 1
    while i < len(words) and words[i].lower in AUXILIARIES:
        i += 1
    kept = [w.raw for w in words[i:] if w.lower not in {"both", "either", "neither"}]
    out = " ".join(kept).strip(" ,;:?!.")
    return re.sub(r"\s+,", ",", re.sub(r"\s{2,}", " ", out))


# -- splitting --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Coordination:
    """Conjuncts joined by and/or in ``query``: each a character span; the rest of the query is shared."""

    spans: list[tuple[int, int]]
    reason: str


def _left_conjunct(words: Sequence[Token], i: int) -> int | None:
    """Start index of the name run that ends just before ``words[i]`` (the conjunction), with a descriptor
    ("the chef") when it reaches back to an article or a comma; None if no name ends there. A lowercase
    conjunction lets a title's capitalised function words join its name ("Pick Me Up and ..."); written
    "And", the query is in title case, where capitals say nothing."""
    lower_joiner = not words[i].text[:1].isupper()
    j = i - 1
    if j < 0 or not _entity_word(words[j]) or (words[j].closes and words[j].raw[-1:] != ","):
        return None
    while j - 1 >= 0 and not words[j - 1].closes:
        prev = words[j - 1]
        if _entity_word(prev):
            j -= 1
        elif prev.lower in CONNECTORS - {"and", "the"} and j - 2 >= 0 and _entity_word(words[j - 2]):
            j -= 2
        elif lower_joiner and (inside := _title_words_before(words, j)) is not None:
            j = inside
        else:
            break
    # a descriptor of up to two lowercase words, kept only when an article or a comma closes it
    for span in (1, 2):
        k = j - span
        if k - 1 >= 0 and all(
            words[x].lower not in FUNCTION_WORDS and not _entity_word(words[x]) and not words[x].closes
            for x in range(k, j)
        ):
            if words[k - 1].lower in ARTICLES:
                return k - 1
            if words[k - 1].closes:
                return k
    if j - 1 >= 0 and words[j - 1].lower in ARTICLES:
        return j - 1
    return j


_NOT_IN_TITLES = frozenset({"and", "or", "&", "nor", "but", "vs", "versus", "than", "both", "either", "neither"})


def _title_word(word: Token) -> bool:
    """A capitalised function word, as inside a title ("Pick Me Up", "Gone With The Wind")."""
    return word.text[:1].isupper() and word.lower in FUNCTION_WORDS and word.lower not in _NOT_IN_TITLES


# a name after one of these is the object of a verb phrase, which "and" + a lowercase word continues
_AGENT_PREPOSITIONS = frozenset("by with from of to for about".split())


def _bare_descriptor(word: Token) -> bool:
    """A descriptor that may open a name with no article ("rapper Drake"); a name's particle ("van Gogh") is
    the name's own."""
    return _descriptor(word) and word.lower not in CONNECTORS


def _title_words_after(words: Sequence[Token], j: int) -> int | None:
    """Index of the name word after a run of title words following ``words[j]``, if the run is inside a name."""
    x = j + 1
    while x < len(words) and _title_word(words[x]) and not words[x - 1].closes:
        x += 1
    if x == j + 1 or x >= len(words) or words[x - 1].closes or not _entity_word(words[x]):
        return None
    return x


def _title_words_before(words: Sequence[Token], j: int) -> int | None:
    """Index of the name word before a run of title words preceding ``words[j]``, if the run is inside a name."""
    x = j - 1
    while x >= 0 and _title_word(words[x]) and not words[x].closes:
        x -= 1
    if x == j - 1 or x < 0 or words[x].closes or not _entity_word(words[x]):
        return None
    return x


def _descriptor(word: Token) -> bool:
    return not _entity_word(word) and word.lower not in FUNCTION_WORDS and not word.closes


def _right_conjunct(words: Sequence[Token], i: int) -> int | None:
    """End index (exclusive) of the name after ``words[i]``: an article, up to two descriptor words, a run
    (through a title's capitalised function words after a lowercase conjunction)."""
    lower_joiner = not words[i].text[:1].isupper()
    j = i + 1
    if j < len(words) and words[j].lower in ARTICLES:
        j += 1
    for _ in range(2):
        if j < len(words) and _descriptor(words[j]):
            j += 1
    if j >= len(words) or not _entity_word(words[j]):
        return None
    while j < len(words):
        word = words[j]
        if word.closes:
            return j + 1
        nxt = words[j + 1] if j + 1 < len(words) else None
        if nxt is not None and _entity_word(nxt):
            j += 1
        elif lower_joiner and (inside := _title_words_after(words, j)) is not None:
            j = inside
        elif (
            nxt is not None
            and nxt.lower in CONNECTORS - {"and", "the"}
            and not nxt.closes
            and j + 2 < len(words)
            and _entity_word(words[j + 2])
        ):
            j += 2
        else:
            return j + 1
    return j


def _name_words(words: Sequence[Token], start: int, end: int) -> list[Token]:
    return [w for w in words[start:end] if _entity_word(w)]


def find_entity_coordination(query: str) -> Coordination | None:
    """Names joined by and/or ("A and B", "A, B and C", "X or Y") that share the rest of the question.
    Single-word names split only when the wording asks about each ("both", "same", "compare", a yes/no
    question); lowercase noun pairs ("salt and pepper") never split here."""
    words = tokens(query)
    lowered = [w.lower for w in words]
    cue = any(w in CUE_WORDS for w in lowered) or "which of" in " ".join(lowered)
    # a yes/no question whose verb agrees with a plural subject ("Were A and B ..."), or any one with "or";
    # "Is Romeo and Juliet a tragedy?" keeps its title whole
    polar_and = bool(words) and lowered[0] in PLURAL_AUXILIARIES
    polar_or = bool(words) and lowered[0] in AUXILIARIES
    comma_choice = bool(re.search(r"^\s*(?:who|which|what|where|when)\b[^,]*,[^,]+\bor\b", query, re.IGNORECASE))
    for i, word in enumerate(words):
        if word.lower not in {"and", "or", "&"}:
            continue
        polar = polar_or if word.lower == "or" else polar_and
        if word.lower == "or" and not (cue or polar or comma_choice):
            continue
        start = _left_conjunct(words, i)
        end = _right_conjunct(words, i)
        if start is None or end is None:
            continue
        bare = 0  # descriptor words opening the right conjunct with no article: "and rapper Drake"
        while bare < 2 and i + 1 + bare < len(words) and _bare_descriptor(words[i + 1 + bare]):
            bare += 1
        if bare and not (words[start].lower in ARTICLES or _descriptor(words[start])):
            lead = start
            while lead > 0 and start - lead < bare and _descriptor(words[lead - 1]):
                lead -= 1
            if lead < start:
                start = lead  # "singer Adele and rapper Drake": each name with its own descriptor
            elif start > 0 and words[start - 1].lower in _AGENT_PREPOSITIONS:
                continue  # "directed by Steven Spielberg and stars Tom Hanks": a verb, not a second name
        spans = [(start, i)]
        # "A, B and C": earlier names separated by commas
        k = start
        while k - 1 >= 0 and words[k - 1].raw.endswith(","):
            earlier = _left_conjunct(words, k)  # words[k - 1] ends with the comma; its run ends there
            if earlier is None or earlier >= k:
                break
            spans.insert(0, (earlier, k))
            k = earlier
        spans.append((i + 1, end))
        names = [_name_words(words, a, b) for a, b in spans]
        if any(not n or _numeric(n) for n in names):
            continue
        if all(len(n) >= 2 for n in names) or cue or polar or comma_choice:
            char_spans = [(words[a].start, words[b - 1].end) for a, b in spans]
            return Coordination(char_spans, "names joined by " + word.lower)
    return None


_COMPARE = re.compile(
    r"\b(?:compare|contrast|differences?\s+between|similarit(?:y|ies)\s+between|which\s+of)\s+(?:the\s+)?"
    r"(?P<a>[^,?;]+?)\s+(?:and|with|to|or|against|versus|vs\.?)\s+(?P<b>[^,?;]+?)"
    r"(?=\s+(?:in\s+terms\s+of|for|on|when|regarding|with\s+respect\s+to|is|are|was|were|has|have|had|did|does|do)\b|[,?;.]|$)",
    re.IGNORECASE,
)
_VERSUS = re.compile(
    r"(?<![\w.+#-])(?P<a>[\w.+#-]+(?:\s+[\w.+#-]+)?)\s+(?:vs\.?|versus)\s+(?P<b>[\w.+#-]+(?:\s+[\w.+#-]+){0,2}?)"
    r"(?=\s+(?:for|on|in|when|with|regarding)\b|[,?;.]|$)",
    re.IGNORECASE,
)


def find_cue_coordination(query: str) -> Coordination | None:
    """Explicit comparisons, where common nouns may be the parts: "compare X and Y", "difference between
    X and Y", "which of X or Y", "X vs Y". In "compare the P of X and Y" the shared "the P of" goes to each."""
    m = _COMPARE.search(query) or _VERSUS.search(query)
    if m is None:
        return None
    a_start, a_end = m.span("a")
    b_span = m.span("b")
    parallel = None
    if m.re is _COMPARE:
        clause = re.search(r"[,?;.]|$", query[b_span[0] :])
        parallel = _parallel_parts(query, a_start, b_span[0] + (clause.start() if clause else 0))
        if parallel is not None:  # "compare installing with Docker and installing on Linux"
            (a_start, a_end), b_span = parallel
    a_text = query[a_start:a_end]
    of = a_text.lower().rfind(" of ")
    b_text = re.sub(r"^(?:the|a|an)\s+", "", query[b_span[0] : b_span[1]].lower())
    repeated = parallel is not None or (of >= 0 and b_text.startswith(a_text[: of + 4].lower()))
    if of >= 0 and m.re is _COMPARE and not repeated:
        a_start += of + 4  # the shared "the battery life of" stays outside the conjunct
    elif repeated and b_text != query[b_span[0] : b_span[1]].lower():
        article = re.search(r"\b(?:the|a|an)\s+$", query[:a_start], re.IGNORECASE)
        if article:  # each part has its own ("the cost of X with the cost of Y"): the first keeps it too
            a_start = article.start()
    spans = [(a_start, a_end), b_span]
    if any(not content_words(query[s:e]) or _numeric(tokens(query[s:e])) for s, e in spans):
        return None
    return Coordination(spans, "comparison")


_DETERMINERS = frozenset("the a an my your our their his her its this that these those".split())
# where a part's own words end and a qualifier shared by both parts begins ("... for families")
_SHARED_QUALIFIER = re.compile(
    r"\s+(?:in\s+terms\s+of|for|when|regarding|with\s+respect\s+to|is|are|was|were|has|have|had|did|does|do)\b",
    re.IGNORECASE,
)


def _parallel_parts(query: str, start: int, end: int) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """The two parts of ``query[start:end]`` around an "and" when both begin with the same word (after any
    determiner), as parallel parts do ("installing with Docker and installing on Linux"); the second ends
    before a qualifier both share ("... for families"). None otherwise."""
    text = query[start:end]
    for m in re.finditer(r"\s+and\s+", text):
        left = [w.lower() for w in text[: m.start()].split()]
        right = [w.lower() for w in text[m.end() :].split()]
        left_head = [w for w in left if w not in _DETERMINERS][:1]
        right_head = [w for w in right if w not in _DETERMINERS][:1]
        if len(left) > 1 and len(right) > 1 and left_head and left_head == right_head:
            b_start = start + m.end()
            words = list(re.finditer(r"\S+", query[b_start:end]))
            qualifier = _SHARED_QUALIFIER.search(query, b_start + words[1].end(), end) if len(words) > 1 else None
            phrase = qualifier.group(0).strip() if qualifier is not None else ""
            if phrase and re.search(rf"\b{re.escape(phrase)}\b", text[: m.start()], re.IGNORECASE):
                qualifier = None  # each part has its own ("meals for kids and meals for adults")
            return (start, start + m.start()), (b_start, qualifier.start() if qualifier else end)
    return None


_NEXT_QUESTION = re.compile(r"(?:\?\s+|[,;]?\s+and\s+(?=(?:what|who|when|where|which|how|why)\b))", re.IGNORECASE)


def split_clauses(query: str) -> list[str]:
    """Several questions in one ("What is X? How does it ...", "what is X and who made Y")."""
    parts = [p.strip(" ,;") for p in _NEXT_QUESTION.split(query)]
    parts = [p for p in parts if p]
    if len(parts) < 2 or any(not content_words(p) for p in parts):
        return []
    return [strip_question(p) for p in parts][:MAX_SUB_QUERIES]


_CUE_PHRASE = re.compile(
    r"\b(?:which\s+of\s+(?:the\s+|these\s+)?|(?:the\s+)?(?:differences?|similarit(?:y|ies))\s+between\s+)",
    re.IGNORECASE,
)


_DOUBLED_ARTICLE = re.compile(r"\b([Tt]he)\s+the\b")  # not "vitamin A a day"


def sub_queries(query: str) -> tuple[list[str], str]:
    """The sub-queries a multi-part question splits into, with the reason; ``([], "")`` for one question."""
    clauses = split_clauses(query)
    if clauses:
        return clauses, "several questions"
    found = find_entity_coordination(query) or find_cue_coordination(query)
    if found is None:
        return [], ""
    first, last = found.spans[0][0], found.spans[-1][1]
    prefix, suffix = query[:first], query[last:]
    out: list[str] = []
    for start, end in found.spans[:MAX_SUB_QUERIES]:
        part = query[start:end]
        shared = suffix.rstrip(" ?.!")
        if shared.strip() and part.lower().endswith(shared.strip().lower()):
            shared = ""  # "caffeine on sleep with alcohol on sleep": the part says it already
        text = _CUE_PHRASE.sub(" ", f"{prefix}{part}{shared}")
        text = _DOUBLED_ARTICLE.sub(r"\1", strip_question(text))  # "compare the" + "the 2020 results"
        if text and text.lower() not in (o.lower() for o in out):
            out.append(text)
    return (out, found.reason) if len(out) >= 2 else ([], "")


# -- constraints ------------------------------------------------------------------------------------

QUOTED = re.compile(r"[\"“]([^\"”]{2,80})[\"”]")
_PLUS = re.compile(r"(?:^|\s)\+([^\W\d_][\w.-]*)")  # "+1 nucleosome" is a number, not an operator
_MINUS = re.compile(r"(?:^|\s)-([A-Za-z][\w.]*)")
_MUST = re.compile(r"\bmust\s+(?:mention|include|contain|say)\s+(?P<x>[^,;?.\"“]+)", re.IGNORECASE)
_NOT = re.compile(
    r"\b(?:not\s+about|without|excluding|except(?:\s+for)?|but\s+not|other\s+than|apart\s+from)\s+(?P<x>[^,;?.]+)",
    re.IGNORECASE,
)
_PHRASE_STOP = frozenset("and or but that which who where when in on at for with from by to about".split())


def _phrase(text: str, limit: int = 4) -> str:
    """The head of a constraint phrase: up to ``limit`` words, articles dropped, cut at a conjunction."""
    out: list[str] = []
    for word in tokens(text):
        if word.lower in _PHRASE_STOP or len(out) >= limit or word.raw[:1] in "+-":
            break
        if word.lower in ARTICLES and not out:
            continue
        out.append(word.text)
        if word.closes:
            break
    return " ".join(out)


def is_question(query: str) -> bool:
    """A natural-language question: it opens with a question word or ends with a question mark."""
    words = tokens(query)
    return bool(words) and (words[0].lower in QUESTION_WORDS or query.rstrip().endswith("?"))


def include_exclude(query: str) -> tuple[list[str], list[str]]:
    """Text constraints. Outside a question: quoted phrases, ``+word``, ``-word``, "must mention X", and
    "not about / without / excluding / except / other than X". In a question only "must mention X", ``+word``,
    "not about X" and "excluding X": there, quotes mark a title ("the song "Dear Brother""), ``-la`` is a
    command's flag, and "without X" or "other than X" set the scene, so the passages that answer it
    mention X."""
    question = is_question(query)
    quoted = [m.span() for m in QUOTED.finditer(query)]

    def outside(m: re.Match[str]) -> bool:  # words inside a quoted title are the title's, not operators
        return not any(a <= m.start() < b for a, b in quoted)

    include = [] if question else [m.group(1).strip() for m in QUOTED.finditer(query)]
    include += [m.group(1) for m in _PLUS.finditer(query) if outside(m)]
    include += [p for m in _MUST.finditer(query) if outside(m) and (p := _phrase(m.group("x")))]
    exclude = [] if question else [m.group(1) for m in _MINUS.finditer(query) if outside(m)]
    for m in _NOT.finditer(query):
        if not outside(m) or (question and not m.group(0).lower().startswith(_HARD_EXCLUDE)):
            continue
        if p := _phrase(m.group("x")):
            exclude.append(p)
    return list(dict.fromkeys(include)), list(dict.fromkeys(exclude))


_HARD_EXCLUDE = ("not about", "excluding")  # "survive without water?": the answer mentions water
