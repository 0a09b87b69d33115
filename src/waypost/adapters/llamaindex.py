"""A LlamaIndex retriever over a waypost collection, local or on a server (``pip install 'waypost[llamaindex]'``).

Usage:

    retriever = WaypostLlamaRetriever(Engine("store"), "docs", k=5)
    nodes = retriever.retrieve("what is x?")  # or: await retriever.aretrieve("what is x?")
"""

from __future__ import annotations

from typing import Any

from waypost.adapters.source import FilterLike, RemoteSource, SourceHit, SourceLike, as_source
from waypost.errors import InvalidInputError

try:
    from llama_index.core.base.base_retriever import BaseRetriever
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.schema import (
        NodeRelationship,
        NodeWithScore,
        ObjectType,
        QueryBundle,
        RelatedNodeInfo,
        TextNode,
    )
except ImportError as exc:  # pragma: no cover - only without the extra
    raise ImportError("waypost.adapters.llamaindex needs llama-index-core: pip install 'waypost[llamaindex]'") from exc

# Kept on the node for code, left out of what LlamaIndex shows an LLM or embeds (the title and hit metadata stay).
BOOKKEEPING = ["document_id", "chunk_id", "span", "section", "strategy"]


def to_node(hit: SourceHit) -> NodeWithScore:
    """``TextNode(id_=chunk id, text)`` with the span as its char indexes and the document as its source."""
    metadata: dict[str, Any] = {
        **hit.metadata,
        "document_id": hit.document_id,
        "chunk_id": hit.chunk_id,
        "title": hit.title,
        "span": hit.span,
        "section": list(hit.section),
        "strategy": hit.strategy,
    }
    node = TextNode(
        id_=hit.chunk_id,
        text=hit.text,
        metadata=metadata,
        start_char_idx=hit.start,
        end_char_idx=hit.end,
        excluded_llm_metadata_keys=list(BOOKKEEPING),
        excluded_embed_metadata_keys=list(BOOKKEEPING),
        relationships={
            NodeRelationship.SOURCE: RelatedNodeInfo(node_id=hit.document_id, node_type=ObjectType.DOCUMENT)
        },
    )
    return NodeWithScore(node=node, score=hit.score)


class WaypostLlamaRetriever(BaseRetriever):
    """Retrieves chunks of one collection as scored nodes. ``source``: an ``Engine`` or ``AsyncEngine`` (a local
    store), a ``WaypostClient`` or ``AsyncWaypostClient`` (a server), or a ``Source``. ``aretrieve`` is truly
    async (the engine's thread pool, or an async HTTP call), never the sync path on an executor."""

    def __init__(
        self,
        source: SourceLike,
        collection: str,
        k: int = 10,
        strategy: str = "auto",
        filters: FilterLike | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise InvalidInputError(f"k must be a positive integer, got {k!r}")
        self.source = as_source(source)
        self.collection = collection
        self.k = k
        self.strategy = strategy
        self.filters = filters
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    @classmethod
    def from_url(cls, url: str, api_key: str | None, collection: str, **options: Any) -> WaypostLlamaRetriever:
        """A retriever over a server's collection."""
        return cls(RemoteSource(url=url, api_key=api_key), collection, **options)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = self.source.retrieve(self.collection, query_bundle.query_str, self.k, self.strategy, self.filters)
        return [to_node(h) for h in hits]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = await self.source.aretrieve(self.collection, query_bundle.query_str, self.k, self.strategy, self.filters)
        return [to_node(h) for h in hits]
