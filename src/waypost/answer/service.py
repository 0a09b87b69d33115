"""Retrieve, then answer: with an LLM when one is configured and healthy, extractively otherwise."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Protocol

from waypost.answer.extractive import ExtractiveAnswerer
from waypost.answer.generative import build_messages, is_refusal, parse_citations
from waypost.answer.model import NOT_SUPPORTED, Answer, AnswerStream, StreamOutcome
from waypost.llm.accounting import PriceTable, QueryMetadata
from waypost.llm.base import GenerationParams, LLMError, LLMProvider
from waypost.llm.cache import derived_from
from waypost.types import Hit, RetrievalResult


class Retrieve(Protocol):
    def __call__(self, query: str, strategy: str, k: int) -> RetrievalResult: ...


class AnswerService:
    def __init__(
        self,
        retrieve: Retrieve,
        llm: LLMProvider | None = None,
        prices: PriceTable | None = None,
        extractive: ExtractiveAnswerer | None = None,
        params: GenerationParams | None = None,
        source_rows: Callable[[Sequence[Hit]], list[int]] | None = None,
    ) -> None:
        """``source_rows``: the store rows of the chunks behind hits (an assembled passage joins several),
        so a reply cached from them goes when any of them is deleted."""
        self.source_rows = source_rows
        self.retrieve = retrieve
        self.llm = llm
        self.prices = prices or PriceTable()
        self.extractive = extractive or ExtractiveAnswerer()
        self.params = params or GenerationParams(max_tokens=256)

    def _derived(self, hits: Sequence[Hit]) -> AbstractContextManager[None]:
        rows = self.source_rows(hits) if self.source_rows is not None else []
        return derived_from(rows=rows, texts=[h.chunk.text for h in hits])

    def _retrieve(self, question: str, strategy: str, k: int) -> tuple[RetrievalResult, QueryMetadata]:
        t0 = time.perf_counter()
        result = self.retrieve(question, strategy, k)
        meta = result.metadata  # carries any LLM calls retrieval made (filter extraction)
        meta.timings_ms = {f"retrieve.{s}": v for s, v in meta.timings_ms.items()}
        meta.timings_ms["retrieve.setup"] = max(0.0, (time.perf_counter() - t0) * 1000 - result.explanation.total_ms)
        return result, meta

    def _extractive(self, question: str, result: RetrievalResult, meta: QueryMetadata) -> Answer:
        t0 = time.perf_counter()
        filters = result.explanation.filters  # the hits met filters read from (or given with) the question
        unfiltered = None
        if filters is not None:  # its words, less the fields the filters name ("belt drive": drive = 'Belt')
            named = set(re.split(r"[^\w]+|_", filters.lower()))
            unfiltered = " ".join(w for w in result.explanation.semantic_query.split() if w.lower() not in named)
        text, citations, supported = self.extractive.answer(question, result.hits, unfiltered)
        meta.timings_ms["answer.extractive"] = (time.perf_counter() - t0) * 1000
        return Answer(question, text, citations, "extractive", supported, meta, result.hits)

    def _finish(self, question: str, text: str, result: RetrievalResult, meta: QueryMetadata) -> Answer:
        if is_refusal(text) or not text.strip():
            return Answer(question, NOT_SUPPORTED, [], "llm", False, meta, result.hits)
        clean, citations = parse_citations(text, result.hits)
        if not citations:
            meta.fallbacks.append("answer: the LLM cited no passage, so the answer is marked unsupported")
        return Answer(question, clean, citations, "llm", bool(citations), meta, result.hits)

    def answer(self, question: str, strategy: str = "hybrid", k: int = 5) -> Answer:
        result, meta = self._retrieve(question, strategy, k)
        if self.llm is None or not result.hits:
            return self._extractive(question, result, meta)
        t0 = time.perf_counter()
        try:
            with self._derived(result.hits):  # purged with the passages' text
                completion = self.llm.complete(build_messages(question, result.hits), self.params)
        except LLMError as exc:
            meta.fallbacks.append(f"answer: {exc}; answered extractively")
            return self._extractive(question, result, meta)
        meta.timings_ms["answer.llm"] = (time.perf_counter() - t0) * 1000
        meta.record(completion, self.prices)
        if completion.finish_reason == "length":
            meta.fallbacks.append(f"answer: cut off at max_tokens={self.params.max_tokens}")
        return self._finish(question, completion.text, result, meta)

    def stream(self, question: str, strategy: str = "hybrid", k: int = 5) -> AnswerStream:
        """Tokens as the LLM writes them; without an LLM (or when it fails first) the extractive answer."""
        result, meta = self._retrieve(question, strategy, k)
        out = StreamOutcome()  # the generator fills it in; it holds no reference to the stream itself

        def tokens() -> Iterator[str]:
            if self.llm is None or not result.hits:
                out.answer = self._extractive(question, result, meta)
                yield out.answer.text
                return
            t0 = time.perf_counter()
            with self._derived(result.hits):
                streamed = self.llm.stream(build_messages(question, result.hits), self.params)
            parts: list[str] = []
            try:
                for token in streamed.tokens:
                    parts.append(token)
                    yield token
            except LLMError as exc:
                meta.fallbacks.append(f"answer: {exc}; answered extractively")
                out.answer = self._extractive(question, result, meta)
                yield ("\n" if parts else "") + out.answer.text
                return
            finally:  # finished, failed or abandoned: the LLM's stream lets go of its lock or connection now
                streamed.close()
            meta.timings_ms["answer.llm"] = (time.perf_counter() - t0) * 1000
            meta.record(streamed.completion, self.prices)
            out.answer = self._finish(question, "".join(parts), result, meta)

        return AnswerStream(tokens(), out, result.hits)
