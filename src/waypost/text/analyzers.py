"""Analyzers: text to index terms, one per language.

Every analyzer starts with Unicode normalization (NFKC, which also folds full-width forms, then case
folding). Then:
- English keeps the analysis waypost has always used (word tokens of two or more characters, the
  bm25s English stopwords, the Snowball English stemmer), so English scores do not move;
- every other language PyStemmer covers: word tokens (letters with their combining marks, so Hindi or
  Thai vowel signs do not split words), stopwords from stopwords-iso where it has a list, and that
  language's Snowball stemmer;
- scripts without spaces are segmented into words: Thai with pythainlp (newmm, bundled dictionary),
  Chinese with jieba, Japanese with fugashi and unidic-lite;
- any other language, and text whose language is unknown: word tokens only.
No rule here names a corpus, a field or a word; the same code serves languages no test set has.
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from collections.abc import Callable
from functools import cache
from typing import Any, Protocol

import regex

SNOWBALL = {
    "ar": "arabic",
    "hy": "armenian",
    "eu": "basque",
    "ca": "catalan",
    "cs": "czech",
    "da": "danish",
    "nl": "dutch",
    "en": "english",
    "eo": "esperanto",
    "et": "estonian",
    "fi": "finnish",
    "fr": "french",
    "de": "german",
    "el": "greek",
    "hi": "hindi",
    "hu": "hungarian",
    "id": "indonesian",
    "ga": "irish",
    "it": "italian",
    "lt": "lithuanian",
    "ne": "nepali",
    "no": "norwegian",
    "fa": "persian",
    "pl": "polish",
    "pt": "portuguese",
    "ro": "romanian",
    "ru": "russian",
    "sr": "serbian",
    "st": "sesotho",
    "es": "spanish",
    "sv": "swedish",
    "ta": "tamil",
    "tr": "turkish",
    "yi": "yiddish",
}
SEGMENTED = ("th", "zh", "ja")

_WORD = regex.compile(r"[\p{L}\p{N}][\p{L}\p{M}\p{N}\p{Pc}]*")
_ENGLISH = re.compile(r"(?u)\b\w\w+\b")  # the stdlib's \w, exactly as bm25s tokenizes
_HAS_WORD = regex.compile(r"[\p{L}\p{N}]")


def normalize(text: str) -> str:
    """NFKC (compatibility and width folding), then case folding."""
    return unicodedata.normalize("NFKC", text).casefold()


class Analyzer(Protocol):
    language: str

    def terms(self, text: str) -> list[str]: ...


STEM_CACHE_WORDS = 500_000  # words whose stems stay cached per language; past it the cache starts over


class _Stemming:
    """Snowball stems, cached per word (the stemmer is not thread-safe; the cache makes that rare). The
    cache is bounded: a stream of new words (ids, typos, other scripts) never grows it without end."""

    def __init__(self, algorithm: str) -> None:
        import Stemmer

        self._stemmer = Stemmer.Stemmer(algorithm)
        self._cache: dict[str, str] = {}
        self._lock = threading.Lock()

    def __call__(self, words: list[str]) -> list[str]:
        cache = self._cache
        missing = [w for w in set(words) if w not in cache]
        if not missing:
            return list(map(cache.__getitem__, words))
        with self._lock:
            fresh = dict(zip(missing, self._stemmer.stemWords(missing), strict=True))
            if len(self._cache) + len(fresh) > STEM_CACHE_WORDS:
                self._cache = {}  # a new dict, not cleared: callers reading the old one keep it whole
            self._cache.update(fresh)
        return [fresh[w] if w in fresh else cache[w] for w in words]


@cache
def stopwords(language: str) -> frozenset[str]:
    """A language's stopwords: bm25s's list for English (as always), stopwords-iso for the others."""
    if language == "en":
        from bm25s.stopwords import STOPWORDS_EN

        return frozenset(STOPWORDS_EN)
    try:
        import stopwordsiso
    except ImportError:  # pragma: no cover - a declared dependency; without it, no stopwords (said once)
        logging.getLogger("waypost.text").warning("stopwordsiso is not installed: no %s stopwords", language)
        return frozenset()
    if not stopwordsiso.has_lang(language):
        return frozenset()
    return frozenset(normalize(w) for w in stopwordsiso.stopwords(language))


class EnglishAnalyzer:
    language = "en"

    def __init__(self) -> None:
        self._stop = stopwords("en")
        self._stem = _Stemming("english")

    def terms(self, text: str) -> list[str]:
        stop = self._stop
        return self._stem([w for w in _ENGLISH.findall(normalize(text)) if w not in stop])


class WordAnalyzer:
    """Languages written with spaces: word tokens, stopwords, and a Snowball stemmer if there is one."""

    def __init__(self, language: str) -> None:
        self.language = language
        self._stop = stopwords(language)
        algorithm = SNOWBALL.get(language)
        self._stem: Callable[[list[str]], list[str]] | None = _Stemming(algorithm) if algorithm else None

    def terms(self, text: str) -> list[str]:
        stop = self._stop
        words = [w for w in _WORD.findall(normalize(text)) if len(w) > 1 and w not in stop]
        return self._stem(words) if self._stem is not None else words


class SegmentingAnalyzer:
    """Scripts without spaces between words: a dictionary segmenter finds the words.

    No stopword list: the segmenters emit function words as words of their own, which idf already
    discounts, and the stopwords-iso lists for these languages hold content words (Chinese 分, points)."""

    def __init__(self, language: str, segment: Callable[[str], list[str]]) -> None:
        self.language = language
        self._segment = segment

    def terms(self, text: str) -> list[str]:
        out = []
        for token in self._segment(normalize(text)):
            token = token.strip()
            if token and _HAS_WORD.search(token):
                out.append(token)
        return out


def _thai() -> Callable[[str], list[str]]:
    from pythainlp.tokenize import word_tokenize

    def segment(text: str) -> list[str]:
        return list(word_tokenize(text, engine="newmm", keep_whitespace=False))

    return segment


def _chinese() -> Callable[[str], list[str]]:
    import jieba

    jieba.setLogLevel(logging.WARNING)
    tokenizer = jieba.Tokenizer()
    lock = threading.Lock()
    with lock:
        tokenizer.initialize()  # builds its prefix dictionary once (about 0.5 s)

    def segment(text: str) -> list[str]:
        return list(tokenizer.lcut(text))

    return segment


def _japanese() -> Callable[[str], list[str]]:
    import fugashi

    tagger: Any = fugashi.Tagger()
    lock = threading.Lock()

    def segment(text: str) -> list[str]:
        with lock:  # MeCab taggers are not thread-safe
            return [word.surface for word in tagger(text)]

    return segment


_SEGMENTERS: dict[str, Callable[[], Callable[[str], list[str]]]] = {
    "th": _thai,
    "zh": _chinese,
    "ja": _japanese,
}


class Analyzers:
    """The analyzer of each language, made on first use and shared."""

    def __init__(self) -> None:
        self._made: dict[str, Analyzer] = {}
        self._lock = threading.Lock()

    def __call__(self, language: str) -> Analyzer:
        from waypost.text.language import canonical_language

        language = canonical_language(language) or "und"
        found = self._made.get(language)
        if found is None:
            with self._lock:
                found = self._made.get(language)
                if found is None:
                    found = self._make(language)
                    self._made[language] = found
        return found

    @staticmethod
    def _make(language: str) -> Analyzer:
        if language == "en":
            return EnglishAnalyzer()
        if language in _SEGMENTERS:
            return SegmentingAnalyzer(language, _SEGMENTERS[language]())
        return WordAnalyzer(language)


_shared: Analyzers | None = None
_shared_lock = threading.Lock()


def analyzers() -> Analyzers:
    """The process-wide analyzers (segmenters and stemmer caches load once)."""
    global _shared
    if _shared is None:
        with _shared_lock:
            if _shared is None:
                _shared = Analyzers()
    return _shared
