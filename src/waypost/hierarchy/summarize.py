"""Summarizers behind one protocol: extractive (no LLM, the default) and LLM-written (cached by input hash)."""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from waypost.ingest.chunker import count_tokens, split_sentences
from waypost.llm.accounting import PriceTable, QueryMetadata
from waypost.llm.base import GenerationParams, LLMError, LLMProvider
from waypost.text.analyzers import analyzers


class Summarizer(Protocol):
    """Condenses the texts of a cluster into one text of at most ``budget`` tokens."""

    @property
    def name(self) -> str: ...  # recorded with every summary; a change of summarizer is a rebuild

    @property
    def abstractive(self) -> bool: ...  # True: the summary is new text (its embedding says more than a centroid)

    def summarize(self, texts: Sequence[str], budget: int) -> str: ...


def input_hash(texts: Sequence[str], budget: int, name: str) -> str:
    digest = hashlib.sha256(f"{name}\x00{budget}".encode())
    for text in texts:
        digest.update(b"\x00" + text.encode("utf-8"))
    return digest.hexdigest()[:32]


class ExtractiveSummarizer:
    """Picks the most central sentences that say something new (MMR over TF-IDF vectors), in reading order.

    Centrality is a sentence's similarity to the cluster's whole text; redundancy is its similarity to
    sentences already picked. Lexical vectors keep it fast and language-aware (the collection's analyzer)."""

    name = "extractive-mmr"
    abstractive = False

    def __init__(self, language: str = "en", diversity: float = 0.3, max_sentences: int = 400) -> None:
        self.language = language
        self.diversity = diversity  # weight of redundancy against centrality (MMR lambda = 1 - diversity)
        self.max_sentences = max_sentences  # longer inputs are sampled evenly: this runs on every node

    def summarize(self, texts: Sequence[str], budget: int) -> str:
        sentences = [text[s.start : s.end] for text in texts for s in split_sentences(text)]
        sentences = [" ".join(s.split()) for s in sentences if any(ch.isalnum() for ch in s)]
        if not sentences:
            return ""
        if len(sentences) > self.max_sentences:
            step = len(sentences) / self.max_sentences
            sentences = [sentences[int(i * step)] for i in range(self.max_sentences)]
        costs = [count_tokens(s) for s in sentences]
        if sum(costs) <= budget:
            return " ".join(sentences)
        vectors = self._vectors(sentences)
        centre = vectors.sum(axis=0)
        norm = float(np.linalg.norm(centre))
        centrality = vectors @ (centre / norm) if norm else np.zeros(len(sentences))
        chosen: list[int] = []
        used = 0
        redundancy = np.zeros(len(sentences))
        available = np.ones(len(sentences), dtype=bool)
        while available.any():
            score = (1 - self.diversity) * centrality - self.diversity * redundancy
            score[~available] = -np.inf
            best = int(np.argmax(score))
            available[best] = False
            if used + costs[best] > budget:
                if used == 0:  # the best sentence alone is too long: cut it to the budget
                    return _cut(sentences[best], budget)
                continue
            chosen.append(best)
            used += costs[best]
            redundancy = np.maximum(redundancy, vectors @ vectors[best])
        return " ".join(sentences[i] for i in sorted(chosen))

    def _vectors(self, sentences: list[str]) -> np.ndarray:
        analyzer = analyzers()(self.language)
        bags = [Counter(analyzer.terms(s)) for s in sentences]
        df: Counter[str] = Counter()
        for bag in bags:
            df.update(bag.keys())
        vocab = {t: i for i, t in enumerate(df)}
        n = len(sentences)
        out = np.zeros((n, max(1, len(vocab))), dtype=np.float32)
        for row, bag in enumerate(bags):
            for term, tf in bag.items():
                out[row, vocab[term]] = (1 + math.log(tf)) * math.log(1 + n / df[term])
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms > 0, norms, 1)


def _cut(text: str, budget: int) -> str:
    words = text.split()
    out: list[str] = []
    for word in words:
        if count_tokens(" ".join([*out, word])) > budget:
            break
        out.append(word)
    return " ".join(out)


class LLMSummarizer:
    """An LLM writes the summary. Replies come through the LLM cache keyed by the prompt, so a rebuild over
    unchanged clusters replays them; a failed call falls back to the extractive summary and is counted."""

    abstractive = True

    def __init__(
        self, llm: LLMProvider, fallback: ExtractiveSummarizer | None = None, prices: PriceTable | None = None
    ) -> None:
        self.llm = llm
        self.fallback = fallback or ExtractiveSummarizer()
        self.prices = prices or PriceTable()
        self.usage = QueryMetadata(strategy="summaries")

    @property
    def name(self) -> str:
        return f"llm:{self.llm.model_id}"

    def summarize(self, texts: Sequence[str], budget: int) -> str:
        body = "\n\n".join(t.strip() for t in texts if t.strip())
        if not body:
            return ""
        if count_tokens(body) <= budget:
            return body
        prompt = (
            f"Write a summary of at most {budget} words of the passages below. Keep names, numbers and the "
            "main points of each discussion; do not add anything that is not in them.\n\n" + body
        )
        try:
            completion = self.llm.complete(
                [{"role": "user", "content": prompt}], GenerationParams(max_tokens=int(budget * 1.5), temperature=0.0)
            )
        except LLMError as exc:
            self.usage.add_fallback(f"summary: {exc}")
            return self.fallback.summarize(texts, budget)
        self.usage.record(completion, self.prices)
        text = completion.text.strip()
        if not text:
            self.usage.add_fallback("summary: empty reply")
            return self.fallback.summarize(texts, budget)
        return _cut(text, budget) if count_tokens(text) > budget else text
