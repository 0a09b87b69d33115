"""Build an embedder from a spec string: a sentence-transformers name/path or ``openai:MODEL@URL``."""

from __future__ import annotations

from pathlib import Path

from waypost.base import Embedder
from waypost.embeddings.cache import CachedEmbedder

DEFAULT_MODEL = "all-MiniLM-L6-v2"


def make_embedder(
    spec: str = DEFAULT_MODEL, cache_path: str | Path | None = None, api_key: str | None = None
) -> Embedder:
    """``spec`` is a sentence-transformers model name or local path, or ``openai:MODEL@BASE_URL``."""
    embedder: Embedder
    if spec.startswith("openai:"):
        from waypost.embeddings.openai_compat import OpenAICompatibleEmbedder

        model, _, base_url = spec.removeprefix("openai:").partition("@")
        embedder = OpenAICompatibleEmbedder(
            model=model, base_url=base_url or "http://127.0.0.1:11434/v1", api_key=api_key
        )
    else:
        from waypost.embeddings.sentence_transformer import SentenceTransformerEmbedder

        embedder = SentenceTransformerEmbedder(spec)
    return CachedEmbedder(embedder, cache_path) if cache_path is not None else embedder
