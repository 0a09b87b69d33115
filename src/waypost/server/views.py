"""Library results as API bodies."""

from __future__ import annotations

from waypost.base import CollectionInfo
from waypost.route.base import CollectionChoice
from waypost.server.models import (
    CollectionChoiceOut,
    CollectionOut,
    DocumentOut,
    DocumentSummary,
    HitOut,
    JobOut,
    RetrieveOut,
)
from waypost.store.control import JobRecord
from waypost.types import Document, Hit, RetrievalResult


def hit_out(rank: int, hit: Hit) -> HitOut:
    return HitOut(
        rank=rank,
        chunk_id=hit.chunk.id,
        collection=hit.provenance.collection,
        document_id=hit.chunk.document_id,
        title=hit.provenance.document_title,
        section=list(hit.chunk.section),
        text=hit.chunk.text,
        span=[hit.chunk.start, hit.chunk.end],
        score=float(hit.score),
        strategy=hit.strategy,
        metadata=dict(hit.metadata),
        passage=hit.passage.to_dict() if hit.passage is not None else None,
    )


def hits_out(hits: list[Hit]) -> list[HitOut]:
    return [hit_out(i, h) for i, h in enumerate(hits, start=1)]


def choice_out(choice: CollectionChoice) -> CollectionChoiceOut:
    return CollectionChoiceOut.model_validate(choice.to_dict())


def collection_out(info: CollectionInfo, language: str) -> CollectionOut:
    return CollectionOut(
        name=info.name,
        description=info.description,
        language=language,
        documents=info.documents,
        chunks=info.chunks,
        embed_model=info.embed_model,
        generation=info.generation,
    )


def document_summary(doc: Document) -> DocumentSummary:
    return DocumentSummary(
        id=doc.id, title=doc.title, source=doc.source, language=doc.language, chars=len(doc.text), metadata=doc.metadata
    )


def document_out(doc: Document) -> DocumentOut:
    return DocumentOut(**document_summary(doc).model_dump(), text=doc.text)


def job_out(job: JobRecord) -> JobOut:
    return JobOut.model_validate(job.to_dict())


def retrieve_out(
    result: RetrievalResult,
    collections: list[str],
    latency_ms: float,
    choice: CollectionChoiceOut | None = None,
    explain: bool = False,
) -> RetrieveOut:
    """A retrieval's response: ``collections`` are those the hits come from, the first one leading."""
    return RetrieveOut(
        collection=collections[0],
        collections=collections,
        collection_choice=choice,
        strategy=result.explanation.strategy,
        hits=hits_out(result.hits),
        route=result.explanation.route,
        explanation=result.explanation.to_dict() if explain else None,
        latency_ms=round(latency_ms, 3),
    )
