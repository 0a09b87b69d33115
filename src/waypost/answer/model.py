"""Answer and citation types. A citation is an exact character span of a stored document."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from waypost.llm.accounting import QueryMetadata
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
class AnswerStream:
    """Tokens while they are generated; ``answer`` holds the finished answer once ``tokens`` is spent."""

    tokens: Iterator[str]
    answer: Answer | None = None
