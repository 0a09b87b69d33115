"""Deletes purge everything derived from a document.

What a delete leaves behind, and where it goes:

- index rows become tombstones at once; ``purge`` (or the next merge into one segment) drops them and the
  vocabulary terms no live row uses, saves that state and deletes older saved states from disk;
- tree summaries and community reports are updated exactly from the change log (a catch-up rewrites what
  quoted the document);
- LLM replies cached as derived from the document's chunk rows or texts (``waypost.llm.cache.derived_from``)
  and embedding-cache entries of its chunk texts are removed right after the delete, unless a live chunk of
  any collection holds the same text (both caches are keyed by text, not by document);
- feedback rows about the document are deleted with it (a replace keeps them: they name spans of the id);
- ``purge`` also sweeps both caches against everything live (catching replaced documents, deletes made
  without this code, and other processes' deletes), turns every freed SQLite page to zeros (``secure_delete``
  is on for every connection of the store and caches), vacuums the store and truncates the WAL files.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from waypost.embeddings.cache import forget_texts, keep_only_texts
from waypost.llm.cache import cached_sources, forget_sources, row_source, text_source

if TYPE_CHECKING:
    from waypost.engine import Engine

logger = logging.getLogger("waypost.purge")


@dataclass
class PurgeReport:
    """What one ``purge`` (or one delete's clean-up) removed."""

    collections: list[str] = field(default_factory=list)
    tombstoned_rows: int = 0  # dead index rows merged away
    vocabulary_terms: int = 0  # index terms no live row used
    index_files: int = 0  # saved index states, segments and vocabularies deleted from disk
    llm_cache_entries: int = 0
    embedding_cache_entries: int = 0
    vacuumed: bool = False
    skipped: list[str] = field(default_factory=list)  # derived structures this engine could not catch up

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _cache_paths(engine: Engine, owned_only: bool) -> tuple[Path | None, Path | None]:
    """The engine's LLM cache and embedding cache files (as ``Engine.llm`` and ``Engine.embedder`` open them),
    each ``None`` when it does not exist. With ``owned_only``, also ``None`` when it lies outside the store
    directory: a cache shared by several stores (``EngineConfig(llm_cache=..., embed_cache=...)``, as the
    evaluation runner does) holds the other stores' entries, which a sweep against this store's live text
    would wipe. A delete's targeted clean-up may touch a shared cache: it removes only text dead here (at worst
    another store embeds it again)."""
    config = engine.config
    store_dir = engine.path.resolve()

    def usable(path: Path) -> Path | None:
        if not path.exists() or (owned_only and not path.resolve().is_relative_to(store_dir)):
            return None
        return path

    return (
        usable(config.llm_cache or engine.path / "llm-cache.sqlite"),
        usable(config.embed_cache or engine.path / "embedding-cache.sqlite"),
    )


def _shared_caches(engine: Engine) -> list[str]:
    config = engine.config
    store_dir = engine.path.resolve()
    return [
        f"the {what} cache {path} is outside the store directory (shared with other stores): not swept"
        for what, path in (("LLM", config.llm_cache), ("embedding", config.embed_cache))
        if path is not None and path.exists() and not path.resolve().is_relative_to(store_dir)
    ]


class DeletedChunks:
    """The chunks of documents about to be deleted, read before they go; ``forget`` after the delete removes
    the cache entries derived from them."""

    def __init__(self, engine: Engine, collection: str, ids: Sequence[str]) -> None:
        self.engine = engine
        self.chunks = list(engine.store.chunk_texts(collection, ids)) if ids else []

    def forget(self) -> PurgeReport:
        report = PurgeReport()
        if not self.chunks:
            return report
        llm_path, embed_path = _cache_paths(self.engine, owned_only=False)
        live = self.engine.store.live_texts(text for _row, text, _index in self.chunks)
        dead = [(row, text, index) for row, text, index in self.chunks if text not in live]
        if llm_path is not None:
            sources = [row_source(row) for row, _t, _i in self.chunks] + [text_source(t) for _r, t, _i in dead]
            report.llm_cache_entries = forget_sources(llm_path, sources)
        if embed_path is not None:
            report.embedding_cache_entries = forget_texts(embed_path, (index for _r, _t, index in dead))
        return report


def purge(engine: Engine, collections: Iterable[str] | None = None, vacuum: bool = True) -> PurgeReport:
    """Force everything a delete leaves behind off the disk now (see the module docstring)."""
    names = [c.name for c in engine.collections()] if collections is None else list(collections)
    report = PurgeReport(collections=names)
    for name in names:
        collection = engine.collection(name)
        consumers = engine.store.consumers(name)
        for what, derived in (("tree", collection.tree()), ("graph", collection.graph())):
            # catching up rewrites what quoted deleted text and lets the change log go
            if derived.get(build=False) is None and what in consumers:
                report.skipped.append(
                    f"the {what} of collection {name!r} was made with other settings (extractor, reports or "
                    f"shape) than this engine's: catch it up with them (waypost {what} build), then purge again"
                )
        counts = engine.indexes.live(name).purge()
        report.tombstoned_rows += counts["tombstoned_rows"]
        report.vocabulary_terms += counts["vocabulary_terms"]
        report.index_files += counts["index_files"]
    _sweep_caches(engine, report)
    compacted = engine.store.compact(vacuum=vacuum)
    if not compacted:  # SQLite: a reader held the WAL file; PostgreSQL: readers held a table past the lock timeout
        report.skipped.append(
            "readers kept the store from being rewritten (freed pages may remain): purge again when idle"
        )
    report.vacuumed = vacuum and compacted
    logger.info("purged %s", report.to_dict())
    return report


def _sweep_caches(engine: Engine, report: PurgeReport) -> None:
    """Remove cache entries derived from anything no chunk of the store holds any more (one scan of the store)."""
    llm_path, embed_path = _cache_paths(engine, owned_only=True)
    live_texts: set[str] = set()

    def index_texts() -> Iterator[str]:
        for _row, text, index in engine.store.chunk_texts():
            live_texts.add(text_source(text))
            yield index

    report.skipped.extend(_shared_caches(engine))
    if embed_path is not None:
        report.embedding_cache_entries += keep_only_texts(embed_path, index_texts())
    elif llm_path is not None:
        for _text in index_texts():
            pass
    if llm_path is None:
        return
    sources = cached_sources(llm_path)
    rows = {int(s.removeprefix("row:")) for s in sources if s.startswith("row:")}
    live_rows = engine.store.live_rows(rows)
    dead = {s for s in sources if s.startswith("text:") and s not in live_texts}
    dead |= {row_source(r) for r in rows - live_rows}
    dead |= {s for s in sources if not s.startswith(("row:", "text:"))}  # no source this code writes
    report.llm_cache_entries += forget_sources(llm_path, dead)
