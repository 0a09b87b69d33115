"""Build an LLM from a spec: ``none``, ``smollm2``, ``gguf:PATH`` or ``openai:MODEL@BASE_URL``."""

from __future__ import annotations

from pathlib import Path

from waypost.errors import WaypostError
from waypost.llm.base import LLMProvider
from waypost.llm.cache import CachedLLM


def make_llm(
    spec: str = "none", cache_path: str | Path | None = None, api_key: str | None = None, timeout: float = 60.0
) -> LLMProvider | None:
    """``None`` for ``none``: callers then take their LLM-free path."""
    spec = spec.strip()
    llm: LLMProvider
    if spec in ("", "none"):
        return None
    if spec == "smollm2" or spec.startswith("gguf:"):
        from waypost.llm.llama_cpp import LlamaCppLLM, bundled_smollm2

        llm = LlamaCppLLM(bundled_smollm2() if spec == "smollm2" else Path(spec.removeprefix("gguf:")))
    elif spec.startswith("openai:"):
        from waypost.llm.openai_compat import OpenAICompatibleLLM

        model, _, base_url = spec.removeprefix("openai:").partition("@")
        if not model:
            raise WaypostError("an OpenAI-compatible LLM needs a model: openai:MODEL@http://host:port/v1")
        if base_url and not base_url.startswith(("http://", "https://")):
            raise WaypostError(f"the LLM server URL must start with http:// or https://, got {base_url!r}")
        llm = OpenAICompatibleLLM(model, base_url or "http://127.0.0.1:11434/v1", api_key=api_key, timeout=timeout)
    else:
        raise WaypostError(f"unknown LLM {spec!r}; use none, smollm2, gguf:PATH or openai:MODEL@URL")
    return CachedLLM(llm, cache_path) if cache_path is not None else llm
