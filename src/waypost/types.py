"""Core data model: documents, chunks, hits and the accounting that travels with results."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from waypost.llm.accounting import QueryMetadata

MetadataValue = str | int | float | bool | list[str] | list[int] | list[float] | None
Metadata = dict[str, Any]


def content_hash(title: str, text: str, metadata: Metadata) -> str:
    """Stable hash of everything that changes a document's indexed form."""
    import json

    payload = json.dumps([title, text, metadata], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Document:
    id: str
    text: str
    title: str = ""
    metadata: Metadata = field(default_factory=dict)
    source: str = ""
    language: str = ""  # ISO 639-1; empty: detected at ingest (or the collection's language)

    @property
    def hash(self) -> str:
        return content_hash(self.title, self.text, self.metadata)


@dataclass(frozen=True)
class Chunk:
    """A contiguous span of a document's text; `text == document.text[start:end]`."""

    document_id: str
    index: int
    text: str
    start: int
    end: int
    token_count: int
    section: tuple[str, ...] = ()
    language: str = ""  # ISO 639-1 code of this chunk's text ("und": no letters; "": not recorded)

    @property
    def id(self) -> str:
        return f"{self.document_id}#{self.index}"

    @property
    def heading(self) -> str:
        return self.section[-1] if self.section else ""


@dataclass(frozen=True)
class Provenance:
    """Where a hit came from: which store row and which strategy stages scored it."""

    collection: str
    document_title: str
    source: str
    stage_scores: dict[str, float] = field(default_factory=dict)
    stage_ranks: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class NodeRef:
    """The tree node a hit was found through (hierarchical strategies): a summary and the leaves it covers."""

    id: int
    layer: int
    kind: str  # run | document | cluster
    summary: str
    leaves: int  # chunks the node covers
    score: float

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class PassageRef:
    """How a passage hit was assembled: the chunks it joins, around which anchor, by which policy."""

    policy: str  # grow | auto-merge | small-to-big
    chunk_ids: tuple[str, ...]
    anchor: str  # the chunk id it grew from (the best retrieved chunk inside it)
    anchor_score: float
    coherence: float  # mean relevance of its chunks relative to the anchor's (1: all as relevant)

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "chunk_ids": list(self.chunk_ids)}


@dataclass(frozen=True)
class Hit:
    chunk: Chunk
    score: float
    strategy: str
    provenance: Provenance
    metadata: Metadata = field(default_factory=dict)
    node: NodeRef | None = None  # set by tree strategies: the summary node this chunk was reached through
    passage: PassageRef | None = None  # set when the hit is an assembled passage (its chunk spans several)
    features: dict[str, float] | None = None  # set by the feature reranker: the values it scored

    @property
    def document_id(self) -> str:
        return self.chunk.document_id

    def to_dict(self) -> dict[str, Any]:
        return {
            "chunk_id": self.chunk.id,
            "document_id": self.chunk.document_id,
            "collection": self.provenance.collection,
            "title": self.provenance.document_title,
            "section": list(self.chunk.section),
            "language": self.chunk.language,
            "span": [self.chunk.start, self.chunk.end],
            "score": self.score,
            "strategy": self.strategy,
            "text": self.chunk.text,
            "stage_scores": self.provenance.stage_scores,
            "metadata": self.metadata,
            "node": self.node.to_dict() if self.node is not None else None,
            "passage": self.passage.to_dict() if self.passage is not None else None,
            "features": self.features,
        }


@dataclass
class Explanation:
    """How a result was produced: strategy, extracted filters, timings per stage (ms)."""

    strategy: str
    query: str
    semantic_query: str
    filters: str | None = None
    candidates: int | None = None
    timings_ms: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    llm: QueryMetadata | None = None  # LLM calls made by retrieval steps (filter extraction), if any
    route: dict[str, Any] | None = None  # strategy="auto": the router's choice, confidence, reasons, timings

    @property
    def total_ms(self) -> float:
        return sum(self.timings_ms.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "query": self.query,
            "semantic_query": self.semantic_query,
            "filters": self.filters,
            "candidates": self.candidates,
            "timings_ms": {k: round(v, 3) for k, v in self.timings_ms.items()},
            "total_ms": round(self.total_ms, 3),
            "notes": self.notes,
            "llm": self.llm.to_dict() if self.llm is not None else None,
            "route": self.route,
        }


@dataclass
class RetrievalResult:
    hits: list[Hit]
    explanation: Explanation

    @property
    def metadata(self) -> QueryMetadata:
        """Accounting in the same shape answers use: strategy and stage timings; retrieval makes no LLM call."""
        from waypost.llm.accounting import QueryMetadata

        meta = QueryMetadata(strategy=self.explanation.strategy, timings_ms=dict(self.explanation.timings_ms))
        if self.explanation.llm is not None:
            used = self.explanation.llm
            meta.llm_calls, meta.llm_cache_hits = used.llm_calls, used.llm_cache_hits
            meta.prompt_tokens, meta.completion_tokens = used.prompt_tokens, used.completion_tokens
            meta.cost_usd, meta.fallbacks = used.cost_usd, list(used.fallbacks)
        return meta

    def document_ids(self) -> list[str]:
        """Documents in rank order, each at the rank of its best chunk."""
        seen: dict[str, None] = {}
        for hit in self.hits:
            seen.setdefault(hit.chunk.document_id, None)
        return list(seen)


MAX_CONTEXT_CHARS = 320  # of title and headings in an index text: a share of any embedding model's window


def index_text(title: str, section: Sequence[str], text: str) -> str:
    """What indexes see for a chunk: its document title and headings give it context, at most
    ``MAX_CONTEXT_CHARS`` of them (cut at a word), so a huge title cannot crowd the chunk out of an embedding
    model's window. No title of the shared evaluation sets reaches the cap (scifact's longest is 300)."""
    context = "\n".join(dict.fromkeys(p for p in (title, *section) if p))
    if len(context) > MAX_CONTEXT_CHARS:
        cut = context[:MAX_CONTEXT_CHARS]
        space = max(cut.rfind(" "), cut.rfind("\n"))
        context = cut[:space] if space > MAX_CONTEXT_CHARS * 3 // 4 else cut
    return f"{context}\n{text}" if context else text
