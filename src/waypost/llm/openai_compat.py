"""Any OpenAI-compatible chat server: OpenAI, Ollama, vLLM, llama.cpp server, LM Studio.

Timeouts on every request, retries with exponential backoff on 429/5xx and connection errors, and a
semaphore that bounds concurrent requests. The API key comes from config, or from the environment
variable named in config, read at call time.
"""

from __future__ import annotations

import http.client
import json
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

from waypost.llm.base import (
    Completion,
    GenerationParams,
    LLMError,
    Message,
    StreamResult,
    completion_from_reply,
)

RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


def _retry_after(header: str | None) -> float:
    """Seconds from a Retry-After header (seconds or an HTTP date); 0 when absent or unreadable."""
    if not header:
        return 0.0
    try:
        return max(0.0, float(header))
    except ValueError:  # not seconds: maybe an HTTP date
        pass
    try:
        from email.utils import parsedate_to_datetime

        return max(0.0, parsedate_to_datetime(header).timestamp() - time.time())
    except (TypeError, ValueError):  # unreadable: the usual backoff applies
        return 0.0


def _lines(response: Any, url: str) -> Iterator[bytes]:
    """The stream's lines; a timeout or reset mid-stream becomes an ``LLMError`` (so callers fall back)."""
    try:
        yield from response
    except (OSError, http.client.HTTPException) as exc:
        raise LLMError(f"{url} broke off its stream: {exc}") from exc


class OpenAICompatibleLLM:
    def __init__(
        self,
        model: str,
        base_url: str,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 60.0,
        retries: int = 3,
        backoff: float = 0.5,
        max_concurrency: int = 4,
    ) -> None:
        self._model = model
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._api_key = api_key
        self._api_key_env = api_key_env
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self._slots = threading.BoundedSemaphore(max_concurrency)
        self.attempts = 0

    @property
    def model_id(self) -> str:
        return f"openai:{self._model}"

    @property
    def cache_identity(self) -> str:
        """Model and server: the same model name on two servers is two models."""
        return f"{self.model_id}@{self._url}"

    def _request(self, body: dict[str, Any]) -> Any:
        key = self._api_key or os.environ.get(self._api_key_env, "")
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        data = json.dumps(body).encode()
        last: Exception | None = None
        for attempt in range(self.retries + 1):
            self.attempts += 1
            request = urllib.request.Request(self._url, data=data, headers=headers, method="POST")
            try:
                return urllib.request.urlopen(request, timeout=self.timeout)
            except urllib.error.HTTPError as exc:
                last = exc
                if exc.code not in RETRY_STATUS:
                    raise LLMError(f"{self._url} answered HTTP {exc.code}: {exc.read()[:200]!r}") from exc
                delay = _retry_after(exc.headers.get("Retry-After")) or self.backoff * 2**attempt
            except (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException) as exc:
                last = exc
                delay = self.backoff * 2**attempt
            if attempt < self.retries:
                time.sleep(min(delay, 30.0))
        raise LLMError(f"{self._url} failed after {self.retries + 1} attempts: {last}")

    def _body(self, messages: list[Message], params: GenerationParams, stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self._model, "messages": messages, "stream": stream, **params.as_dict()}
        if not params.stop:
            body.pop("stop")
        if stream:
            body["stream_options"] = {"include_usage": True}
        return body

    def complete(self, messages: list[Message], params: GenerationParams | None = None) -> Completion:
        params = params or GenerationParams()
        t0 = time.perf_counter()
        with self._slots:
            response = self._request(self._body(messages, params, stream=False))
            try:
                with response:
                    raw = response.read()
            except (OSError, http.client.HTTPException) as exc:
                raise LLMError(f"{self._url} broke off its reply: {exc}") from exc
            try:
                payload = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise LLMError(f"{self._url} sent a reply that is not JSON: {exc}") from exc
        return completion_from_reply(payload, self.model_id, t0, self._url)

    def stream(self, messages: list[Message], params: GenerationParams | None = None) -> StreamResult:
        params = params or GenerationParams()
        completion = Completion("", self.model_id)  # filled in as the stream ends

        def tokens() -> Iterator[str]:
            # holds a concurrency slot and the response while it yields: closing the generator (the caller's
            # ``close()``, or dropping it: nothing here refers back to the result, so no cycle keeps it
            # alive) leaves both ``with`` blocks and gives them back
            t0 = time.perf_counter()
            parts: list[str] = []
            done = False
            with self._slots:
                response = self._request(self._body(messages, params, stream=True))
                with response:
                    for raw in _lines(response, self._url):
                        line = raw.decode("utf-8", "replace").strip()
                        if not line.startswith("data:"):
                            continue
                        data = line[5:].strip()
                        if data == "[DONE]":
                            done = True
                            break
                        try:
                            event = json.loads(data)
                        except json.JSONDecodeError as exc:
                            raise LLMError(f"{self._url} streamed a malformed event: {data[:120]!r}") from exc
                        if event.get("error"):
                            raise LLMError(f"{self._url} streamed an error: {str(event['error'])[:200]}")
                        usage = event.get("usage")
                        if usage:
                            completion.prompt_tokens = int(usage.get("prompt_tokens", 0))
                            completion.completion_tokens = int(usage.get("completion_tokens", 0))
                        for choice in event.get("choices") or []:
                            piece = (choice.get("delta") or {}).get("content") or ""
                            if piece:
                                parts.append(piece)
                                yield piece
                            if choice.get("finish_reason"):
                                completion.finish_reason = str(choice["finish_reason"])
            if not done and not completion.finish_reason:
                raise LLMError(f"{self._url} ended its stream before the answer was finished")
            completion.text = "".join(parts)
            completion.latency_ms = (time.perf_counter() - t0) * 1000
            if not completion.completion_tokens:
                completion.completion_tokens = len(parts)

        return StreamResult(tokens(), completion)
