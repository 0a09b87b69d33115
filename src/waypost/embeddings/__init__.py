"""Embedding providers behind the ``Embedder`` protocol, plus a persistent cache."""

from waypost.embeddings.cache import CachedEmbedder
from waypost.embeddings.factory import DEFAULT_MODEL, make_embedder, share_embedder, unshare_embedder

__all__ = ["DEFAULT_MODEL", "CachedEmbedder", "make_embedder", "share_embedder", "unshare_embedder"]
