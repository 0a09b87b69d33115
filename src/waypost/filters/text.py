"""Words of a query or a value as stems with their character spans (shared by the filter modules)."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

FUNCTION_WORDS = frozenset(
    "a an the and or of for to in on at by with from me my i we you is are be was were there that this these those "
    "which what who whose where when how do does did some any all please show find list give get want "
    "search looking up".split()
)
STOPWORDS = FUNCTION_WORDS | frozenset("produced made released rated rating ratings set filmed shot available".split())
TOPIC_MARKERS = frozenset("about involving featuring regarding concerning story stories plot theme themes".split())
# Generic English spellings folded before stemming ("films" -> "movies"); kind words are compared as stems.
DEFAULT_SYNONYMS = {
    "film": "movie",
    "films": "movies",
    "kid": "child",
    "kids": "children",
    "childrens": "children",
    "series": "tv",
    "shows": "tv",
    "show": "tv",
    "programme": "tv",
    "programmes": "tv",
    "docs": "documentaries",
    "scifi": "sci fi",
    "romance": "romantic",
    "comedy": "comedies",
    "&": "and",
}
# Words naming a kind of item; they may accompany a value only if they agree with it.
DEFAULT_KIND_WORDS = frozenset({"movi", "tv"})
WORD = re.compile(r"[\w]+(?:'[\w]+)?|&", re.UNICODE)


@lru_cache(maxsize=1)
def _stemmer() -> object:
    import Stemmer

    return Stemmer.Stemmer("english")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    return str(_stemmer().stemWord(word))  # type: ignore[attr-defined]


def fold(text: str) -> str:
    """Lower case without accents: "García" and "garcia" are one word."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


# Stems of words that grant a permission: one of them stands for any other ("pet friendly", "Pets allowed")
PERMISSION_STEMS = frozenset({"allow", "permit", "friend", "welcom", "accept", "ok", "okay"})


def permission_folded(stems: list[str]) -> list[str]:
    """``stems`` with every word of permission as "allow"."""
    return ["allow" if s in PERMISSION_STEMS else s for s in stems]


@lru_cache(maxsize=1)
def stop_stems() -> frozenset[str]:
    """Stopwords and topic markers, as stems and as words (comparable with token norms)."""
    return frozenset({stem(w) for w in STOPWORDS | TOPIC_MARKERS} | STOPWORDS | TOPIC_MARKERS)


@dataclass(frozen=True)
class Token:
    norm: str  # the stem
    start: int
    end: int
    capital: bool = False  # written with a capital first letter (a proper noun, maybe)
    word: str = ""  # the folded word before stemming (people's names are compared unstemmed)


def tokenize(text: str, synonyms: dict[str, str]) -> list[Token]:
    tokens: list[Token] = []
    for m in WORD.finditer(text):
        raw = m.group(0)
        word = fold(raw).removesuffix("'s").replace("'", "")
        for part in synonyms.get(word, word).split():
            tokens.append(Token(stem(part), m.start(), m.end(), raw[:1].isupper(), part))
    return tokens


def stems(text: str, synonyms: dict[str, str]) -> list[str]:
    """The stems of ``tokenize`` without spans (fast, for indexing many values)."""
    return [stem(w) for w in folded_words(text, synonyms)]


def folded_words(text: str, synonyms: dict[str, str]) -> list[str]:
    """The words ``stems`` would stem, folded but unstemmed (the ``word`` of ``tokenize``'s tokens)."""
    words: list[str] = []
    for raw in WORD.findall(fold(text)):
        word = raw.removesuffix("'s").replace("'", "")
        words.extend(synonyms.get(word, word).split())
    return words


def stem_word_lists(split: list[list[str]]) -> list[list[str]]:
    """The stems of lists of ``folded_words``, each distinct word stemmed once in one batch."""
    distinct = sorted({w for words in split for w in words})
    stemmed = dict(zip(distinct, _stemmer().stemWords(distinct), strict=True))  # type: ignore[attr-defined]
    return [[stemmed[w] for w in words] for words in split]


def name_words(name: str) -> list[str]:
    """A field name's words: ``imdb_rating`` -> imdb, rating; ``publishedAt`` -> published, at."""
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", name)
    return [w for w in re.split(r"[_\W\d]+", spaced.lower()) if w]
