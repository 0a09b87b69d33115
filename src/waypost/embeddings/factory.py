"""Build an embedder from a spec string: a sentence-transformers name/path or ``openai:MODEL@URL``."""

from __future__ import annotations

import threading
from pathlib import Path

from waypost.base import Embedder
from waypost.embeddings.cache import CachedEmbedder

DEFAULT_MODEL = "all-MiniLM-L6-v2"

# Models already loaded in this process, by spec: engines opened later use them instead of loading their own.
_shared: dict[str, Embedder] = {}
_shared_lock = threading.Lock()


def share_embedder(embedder: Embedder, spec: str | None = None) -> None:
    """Let every ``make_embedder(spec)`` in this process reuse ``embedder`` (``spec`` defaults to its model id).

    For a long-lived process that opens many stores (a server, a test session): each engine still wraps it
    in its own store's embedding cache, but the model is loaded once."""
    with _shared_lock:
        _shared[spec or embedder.model_id] = embedder


def unshare_embedder(spec: str) -> None:
    """Undo ``share_embedder``: later engines load ``spec`` themselves again."""
    with _shared_lock:
        _shared.pop(spec, None)


def make_embedder(
    spec: str = DEFAULT_MODEL, cache_path: str | Path | None = None, api_key: str | None = None
) -> Embedder:
    """``spec`` is a sentence-transformers model name or local path, or ``openai:MODEL@BASE_URL``."""
    embedder: Embedder
    with _shared_lock:
        shared = _shared.get(spec)
    if shared is not None:
        embedder = shared
    elif spec.startswith("openai:"):
        from waypost.embeddings.openai_compat import OpenAICompatibleEmbedder

        model, _, base_url = spec.removeprefix("openai:").partition("@")
        embedder = OpenAICompatibleEmbedder(
            model=model, base_url=base_url or "http://127.0.0.1:11434/v1", api_key=api_key
        )
    else:
        from waypost.embeddings.sentence_transformer import SentenceTransformerEmbedder

        embedder = SentenceTransformerEmbedder(spec)
    return CachedEmbedder(embedder, cache_path) if cache_path is not None else embedder
