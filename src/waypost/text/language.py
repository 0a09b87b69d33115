"""Language identification for documents, chunks and queries, offline.

Scripts that belong to one language (Thai, Hangul, kana) are decided by the script alone; everything
else goes to py3langid (a naive-Bayes model over byte n-grams, 97 languages, bundled with the
package). Measured on these machines: 0.5 ms per 1,500-character abstract and 0.08 ms p95 per query,
against 1.5-5 ms and 2-4 ms for lingua, which also read 1% of scifact's English abstracts as Latin.
Queries are short, so they are identified among the languages their collection holds.
"""

from __future__ import annotations

import threading
import unicodedata
from collections.abc import Iterable
from typing import Any

UNDETERMINED = "und"
_SAMPLE = 1000  # characters looked at; more costs time and changes nothing on real text
_ALIASES = {"wuu": "zh", "yue": "zh", "nb": "no", "nn": "no", "zh-hant": "zh", "zh-hans": "zh"}


def _script_counts(text: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for ch in text:
        o = ord(ch)
        if 0x0E00 <= o <= 0x0E7F:
            key = "thai"
        elif 0x3040 <= o <= 0x30FF or 0x31F0 <= o <= 0x31FF:
            key = "kana"
        elif 0xAC00 <= o <= 0xD7AF or 0x1100 <= o <= 0x11FF:
            key = "hangul"
        elif 0x3400 <= o <= 0x4DBF or 0x4E00 <= o <= 0x9FFF or 0xF900 <= o <= 0xFAFF:
            key = "han"
        elif ch.isalpha():
            key = "other"
        else:
            continue
        counts[key] = counts.get(key, 0) + 1
    return counts


def script_language(text: str) -> str | None:
    """The language a text's script implies on its own, if it implies one."""
    counts = _script_counts(text)
    letters = sum(counts.values())
    if not letters:
        return UNDETERMINED
    if counts.get("thai", 0) * 2 > letters:
        return "th"
    if counts.get("hangul", 0) * 2 > letters:
        return "ko"
    if counts.get("kana", 0) and (counts.get("kana", 0) + counts.get("han", 0)) * 2 > letters:
        return "ja"
    if counts.get("han", 0) * 2 > letters:
        return "zh"
    return None


class LanguageDetector:
    """``detect(text, among=None)``: an ISO 639-1 code, or ``"und"`` for text without letters."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._models: dict[frozenset[str], Any] = {}
        self._labels: frozenset[str] | None = None

    def _model(self, among: frozenset[str]) -> Any:
        model = self._models.get(among)
        if model is None:
            with self._lock:
                model = self._models.get(among)
                if model is None:
                    from py3langid.langid import MODEL_FILE, LanguageIdentifier

                    model = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
                    if self._labels is None:
                        self._labels = frozenset(model.nb_classes)
                    if among:
                        model.set_languages(sorted(among))
                    self._models[among] = model
        return model

    def labels(self) -> frozenset[str]:
        self._model(frozenset())
        assert self._labels is not None
        return self._labels

    def detect(self, text: str, among: Iterable[str] | None = None, prior: dict[str, float] | None = None) -> str:
        """The likeliest language of ``text``; with ``among``, one of those; with ``prior`` (shares of a
        collection's chunks), weighted by it, so a short query in a mostly English collection with a
        few Welsh paragraphs stays English unless it really reads as Welsh."""
        sample = unicodedata.normalize("NFKC", text[:_SAMPLE])
        by_script = script_language(sample)
        choices = frozenset(among) if among is not None else frozenset()
        if by_script is not None:
            return by_script
        if len(choices) == 1:
            return next(iter(choices))
        usable = frozenset(c for c in choices if c in self.labels())
        if choices and len(usable) < 2:
            return next(iter(sorted(usable or choices)))
        model = self._model(usable)
        if prior:
            ranked = model.rank(sample)
            lang = max(ranked, key=lambda lp: float(lp[1]) * prior.get(str(lp[0]), 0.0))[0]
        else:
            lang, _confidence = model.classify(sample)
        return _ALIASES.get(str(lang), str(lang))


_default: LanguageDetector | None = None
_default_lock = threading.Lock()


def detector() -> LanguageDetector:
    """One shared detector per process (its model loads once, on first use)."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = LanguageDetector()
    return _default
