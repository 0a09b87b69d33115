"""Structured output from models that wrap JSON in prose or break it.

Extract the JSON, repair it (json-repair), validate it against a pydantic model; on failure ask once
more with the validation error; if that fails too, the caller takes its non-LLM path and the
fallback is recorded.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from waypost.llm.accounting import PriceTable, QueryMetadata
from waypost.llm.base import GenerationParams, LLMError, LLMProvider, Message

T = TypeVar("T", bound=BaseModel)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


def _decoded(text: str) -> Any:
    """The first complete JSON value starting at some '{' (preferred) or '[' in ``text``; else ``None``."""
    decoder = json.JSONDecoder()
    for opener in "{[":
        for i, ch in enumerate(text):
            if ch != opener:
                continue
            try:
                value, _ = decoder.raw_decode(text, i)
            except json.JSONDecodeError:  # no JSON value starts at this bracket: try the next one
                continue
            if value:
                return value
    return None


def extract_json(text: str) -> Any:
    """The first JSON object or array in ``text``, repaired if needed. Raises ``ValueError`` if none."""
    fenced = [m.group(1) for m in _FENCE.finditer(text)]
    for candidate in [*fenced, text]:
        value = _decoded(candidate)
        if value is not None:
            return value
    import json_repair

    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    for candidate in [*fenced, *([text[start:]] if start >= 0 else [])]:
        repaired = json_repair.loads(candidate)
        if isinstance(repaired, (dict, list)) and repaired:
            return repaired
    raise ValueError("no JSON object found in the model's reply")


@dataclass
class StructuredResult(Generic[T]):
    value: T | None
    attempts: int
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.value is not None


def complete_structured(
    llm: LLMProvider,
    messages: list[Message],
    schema: type[T],
    metadata: QueryMetadata,
    prices: PriceTable,
    params: GenerationParams | None = None,
    step: str = "structured",
) -> StructuredResult[T]:
    """Ask for JSON matching ``schema``; one retry with the error; ``value=None`` means: take the fallback."""
    params = params or GenerationParams(max_tokens=384)
    conversation = list(messages)
    error = ""
    for attempt in (1, 2):
        try:
            completion = llm.complete(conversation, params)
        except LLMError as exc:
            metadata.fallbacks.append(f"{step}: {exc}")
            return StructuredResult(None, attempt, str(exc))
        metadata.record(completion, prices)
        try:
            return StructuredResult(schema.model_validate(extract_json(completion.text)), attempt)
        except ValidationError as exc:
            error = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'reply'}: {e['msg']}" for e in exc.errors())
        except ValueError as exc:
            error = str(exc) or type(exc).__name__
        conversation = [
            *conversation,
            {"role": "assistant", "content": completion.text},
            {
                "role": "user",
                "content": f"That was not valid: {error}. Reply with only the JSON "
                f"object matching this schema: {json.dumps(schema.model_json_schema())}",
            },
        ]
    metadata.fallbacks.append(f"{step}: invalid JSON after retry ({error})")
    return StructuredResult(None, 2, error)
