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


class _Memo:
    """One search's vectors; closed when the search ends, so a context copied inside it embeds afresh."""

    def __init__(self) -> None:
        self.vectors: dict[tuple[str, str], FloatMatrix] = {}
        self.open = True


_known: ContextVar[_Memo | None] = ContextVar("waypost_query_vectors", default=None)


@contextmanager
def one_search() -> Iterator[None]:
    """Within the block, each (model, query) pair is embedded once. Threads started inside do not see it
    (a ``contextvars`` value) unless they run in a copy of the context (``contextvars.copy_context``)."""
    memo = _Memo()
    token = _known.set(memo)
    try:
        yield
    finally:
        _known.reset(token)
        memo.open = False
        memo.vectors.clear()


def query_vector(embedder: Embedder, text: str) -> FloatMatrix:
    """``embedder.embed_query(text)``, once per search; the vector is read-only (callers share it)."""
    memo = _known.get()
    if memo is None or not memo.open:
        return embedder.embed_query(text)
    key = (embedder.model_id, text)
    known = memo.vectors.get(key)
    if known is None:
        known = np.array(embedder.embed_query(text), dtype=np.float32)
        known.flags.writeable = False
        memo.vectors[key] = known
    return known


__all__ = ["one_search", "query_vector"]
