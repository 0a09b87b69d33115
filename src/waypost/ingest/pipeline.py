"""The ingest pipeline: skip unchanged documents, chunk, embed in large batches, write each batch atomically."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from waypost.base import DocumentStore, Embedder, IngestItem
from waypost.errors import InvalidDocumentError, LoaderError
from waypost.ingest.chunker import Chunker, token_window
from waypost.ingest.loaders import LoadFailure, discover, load_path
from waypost.progress import progress
from waypost.text.language import UNDETERMINED, canonical_language, detector
from waypost.types import Chunk, Document, index_text
from waypost.validation import check_document, clean_text, document_stream


@dataclass
class IngestReport:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    chunks: int = 0
    failures: list[LoadFailure] = field(default_factory=list)
    seconds: float = 0.0
    embed_seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "chunks": self.chunks,
            "failed": [{"source": f.source, "error": f.error} for f in self.failures],
            "seconds": round(self.seconds, 3),
            "embed_seconds": round(self.embed_seconds, 3),
        }


# Told of each batch's stage ("chunking", "embedding", "writing", then "written") with the report so far; it
# may raise to stop the ingest between stages (batches already written stay written).
StageHook = Callable[[str, "IngestReport"], None]


def documents_from_paths(paths: Iterable[str | Path], failures: list[LoadFailure]) -> Iterator[Document]:
    """Documents of every file under ``paths``; a bad file is recorded in ``failures`` and skipped."""
    for path, root in discover([Path(p) for p in paths]):
        try:
            for item in load_path(path, root):
                if isinstance(item, LoadFailure):
                    failures.append(item)
                else:
                    yield item
        except LoaderError as exc:
            failures.append(LoadFailure(str(path), str(exc)))


def title_chunk(doc: Document) -> list[Chunk]:
    """A title-only document (common in BEIR corpora) is one empty-span chunk indexed by its title."""
    return [Chunk(doc.id, 0, "", 0, 0, 0)] if doc.title.strip() else []


EMPTY_DOCUMENT = "document has neither text nor title; any stored version is kept"


def duplicate_message(doc_id: str, first: str) -> str:
    where = f" (from {first})" if first != doc_id else ""
    is_file = first != doc_id and first.endswith(doc_id)
    hint = " (a file's id is its path inside the folder given: two folders can hold it)" * is_file
    return f"document id {doc_id!r} came earlier in this add{where}: the first is kept, this one skipped{hint}"


def _source_of(doc: Document) -> str:
    source, doc_id = getattr(doc, "source", ""), getattr(doc, "id", "")
    return clean_text(source if isinstance(source, str) and source else str(doc_id))


class Ingestor:
    def __init__(
        self,
        store: DocumentStore,
        embedder: Embedder,
        chunker: Chunker,
        batch_docs: int = 256,
        language: str = "",
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.chunker = chunker
        if chunker.window is None:  # chunks the model would truncate are cut further (see Chunker)
            window = token_window(embedder)
            if window is not None:
                self.chunker = Chunker(chunker.max_tokens, window, index_text)
        self.batch_docs = batch_docs
        self._on_stage: StageHook | None = None
        self.language = language  # the collection's language; "" detects each document's

    def ingest(
        self,
        collection: str,
        documents: Iterable[Document],
        report: IngestReport | None = None,
        show_progress: bool = False,
        total: int | None = None,
        on_stage: StageHook | None = None,
    ) -> IngestReport:
        report = report or IngestReport()
        self._on_stage = on_stage
        started = time.perf_counter()
        with progress(show_progress) as bar:
            task = bar.add_task("ingesting", total=total) if bar is not None else None
            batch: list[Document] = []
            first_source: dict[str, str] = {}  # each id taken in this call, and where it came from
            for given in document_stream(documents):
                try:
                    doc = check_document(given)
                except InvalidDocumentError as exc:  # refused alone; the rest of the batch goes on
                    report.failures.append(LoadFailure(_source_of(given), str(exc)))
                    continue
                source = _source_of(doc)
                if not doc.text.strip() and not doc.title.strip():  # refused here, so it takes no id from a later copy
                    report.failures.append(LoadFailure(source, EMPTY_DOCUMENT))
                    continue
                if doc.id in first_source:  # two files of one name in two folders, a JSONL line repeated
                    report.failures.append(LoadFailure(source, duplicate_message(doc.id, first_source[doc.id])))
                    continue
                first_source[doc.id] = source
                batch.append(doc)
                if len(batch) >= self.batch_docs:
                    self._flush(collection, batch, report)
                    if bar is not None and task is not None:
                        bar.advance(task, len(batch))
                    batch = []
            if batch:
                self._flush(collection, batch, report)
                if bar is not None and task is not None:
                    bar.advance(task, len(batch))
        report.seconds += time.perf_counter() - started
        return report

    def fingerprint(self, doc: Document) -> str:
        """Content hash plus chunking settings (and a language set by hand): changing either re-indexes."""
        declared = canonical_language(doc.language or self.language)
        return f"{doc.hash}:{self.chunker.signature}" + (f":lang={declared}" if declared else "")

    def with_languages(
        self, collection: str, docs: list[Document], per_doc: list[list[Chunk]]
    ) -> tuple[list[Document], list[list[Chunk]]]:
        """Each chunk's language: as declared (document, then collection), else detected. A document
        too short to tell takes the language most documents of its batch have; a chunk of a longer
        document that reads clearly as another language keeps its own (a section in another language).
        The document keeps only a declared language, so reading it back and adding it again is a no-op."""
        detect = detector().detect
        resolved: list[str] = []
        for doc in docs:
            declared = canonical_language(doc.language or self.language)
            resolved.append(declared or detect(f"{doc.title}\n{doc.text}"))
        confident = [lang for lang in resolved if lang != UNDETERMINED]
        if confident:
            fallback = max(set(confident), key=confident.count)
        elif UNDETERMINED in resolved:  # a batch of short texts: the language the collection mostly has
            counts = self.store.language_counts(collection)
            counts.pop(UNDETERMINED, None)
            counts.pop("", None)
            fallback = max(counts, key=lambda k: counts[k]) if counts else ""
        else:
            fallback = UNDETERMINED
        out_docs: list[Document] = []
        out_chunks: list[list[Chunk]] = []
        for doc, chunks, language in zip(docs, per_doc, resolved, strict=True):
            declared = canonical_language(doc.language or self.language)
            if language == UNDETERMINED:  # nothing else known: the likeliest reading of the text itself
                language = fallback or detect(f"{doc.title}\n{doc.text}", guess=True)
            if not declared and len(chunks) > 1:
                own = [detect(c.text) for c in chunks]
                chunks = [
                    replace(c, language=language if f == UNDETERMINED else f) for c, f in zip(chunks, own, strict=True)
                ]
            else:
                chunks = [replace(c, language=language) for c in chunks]
            out_docs.append(replace(doc, language=canonical_language(doc.language)))
            out_chunks.append(chunks)
        return out_docs, out_chunks

    def _stage(self, name: str, report: IngestReport) -> None:
        if self._on_stage is not None:
            self._on_stage(name, report)

    def _flush(self, collection: str, batch: list[Document], report: IngestReport) -> None:
        self._stage("chunking", report)
        known = self.store.document_hashes(collection, [d.id for d in batch])  # ids are unique in one add
        changed = [d for d in batch if known.get(d.id) != self.fingerprint(d)]
        report.unchanged += len(batch) - len(changed)
        if not changed:
            self._stage("written", report)
            return
        per_doc = [self.chunker.chunk(d.id, d.text, d.title) or title_chunk(d) for d in changed]
        empty = {d.id for d, cs in zip(changed, per_doc, strict=True) if not cs}
        if empty:
            report.failures.extend(LoadFailure(d.source or d.id, EMPTY_DOCUMENT) for d in changed if d.id in empty)
            per_doc = [cs for d, cs in zip(changed, per_doc, strict=True) if d.id not in empty]
            changed = [d for d in changed if d.id not in empty]
        fingerprints = [self.fingerprint(d) for d in changed]
        changed, per_doc = self.with_languages(collection, changed, per_doc)
        texts = [index_text(d.title, c.section, c.text) for d, cs in zip(changed, per_doc, strict=True) for c in cs]
        self._stage("embedding", report)
        t0 = time.perf_counter()
        vectors = self.embedder.embed_documents(texts)
        report.embed_seconds += time.perf_counter() - t0
        items: list[IngestItem] = []
        offset = 0
        for doc, chunks, fingerprint in zip(changed, per_doc, fingerprints, strict=True):
            items.append(IngestItem(doc, chunks, vectors[offset : offset + len(chunks)], fingerprint))
            offset += len(chunks)
        self._stage("writing", report)
        self.store.write(collection, items)
        report.added += sum(1 for d in changed if d.id not in known)
        report.updated += sum(1 for d in changed if d.id in known)
        report.chunks += offset
        self._stage("written", report)
