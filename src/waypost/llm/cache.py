"""Persistent LLM response cache keyed by (model, prompt hash, parameters), so re-indexing replays it.

A prompt built from documents is asked inside ``derived_from(rows=..., texts=...)``: the cache then records
which chunk rows and chunk texts (by hash) each reply came from, and ``forget_sources`` removes every reply
derived from a deleted document (see ``waypost.purge``). Replies asked outside it record no source."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from waypost.llm.base import Completion, GenerationParams, LLMProvider, Message, StreamResult
from waypost.store.files import connect_cache

_SOURCES: ContextVar[frozenset[str]] = ContextVar("waypost_llm_sources", default=frozenset())


def row_source(row_id: int) -> str:
    """The source name of a chunk row (row ids are unique in a store and never reused)."""
    return f"row:{int(row_id)}"


def text_source(text: str) -> str:
    """The source name of a chunk text."""
    return "text:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@contextmanager
def derived_from(rows: Iterable[int] = (), texts: Iterable[str] = ()) -> Iterator[None]:
    """LLM calls inside (in this thread) are recorded as derived from these chunk rows and texts."""
    names = {row_source(r) for r in rows} | {text_source(t) for t in texts}
    token = _SOURCES.set(_SOURCES.get() | names)
    try:
        yield
    finally:
        _SOURCES.reset(token)


_SCHEMA = """
CREATE TABLE IF NOT EXISTS completions (key TEXT PRIMARY KEY, model TEXT, reply TEXT);
CREATE TABLE IF NOT EXISTS completion_sources (key TEXT NOT NULL, source TEXT NOT NULL, PRIMARY KEY (source, key));
"""


def cached_sources(path: str | Path) -> set[str]:
    """Every source some cached reply in the cache file ``path`` was derived from."""
    conn = connect_cache(path)
    try:
        conn.executescript(_SCHEMA)
        return {str(r[0]) for r in conn.execute("SELECT DISTINCT source FROM completion_sources")}
    finally:
        conn.close()


def forget_sources(path: str | Path, sources: Iterable[str]) -> int:
    """Remove every reply in the cache file ``path`` derived from any of ``sources``; how many were removed."""
    names = list(dict.fromkeys(sources))
    conn = connect_cache(path)
    removed = 0
    try:
        conn.executescript(_SCHEMA)
        conn.execute("BEGIN IMMEDIATE")
        for start in range(0, len(names), 500):
            part = names[start : start + 500]
            marks = ",".join("?" * len(part))
            keys = [
                r[0]
                for r in conn.execute(f"SELECT DISTINCT key FROM completion_sources WHERE source IN ({marks})", part)
            ]
            for k in range(0, len(keys), 500):
                some = keys[k : k + 500]
                km = ",".join("?" * len(some))
                removed += conn.execute(f"DELETE FROM completions WHERE key IN ({km})", some).rowcount
                conn.execute(f"DELETE FROM completion_sources WHERE key IN ({km})", some)
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return removed


def cache_key(model: str, messages: list[Message], params: GenerationParams) -> str:
    payload = json.dumps([model, messages, params.as_dict()], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()


class CachedLLM:
    """Wraps a provider: an identical request is answered from disk, marked ``cached``."""

    def __init__(self, inner: LLMProvider, path: str | Path) -> None:
        self.inner = inner
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._conn = connect_cache(path)
        self._conn.executescript(_SCHEMA)
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

    def _put(self, key: str, completion: Completion, sources: frozenset[str]) -> None:
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
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.execute("INSERT OR REPLACE INTO completions VALUES (?,?,?)", (key, self.model_id, reply))
                self._conn.executemany(
                    "INSERT OR IGNORE INTO completion_sources(key, source) VALUES (?,?)", [(key, s) for s in sources]
                )
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

    def complete(self, messages: list[Message], params: GenerationParams | None = None) -> Completion:
        params = params or GenerationParams()
        key = cache_key(self._identity, messages, params)
        hit = self._get(key)
        if hit is not None:
            return hit
        completion = self.inner.complete(messages, params)
        if self._cacheable(completion):
            self._put(key, completion, _SOURCES.get())
        return completion

    def stream(self, messages: list[Message], params: GenerationParams | None = None) -> StreamResult:
        params = params or GenerationParams()
        key = cache_key(self._identity, messages, params)
        hit = self._get(key)
        if hit is not None:
            return StreamResult(iter([hit.text]), hit)
        sources = _SOURCES.get()  # the tokens may be read after the caller's ``derived_from`` ended
        inner = self.inner.stream(messages, params)

        def tokens() -> Iterator[str]:
            try:
                yield from inner.tokens
            finally:  # stopped early or not: the provider's stream lets go of what it holds
                inner.close()
            if self._cacheable(inner.completion):
                self._put(key, inner.completion, sources)

        return StreamResult(tokens(), inner.completion)

    def close(self) -> None:
        with self._lock:
            self._conn.close()
