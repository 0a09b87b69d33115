"""Persistent LLM response cache keyed by (model, prompt hash, parameters), so re-indexing replays it."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

from waypost.llm.base import Completion, GenerationParams, LLMProvider, Message, StreamResult


def cache_key(model: str, messages: list[Message], params: GenerationParams) -> str:
    payload = json.dumps([model, messages, params.as_dict()], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()


class CachedLLM:
    """Wraps a provider: an identical request is answered from disk, marked ``cached``."""

    def __init__(self, inner: LLMProvider, path: str | Path) -> None:
        self.inner = inner
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("CREATE TABLE IF NOT EXISTS completions (key TEXT PRIMARY KEY, model TEXT, reply TEXT)")
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def _identity(self) -> str:
        """What makes two models different: the server or file behind the name, where the provider knows it."""
        return str(getattr(self.inner, "cache_identity", self.inner.model_id))

    @staticmethod
    def _cacheable(completion: Completion) -> bool:
        """Only finished, non-empty replies are kept: a cut-off reply must not be replayed forever."""
        return bool(completion.text.strip()) and completion.finish_reason not in ("", "length")

    def _get(self, key: str) -> Completion | None:
        with self._lock:
            row = self._conn.execute("SELECT reply FROM completions WHERE key=?", (key,)).fetchone()
        if row is None:
            return None
        data = json.loads(row[0])
        return Completion(
            data["text"],
            data["model"],
            data["prompt_tokens"],
            data["completion_tokens"],
            0.0,
            cached=True,
            finish_reason=data.get("finish_reason", ""),
        )

    def _put(self, key: str, completion: Completion) -> None:
        reply = json.dumps(
            {
                "text": completion.text,
                "model": completion.model,
                "prompt_tokens": completion.prompt_tokens,
                "completion_tokens": completion.completion_tokens,
                "finish_reason": completion.finish_reason,
            }
        )
        with self._lock:
            self._conn.execute("INSERT OR REPLACE INTO completions VALUES (?,?,?)", (key, self.model_id, reply))

    def complete(self, messages: list[Message], params: GenerationParams | None = None) -> Completion:
        params = params or GenerationParams()
        key = cache_key(self._identity, messages, params)
        hit = self._get(key)
        if hit is not None:
            return hit
        completion = self.inner.complete(messages, params)
        if self._cacheable(completion):
            self._put(key, completion)
        return completion

    def stream(self, messages: list[Message], params: GenerationParams | None = None) -> StreamResult:
        params = params or GenerationParams()
        key = cache_key(self._identity, messages, params)
        hit = self._get(key)
        if hit is not None:
            return StreamResult(iter([hit.text]), hit)
        inner = self.inner.stream(messages, params)

        def tokens() -> Iterator[str]:
            try:
                yield from inner.tokens
            finally:  # stopped early or not: the provider's stream lets go of what it holds
                inner.close()
            if self._cacheable(inner.completion):
                self._put(key, inner.completion)

        return StreamResult(tokens(), inner.completion)

    def close(self) -> None:
        with self._lock:
            self._conn.close()
