"""Answer and citation types. A citation is an exact character span of a stored document."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from waypost.llm.accounting import QueryMetadata
from waypost.llm.base import close_iterator
from waypost.types import Hit

NOT_SUPPORTED = "The documents do not contain an answer to this question."


@dataclass(frozen=True)
class Citation:
    number: int
    document_id: str
    title: str
    start: int
    end: int
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.number,
            "document_id": self.document_id,
            "title": self.title,
            "span": [self.start, self.end],
            "text": self.text,
        }


@dataclass
class Answer:
    question: str
    text: str
    citations: list[Citation]
    mode: str  # "extractive" or "llm"
    supported: bool
    metadata: QueryMetadata
    hits: list[Hit] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "answer": self.text,
            "mode": self.mode,
            "supported": self.supported,
            "citations": [c.to_dict() for c in self.citations],
            "metadata": self.metadata.to_dict(),
        }


@dataclass
class StreamOutcome:
    """Where a token generator leaves the finished answer (shared with its ``AnswerStream``, so the
    generator needs no reference back to the stream: dropping the stream then closes it at once)."""

    answer: Answer | None = None


class AnswerStream:
    """Tokens while they are generated; ``answer`` holds the finished answer once ``tokens`` is spent.
    An LLM holds a lock or a connection while it streams: stop early with ``close()`` or a ``with`` block
    (dropping the last reference to the stream also releases them)."""

    def __init__(
        self, tokens: Iterator[str], outcome: StreamOutcome | None = None, hits: list[Hit] | None = None
    ) -> None:
        self.tokens = tokens
        self._outcome = outcome or StreamOutcome()
        self.hits = hits or []  # what retrieval found, known before the first token: the sources [1], [2], ...

    @property
    def answer(self) -> Answer | None:
        return self._outcome.answer

    def __iter__(self) -> Iterator[str]:
        return self.tokens

    def close(self) -> None:
        """Stop the stream where it is and release what the LLM holds (no answer is set)."""
        close_iterator(self.tokens)

    def __enter__(self) -> AnswerStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
