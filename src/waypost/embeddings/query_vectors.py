"""One search's query vectors: a query embedded by stage 1 (choosing collections) is not embedded again by
the collection's own pass, nor by the merge of several collections' results. The memo lives only inside
``one_search()``; outside it every call embeds, so no query vector outlives its search and benchmarks of
single strategies time their own embedding."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np

from waypost.base import Embedder, FloatMatrix

_known: ContextVar[dict[tuple[str, str], FloatMatrix] | None] = ContextVar("waypost_query_vectors", default=None)


@contextmanager
def one_search() -> Iterator[None]:
    """Within the block, each (model, query) pair is embedded once. Threads started inside do not see it
    (a ``contextvars`` value): they embed for themselves."""
    known: dict[tuple[str, str], FloatMatrix] = {}
    token = _known.set(known)
    try:
        yield
    finally:
        _known.reset(token)
        known.clear()  # a task started inside keeps the context, not the vectors


def query_vector(embedder: Embedder, text: str) -> FloatMatrix:
    """``embedder.embed_query(text)``, once per search; the vector is read-only (callers share it)."""
    known = _known.get()
    if known is None:
        return embedder.embed_query(text)
    key = (embedder.model_id, text)
    if key not in known:
        vector = np.array(embedder.embed_query(text), dtype=np.float32)
        vector.flags.writeable = False
        known[key] = vector
    return known[key]


__all__ = ["one_search", "query_vector"]
