"""A LangChain retriever over a waypost collection, local or on a server (``pip install 'waypost[langchain]'``).

Usage:

    retriever = WaypostRetriever(source=Engine("store"), collection="docs", k=4)
    docs = retriever.invoke("what is x?")  # or: await retriever.ainvoke("what is x?", k=8)
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field, field_validator

from waypost.adapters.source import FilterLike, RemoteSource, Source, SourceHit, as_source
from waypost.errors import InvalidInputError

try:
    from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
    from langchain_core.documents import Document as LCDocument
    from langchain_core.retrievers import BaseRetriever
except ImportError as exc:  # pragma: no cover - only without the extra
    raise ImportError("waypost.adapters.langchain needs langchain-core: pip install 'waypost[langchain]'") from exc


def to_document(hit: SourceHit) -> LCDocument:
    """``page_content`` is the chunk's text; metadata holds the hit's own metadata, then score, ids, span, title."""
    metadata: dict[str, Any] = {
        **hit.metadata,
        "score": hit.score,
        "document_id": hit.document_id,
        "chunk_id": hit.chunk_id,
        "span": hit.span,
        "title": hit.title,
        "section": list(hit.section),
        "strategy": hit.strategy,
    }
    return LCDocument(page_content=hit.text, metadata=metadata, id=hit.chunk_id)


class WaypostRetriever(BaseRetriever):
    """Retrieves chunks of one collection. ``source``: an ``Engine`` or ``AsyncEngine`` (a local store), a
    ``WaypostClient`` or ``AsyncWaypostClient`` (a server), or a ``Source``. ``k`` may also be given per call:
    ``retriever.invoke(query, k=3)``. ``filters``: a filter object or its JSON form (``{"year": {"gte": 2020}}``)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    source: Source
    collection: str
    k: int = Field(default=4, ge=1, le=100)
    strategy: str = "auto"
    filters: Any = None

    @field_validator("source", mode="before")
    @classmethod
    def _source(cls, value: object) -> Source:
        return as_source(value)

    @classmethod
    def from_url(cls, url: str, api_key: str | None, collection: str, **fields: Any) -> WaypostRetriever:
        """A retriever over a server's collection."""
        return cls(source=RemoteSource(url=url, api_key=api_key), collection=collection, **fields)

    def _call_args(self, kwargs: dict[str, Any]) -> tuple[int, str, FilterLike | None]:
        k = kwargs.pop("k", self.k)
        strategy = kwargs.pop("strategy", self.strategy)
        filters = kwargs.pop("filters", self.filters)
        kwargs.pop("verbose", None)  # LangChain's own, for its callbacks
        if kwargs:
            raise InvalidInputError(f"WaypostRetriever takes k, strategy and filters per call, not {sorted(kwargs)}")
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise InvalidInputError(f"k must be a positive integer, got {k!r}")
        return k, str(strategy), filters

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[LCDocument]:
        k, strategy, filters = self._call_args(kwargs)
        hits = self.source.retrieve(self.collection, query, k, strategy, filters)
        return [to_document(h) for h in hits]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[LCDocument]:
        k, strategy, filters = self._call_args(kwargs)
        hits = await self.source.aretrieve(self.collection, query, k, strategy, filters)
        return [to_document(h) for h in hits]
