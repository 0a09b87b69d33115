"""The contracts every backend implements. Small on purpose: one protocol per role."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from waypost.filters.model import Filter
from waypost.types import Chunk, Document, Metadata, RetrievalResult

FloatMatrix = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors."""

    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed_documents(self, texts: Sequence[str]) -> FloatMatrix: ...

    def embed_query(self, text: str) -> FloatMatrix: ...


@dataclass(frozen=True)
class CollectionInfo:
    name: str
    embed_model: str
    embed_dim: int
    generation: int
    documents: int
    chunks: int
    description: str = ""  # what the collection holds, set by the user ("" when none)


@dataclass(frozen=True)
class StoredChunk:
    """A chunk row with what a hit needs to explain itself."""

    row_id: int
    chunk: Chunk
    title: str
    source: str
    metadata: Metadata


@dataclass(frozen=True)
class IngestItem:
    document: Document
    chunks: list[Chunk]
    embeddings: FloatMatrix
    fingerprint: str = ""  # what re-ingest compares: content hash plus chunking settings; default the hash

    @property
    def stored_hash(self) -> str:
        return self.fingerprint or self.document.hash


@dataclass(frozen=True)
class ChunkSnapshot:
    """Every chunk of a collection at one generation, in row order: the input of derived indexes."""

    generation: int
    version: str  # unique across drop/recreate; what derived-index caches are keyed by
    row_ids: npt.NDArray[np.int64]
    document_ids: list[str]
    index_texts: list[str]
    embeddings: FloatMatrix
    metadata: list[Metadata]
    document_texts: list[str]  # title and body of each document, in order of first appearance
    chunk_texts: list[str]
    titles: dict[str, str]
    languages: list[str] = field(default_factory=list)  # per chunk ("" where a store predates languages)
    document_languages: list[str] = field(default_factory=list)  # per document, as document_texts
    sections: list[tuple[str, ...]] = field(default_factory=list)  # per chunk: its section path


@dataclass(frozen=True)
class Feedback:
    """A user's judgement of one hit for one query: the span it covered and how useful it was.

    ``label`` is in [0, 1] (1: used or rated best, 0: rejected); ``kind`` says how it was given ("used",
    "rating", "rejected"). Kept by span, so it still applies after the document is re-chunked."""

    query: str
    document_id: str
    start: int
    end: int
    label: float
    kind: str
    recorded_at: float = 0.0  # seconds since the epoch (0: now, when recorded)

    @property
    def useful(self) -> bool:
        """The hit was used, or rated above 2.5 of 5: it answered the query."""
        return self.label > 0.5


@dataclass(frozen=True)
class ChangeSet:
    """What changed in a collection after generation ``since``, up to ``generation``, read in one snapshot.

    ``removed_rows`` are chunk rows deleted or replaced in that span; ``added`` holds the rows added in
    that span that still exist (a row added and removed again is in ``removed_rows`` only). Applying
    both to a structure that reflects ``since`` makes it reflect ``generation``.
    """

    since: int
    generation: int
    version: str
    removed_rows: npt.NDArray[np.int64]
    added: ChunkSnapshot
    documents: list[tuple[int, str, str]]  # (generation, document id, "add" | "replace" | "delete")

    @property
    def empty(self) -> bool:
        return not self.documents


class DocumentStore(Protocol):
    """The transactional system of record. Every derived index can be rebuilt from it.

    Contracts every backend keeps (``tests/conformance`` checks them; see also ``waypost.store.protocols``):

    - Chunk **row ids** only grow and are never reused within a store, even after the newest rows are
      deleted and the store reopened (SQLite: ``AUTOINCREMENT``). Derived structures key on them.
    - The **version** is ``<uid>-g<generation>-<nonce>``: the uid changes on drop/recreate, the generation
      moves on every committed write or delete, and a fresh random nonce is drawn in each of those commits.
      Equal versions mean the same write history; ``version_incarnation`` gives the uid part.
    - ``snapshot`` and ``changes`` are **one consistent read**: rows, generation and version all come from
      one committed state.
    - **The change log** serves every registered consumer: ``acknowledge`` records what one consumer applied
      and compacts only what *all* consumers applied (the slowest holds the floor); ``forget_consumer``
      releases a consumer's hold; ``changes`` returns ``None`` for a generation below the floor.
    - **Deletes are exact**: deleting ids removes those documents (and their chunks),
      never a document whose id merely shares a prefix or characters with one of them.
    - Lists of ids of **any length** are accepted (a backend batches what its statements limit).
    """

    def create_collection(self, name: str, embed_model: str, embed_dim: int) -> CollectionInfo: ...

    def collection(self, name: str) -> CollectionInfo: ...

    def collections(self) -> list[CollectionInfo]: ...

    def drop_collection(self, name: str) -> None: ...

    def generation(self, name: str) -> int:
        """A counter that moves on every committed change to the collection."""
        ...

    def collection_language(self, name: str) -> str:
        """The language set for a whole collection, or "" (detect per document)."""
        ...

    def set_collection_language(self, name: str, language: str) -> None: ...

    def collection_description(self, name: str) -> str:
        """What the collection holds, as set by the user ("" when never set); one cheap read."""
        ...

    def set_collection_description(self, name: str, description: str) -> None:
        """Set what ``collection(name).description`` says ("" clears it); the generation does not move."""
        ...

    def language_counts(self, name: str) -> dict[str, int]:
        """Chunks per stored language code."""
        ...

    def version(self, name: str) -> str:
        """``<uid>-g<generation>-<nonce>``: names this incarnation of the collection and its write history."""
        ...

    def version_at(self, name: str, generation: int) -> str | None:
        """The version the collection had at ``generation``, for a generation from the log floor to the head;
        ``None`` otherwise. What a saved derived state is checked against before it is caught up."""
        ...

    def document_hashes(self, collection: str, ids: Iterable[str]) -> dict[str, str]: ...

    def write(self, collection: str, items: Sequence[IngestItem]) -> int:
        """Insert or replace documents with their chunks, all in one transaction."""
        ...

    def delete(self, collection: str, ids: Iterable[str]) -> int: ...

    def get_document(self, collection: str, doc_id: str) -> Document | None: ...

    def iter_documents(self, collection: str) -> Iterator[Document]: ...

    def chunks_by_row(self, collection: str, row_ids: Sequence[int]) -> list[StoredChunk]: ...

    def row_ids_of(self, collection: str, chunks: Sequence[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """Row ids of chunks given as (document id, chunk index); chunks that no longer exist are left out."""
        ...

    def snapshot(self, collection: str) -> ChunkSnapshot: ...

    # -- the change log: how derived structures catch up without re-reading the collection --------
    def changes(self, collection: str, since: int) -> ChangeSet | None:
        """Changes after generation ``since``; ``None`` when the log was compacted past it (rebuild)."""
        ...

    def log_floor(self, collection: str) -> int:
        """The oldest generation the log can still catch a consumer up from."""
        ...

    def acknowledge(self, collection: str, consumer: str, generation: int, version: str | None = None) -> None:
        """Record that ``consumer`` has durably applied ``generation``; compacts entries all consumers applied.
        With ``version`` (of the consumer's state), a call about another incarnation of the collection is ignored."""
        ...

    def consumers(self, collection: str) -> dict[str, int]: ...

    # -- measured embedder coverage per language (see waypost.embeddings.coverage) ------------------
    def coverage(self, model: str, scope: str, language: str) -> tuple[float, int, int] | None: ...

    def remember_coverage(
        self, model: str, scope: str, language: str, value: float, samples: int, chunks: int
    ) -> None: ...

    def forget_consumer(self, collection: str, consumer: str) -> None: ...

    # -- feedback on hits (what ``waypost rerank train`` learns from) -----------------------------------
    def record_feedback(self, collection: str, entries: Sequence[Feedback]) -> int: ...

    def feedback(self, collection: str) -> list[Feedback]:
        """Every recorded judgement of the collection, oldest first. Deleting a document deletes the
        feedback about it; replacing it keeps that feedback (it names spans of the same document id)."""
        ...

    # -- purging: what caches derived from deleted text are checked against (see waypost.purge) ---------
    def chunk_texts(
        self, collection: str | None = None, documents: Iterable[str] | None = None
    ) -> Iterator[tuple[int, str, str]]:
        """(row id, chunk text, index text) of every chunk of the store, of one collection, or of some of its
        documents; read in batches, never the whole store at once."""
        ...

    def live_texts(self, texts: Iterable[str]) -> set[str]:
        """Those of ``texts`` that some chunk of any collection still holds."""
        ...

    def live_rows(self, row_ids: Iterable[int]) -> set[int]:
        """Those of ``row_ids`` that are chunks of any collection (row ids are never reused)."""
        ...

    def compact(self, vacuum: bool = False) -> bool:
        """Leave no deleted content in the backend's files: freed space is zeroed or rewritten (``vacuum``),
        journals truncated. False when a concurrent reader kept part of that from happening now."""
        ...

    def close(self) -> None: ...


class Retriever(Protocol):
    """One retrieval strategy. Each lives in its own module under ``waypost.retrieval``."""

    name: str

    def retrieve(self, query: str, k: int = 10, filters: Filter | None = None) -> RetrievalResult: ...


class Reranker(Protocol):
    """A post-retrieval stage: reorders the best ``depth`` hits of any strategy's result (the rest keep their
    order after them). Bound to a search context when made; see ``waypost.post.rerank``."""

    name: str
    depth: int  # how many of the best hits it reorders (the engine retrieves at least this many)

    def rerank(self, query: str, result: RetrievalResult) -> RetrievalResult: ...


# The repositories of derived structures and the version format live beside their backends.
from waypost.store.protocols import (  # noqa: E402
    GraphRecord,
    GraphRepository,
    TreeRecord,
    TreeRepository,
    make_version,
    version_incarnation,
)

__all__ = [
    "ChangeSet",
    "ChunkSnapshot",
    "CollectionInfo",
    "DocumentStore",
    "Embedder",
    "Feedback",
    "FloatMatrix",
    "GraphRecord",
    "GraphRepository",
    "IngestItem",
    "Reranker",
    "Retriever",
    "StoredChunk",
    "TreeRecord",
    "TreeRepository",
    "make_version",
    "version_incarnation",
]
