"""The LLM-free answerer: the sentences of the retrieved passages that best match the question."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from waypost.answer.model import NOT_SUPPORTED, Citation
from waypost.ingest.chunker import split_sentences
from waypost.types import Hit

_WORD = re.compile(r"\w+", re.UNICODE)
_STOP = frozenset(
    "a an the and or of for to in on at by with from is are was were be been being which what who whom whose "
    "where when why how do does did that this these those it its as than then there their they he she his her "
    "i you we me my our your not no yes both either have has had any".split()
)


def _stems(text: str, language: str = "en") -> set[str]:
    """Content words as stems: English as always; other languages through their analyzer (stemmers,
    stopwords, word segmentation for Thai, Chinese and Japanese)."""
    if language not in ("en", "", "und"):
        from waypost.text.analyzers import analyzers

        return set(analyzers()(language).terms(text))
    from waypost.filters.extract import _stem

    return {_stem(w) for w in (m.group(0).lower() for m in _WORD.finditer(text)) if w not in _STOP}


def question_language(question: str, hits: list[Hit]) -> str:
    """The question's language, among the languages of the passages it is answered from."""
    from waypost.text.language import detector

    counts: dict[str, int] = {}
    for h in hits:
        if h.chunk.language:
            counts[h.chunk.language] = counts.get(h.chunk.language, 0) + 1
    if not counts:
        return detector().detect(question)
    total = sum(counts.values())
    return detector().detect(question, among=counts, prior={k: n / total for k, n in counts.items()})


@dataclass(frozen=True)
class ScoredSentence:
    hit_rank: int
    hit: Hit
    start: int  # offsets in the document
    end: int
    text: str
    score: float


# Words of a request for items, not what it asks about ("can I get ...", "please show me ...")
_REQUEST_STEMS = frozenset(_stems("can could would get give show find want need looking recommend suggest please list"))
_FACT_WORDS = frozenset("who whom whose when where why how".split())


def _asks_a_fact(text: str) -> bool:
    """A question for a fact ("who designed ...?", "when was ... recalled?"), not for matching items ("which
    bikes ...?", "any bikes ...?", "do you have ...?")."""
    words = text.split()
    return bool(words) and words[0].lower().strip("\"'(") in _FACT_WORDS


class ExtractiveAnswerer:
    def __init__(
        self, max_sentences: int = 3, max_per_passage: int = 2, min_relative: float = 0.5, min_coverage: float = 0.5
    ) -> None:
        self.max_sentences = max_sentences
        self.max_per_passage = max_per_passage
        self.min_relative = min_relative
        self.min_coverage = min_coverage

    def score(self, question: str, hits: list[Hit]) -> list[ScoredSentence]:
        language = question_language(question, hits)
        wanted = _stems(question, language)
        scored: list[ScoredSentence] = []
        for rank, hit in enumerate(hits):
            text = hit.chunk.text
            for span in split_sentences(text):
                sentence = text[span.start : span.end]
                overlap = len(wanted & _stems(sentence, language)) / math.sqrt(max(1, len(wanted)))
                if overlap <= 0:
                    continue  # a sentence sharing no word with the question supports nothing
                start = hit.chunk.start + span.start
                score = overlap + 0.5 / (1 + rank)  # passage rank breaks ties
                scored.append(ScoredSentence(rank, hit, start, start + len(sentence), sentence, score))
        return sorted(scored, key=lambda s: -s.score)

    def supports(self, question: str, hits: list[Hit], unfiltered: str | None = None) -> bool:
        """The passages of the best sentences, together, must cover more than half of the question's
        content words (a multi-hop answer spreads them over several passages). ``unfiltered``: the words
        metadata filters did not take, when the hits met those filters. The words they took ("vegetarian",
        "Indian", "under 30 minutes") count as covered; a request may leave one other word (the item's name,
        "bikes") unsupported by the text, a question for a fact ("who designed ...?") none."""
        language = question_language(question, hits)
        wanted = _stems(question, language)
        text = _stems(" ".join(f"{h.provenance.document_title} {h.chunk.text}" for h in hits), language)
        covered = wanted & text
        if unfiltered is not None:  # the hits meet what the filters took ("electric bikes under $2,000")
            left = _stems(unfiltered, language) - _REQUEST_STEMS  # "can I get ...", "show me ..."
            covered |= wanted - left
            unsupported = left - text
            if (_asks_a_fact(question) and unsupported) or len(unsupported) > 1:  # "who designed ...?" needs the
                return False  # text; a request may leave one word to the filters, the item's name ("bikes")
        return len(covered) > self.min_coverage * len(wanted)

    def answer(self, question: str, hits: list[Hit], unfiltered: str | None = None) -> tuple[str, list[Citation], bool]:
        """``unfiltered``: what is left of the question once metadata filters took their words, when the hits
        met such filters ("vegetarian Indian dishes under 30 minutes" leaves "dishes"). A catalogue request
        whose hits share no word with it is answered by the first sentence of each of the best hits."""
        ranked = self.score(question, hits)
        if not ranked and unfiltered is not None:
            ranked = [
                ScoredSentence(rank, hit, hit.chunk.start + span.start, hit.chunk.start + span.end,
                               hit.chunk.text[span.start : span.end], 1.0)
                for rank, hit in enumerate(hits[: self.max_sentences])
                for span in split_sentences(hit.chunk.text)[:1]
            ]  # fmt: skip
        if not ranked or not self.supports(question, [s.hit for s in ranked[: self.max_sentences]], unfiltered):
            return NOT_SUPPORTED, [], False
        return self._cite(ranked)

    def _cite(self, ranked: list[ScoredSentence]) -> tuple[str, list[Citation], bool]:
        floor = ranked[0].score * self.min_relative
        chosen: list[ScoredSentence] = []
        per_passage: dict[str, int] = {}
        # Round 1 takes the best sentence of each passage (multi-hop answers span passages); round 2 fills up.
        for limit in range(1, self.max_per_passage + 1):
            for s in ranked:
                if len(chosen) >= self.max_sentences or s.score < floor:
                    break
                if s in chosen or per_passage.get(s.hit.chunk.id, 0) >= limit:
                    continue
                if any(" ".join(s.text.split()) == " ".join(c.text.split()) for c in chosen):
                    continue  # the same sentence in two documents is said once
                per_passage[s.hit.chunk.id] = per_passage.get(s.hit.chunk.id, 0) + 1
                chosen.append(s)
        chosen.sort(key=lambda s: (s.hit_rank, s.start))
        citations: list[Citation] = []
        parts: list[str] = []
        for i, s in enumerate(chosen, start=1):
            citations.append(Citation(i, s.hit.document_id, s.hit.provenance.document_title, s.start, s.end, s.text))
            parts.append(f"{s.text} [{i}]")
        return " ".join(parts), citations, True
