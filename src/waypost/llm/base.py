"""The LLM contract: complete, stream, and their accounting."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, TypedDict

from waypost.errors import WaypostError


class Message(TypedDict):
    role: str
    content: str


class LLMError(WaypostError):
    """The provider failed after its retries (unreachable, timeout, 5xx, malformed reply)."""


@dataclass(frozen=True)
class GenerationParams:
    max_tokens: int = 256
    temperature: float = 0.0
    stop: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"max_tokens": self.max_tokens, "temperature": self.temperature, "stop": list(self.stop)}


@dataclass
class Completion:
    text: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    cached: bool = False
    finish_reason: str = ""


def completion_from_reply(payload: Any, model: str, started: float, source: str) -> Completion:
    """A ``Completion`` from an OpenAI-format chat reply (the HTTP servers and llama-cpp-python both use it)."""
    import time

    try:
        choice = payload["choices"][0]
        text = choice["message"]["content"] or ""
    except (KeyError, IndexError, TypeError) as exc:
        raise LLMError(f"{source} sent an unexpected reply: {str(payload)[:200]}") from exc
    usage = payload.get("usage") or {}
    return Completion(
        text,
        model,
        int(usage.get("prompt_tokens", 0)),
        int(usage.get("completion_tokens", 0)),
        (time.perf_counter() - started) * 1000,
        finish_reason=str(choice.get("finish_reason") or ""),
    )


@dataclass
class StreamResult:
    """Tokens as they arrive; ``completion`` is filled in once the stream ends. A provider may hold a lock
    or a connection while it streams: ``close()`` (or leaving a ``with`` block, or dropping the last
    reference) releases it when the caller stops reading early."""

    tokens: Iterator[str]
    completion: Completion = field(default_factory=lambda: Completion("", ""))

    def close(self) -> None:
        close_iterator(self.tokens)

    def __enter__(self) -> StreamResult:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def close_iterator(tokens: Iterator[Any]) -> None:
    """Close a generator (running its ``finally`` blocks, releasing what it holds); other iterators hold nothing."""
    close = getattr(tokens, "close", None)
    if callable(close):
        close()


class LLMProvider(Protocol):
    @property
    def model_id(self) -> str: ...

    def complete(self, messages: list[Message], params: GenerationParams | None = None) -> Completion: ...

    def stream(self, messages: list[Message], params: GenerationParams | None = None) -> StreamResult: ...
