"""The public entry point: open a store directory, then add, delete and retrieve per collection."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from waypost.base import CollectionInfo, Embedder
from waypost.collection import Collection, check_language, check_request
from waypost.embeddings.coverage import CoverageBook
from waypost.embeddings.factory import DEFAULT_MODEL, make_embedder
from waypost.errors import CollectionNotFoundError, InvalidInputError, ModelMismatchError, WaypostError
from waypost.filters.model import Filter
from waypost.graph.communities import CommunityReporter, ExtractiveReporter
from waypost.graph.extract import DEFAULT_SPACY_MODEL, SpacyExtractor
from waypost.graph.graph import GraphConfig
from waypost.graph.live import GraphCache
from waypost.graph.model import Extractor
from waypost.hierarchy.live import TreeCache
from waypost.hierarchy.summarize import ExtractiveSummarizer, LLMSummarizer, Summarizer
from waypost.hierarchy.tree import TreeConfig
from waypost.index.cache import IndexCache
from waypost.index.dense import EXACT_DENSE_BELOW
from waypost.index.set import MergePolicy
from waypost.llm.accounting import PriceTable
from waypost.llm.base import LLMProvider
from waypost.lru import DEFAULT_OPEN_COLLECTIONS
from waypost.purge import PurgeReport
from waypost.retrieval.fusion import FusionConfig
from waypost.route.base import CollectionSelector
from waypost.route.cache import DEFAULT_MAX_ENTRIES, DEFAULT_TTL_S, QueryCache
from waypost.route.config import RouterConfig
from waypost.route.telemetry import RouteTelemetry
from waypost.store.backend import is_database_url, open_backend, working_directory
from waypost.types import RetrievalResult
from waypost.validation import collection_name

if TYPE_CHECKING:
    from waypost.route.router import Router

DEFAULT_COLLECTION = "default"


@dataclass
class EngineConfig:
    embed_model: str | None = None  # None: the model the collection was built with, else the default
    chunk_tokens: int = 200
    fusion: FusionConfig = field(default_factory=FusionConfig)
    approximate_dense: bool = False  # True: dense search by HNSW candidates at every size (tests, experiments)
    exact_dense_below: int = EXACT_DENSE_BELOW  # chunks: exact dense scores below, HNSW candidates from here on
    merge_policy: MergePolicy = field(default_factory=MergePolicy)  # when index segments merge and are saved
    background_index_work: bool = True  # merges and saves on a worker thread (False: inline, for tests)
    embed_cache: Path | None = None  # None: <store>/embedding-cache.sqlite
    api_key: str | None = None
    llm: str = "none"  # none | smollm2 | gguf:PATH | openai:MODEL@URL
    llm_timeout: float = 60.0
    llm_filters: bool = False  # let the LLM extract metadata filters (rules stay the fallback)
    llm_cache: Path | None = None  # None: <store>/llm-cache.sqlite
    prices: PriceTable = field(default_factory=PriceTable)
    tree: TreeConfig | None = None  # the RAPTOR tree's shape (None: a stored tree keeps its own; new: default)
    tree_summarizer: str = "extractive"  # extractive (no LLM) | llm (the configured LLM writes summaries)
    graph_extractor: str = "spacy"  # spacy (offline NER and noun phrases) | llm (OpenIE triples from the LLM)
    graph_reports: str = "extractive"  # extractive (no LLM) | llm (the configured LLM writes community reports)
    spacy_model: str = DEFAULT_SPACY_MODEL  # an installed spaCy pipeline package
    graph: GraphConfig | None = None  # synonym, community and drift settings (None: defaults)
    max_open_collections: int = DEFAULT_OPEN_COLLECTIONS  # live indexes, trees and graphs kept in memory (LRU)
    query_cache_entries: int = DEFAULT_MAX_ENTRIES  # the query cache (``waypost.route.cache``): entries kept
    query_cache_ttl_s: float = DEFAULT_TTL_S  # and for how long
    collection_selector: str = "embedding"  # how search() chooses collections: embedding | learned:PATH | llm
    router: RouterConfig = field(default_factory=RouterConfig)  # how strategy="auto" picks a pipeline
    store: str | None = None  # a postgresql:// URL (path is then the local working directory); None: SQLite


class Engine:
    """One store directory: a SQLite system of record (or, with ``config.store``, a PostgreSQL one) plus derived
    indexes and an embedding cache."""

    def __init__(self, path: str | Path, config: EngineConfig | None = None) -> None:
        """``path``: the store directory, or a ``postgresql://`` URL (the same as ``config.store``; the local
        working directory is then ``~/.cache/waypost/pg/<digest of the URL>``)."""
        config = config or EngineConfig()
        if isinstance(path, Path) and str(path).startswith(("postgresql:/", "postgres:/")):
            raise InvalidInputError("a database URL is given to Engine as text: Engine('postgresql://...'), not a Path")
        if is_database_url(path):
            url = str(path)
            if config.store is not None and config.store != url:
                raise InvalidInputError("Engine got two stores: a database URL as its path and another as config.store")
            config, path = replace(config, store=url), working_directory(url)
        self.path = Path(path)
        self.config = config
        self.backend = open_backend(self.path, self.config.store)
        self.store = self.backend.documents
        self.indexes = IndexCache(
            self.store,
            self.path / "indexes",
            self.config.approximate_dense,
            self.config.merge_policy,
            background=self.config.background_index_work,
            max_open=self.config.max_open_collections,
            exact_below=self.config.exact_dense_below,
        )
        open_max = self.config.max_open_collections
        self.trees = TreeCache(
            self.store, self.backend.trees, self.embedder, self._summarizer, self.config.tree, max_open=open_max
        )
        self.graphs = GraphCache(
            self.store,
            self.backend.graphs,
            self.embedder,
            self._graph_extractor,
            self._graph_reporter,
            config=self.config.graph,
            max_open=open_max,
        )
        self._embedders: dict[str, Embedder] = {}
        self._coverage: dict[str, CoverageBook] = {}
        self._lock = threading.Lock()
        self._llm: LLMProvider | None = None
        self._llm_ready = False
        self.query_cache = QueryCache(self.config.query_cache_entries, self.config.query_cache_ttl_s)
        self.telemetry = RouteTelemetry(self.backend.routes)  # routed queries, written in batches
        self._collection_selector: CollectionSelector | None = None
        self._router: Router | None = None

    def router(self) -> Router:
        """What ``strategy="auto"`` hands queries to (made from ``config.router`` on first use; replace it
        with ``engine.use_router(Router(...))`` to add a planner, a corrective loop, a cache or telemetry)."""
        with self._lock:
            if self._router is None:
                from waypost.route.router import Router

                self._router = Router.from_engine(self)
            return self._router

    def use_router(self, router: Router) -> None:
        with self._lock:
            self._router = router

    @property
    def llm_configured(self) -> bool:
        """Whether an LLM is set, without loading it."""
        return self._llm is not None if self._llm_ready else self.config.llm != "none"

    def llm(self) -> LLMProvider | None:
        """The configured LLM (cached on disk), or ``None`` for the LLM-free paths."""
        with self._lock:
            if not self._llm_ready:
                from waypost.llm.factory import make_llm

                cache = self.config.llm_cache or self.path / "llm-cache.sqlite"
                self._llm = make_llm(self.config.llm, cache, self.config.api_key, self.config.llm_timeout)
                self._llm_ready = True
            return self._llm

    def _llm_choice(self, setting: str, value: str, offline: str) -> LLMProvider | None:
        """None for a setting's offline choice, the engine's LLM for ``llm``; else a clear error."""
        if value == offline:
            return None
        if value != "llm":
            raise WaypostError(f"{setting} must be '{offline}' or 'llm', not {value!r}")
        llm = self.llm()
        if llm is None:
            raise WaypostError(f"{setting}='llm' needs an LLM: set llm (for example 'smollm2')")
        return llm

    def _summarizer(self, collection: str) -> Summarizer:
        extractive = ExtractiveSummarizer(self.store.collection_language(collection) or "en")
        llm = self._llm_choice("tree_summarizer", self.config.tree_summarizer, "extractive")
        return extractive if llm is None else LLMSummarizer(llm, extractive, self.config.prices)

    def _graph_extractor(self) -> Extractor:
        offline = SpacyExtractor(self.config.spacy_model)
        llm = self._llm_choice("graph_extractor", self.config.graph_extractor, "spacy")
        if llm is None:
            return offline
        from waypost.graph.llm_extract import LLMExtractor

        return LLMExtractor(llm, offline, self.config.prices)

    def _graph_reporter(self) -> CommunityReporter:
        extractive = ExtractiveReporter()
        llm = self._llm_choice("graph_reports", self.config.graph_reports, "extractive")
        if llm is None:
            return extractive
        from waypost.graph.llm_report import LLMReporter

        return LLMReporter(llm, extractive, self.config.prices)

    def use_llm(self, llm: LLMProvider | None) -> None:
        """Use an already-built provider (or none) for this engine's LLM-backed steps."""
        with self._lock:
            self._llm, self._llm_ready = llm, True

    def close(self) -> None:
        """Finish background index work, save what is unsaved, then close the store."""
        try:
            self.telemetry.close()
            self.indexes.close()
        finally:
            self.backend.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- models -----------------------------------------------------------------------------
    def embedder(self, model: str) -> Embedder:
        with self._lock:
            if model not in self._embedders:
                cache = self.config.embed_cache or self.path / "embedding-cache.sqlite"
                self._embedders[model] = make_embedder(model, cache, self.config.api_key)
            return self._embedders[model]

    def coverage(self, embedder: Embedder) -> CoverageBook:
        """How well ``embedder`` serves each language (declared, remembered in the store, or measured)."""
        with self._lock:
            book = self._coverage.get(embedder.model_id)
            if book is None or book.embedder is not embedder:
                book = CoverageBook(self.store, embedder)
                self._coverage[embedder.model_id] = book
            return book

    def register_embedder(self, embedder: Embedder) -> None:
        """Use an already-loaded embedder for its model id (shares one model across engines)."""
        with self._lock:
            self._embedders[embedder.model_id] = embedder

    def _model_for(self, info: CollectionInfo | None) -> str:
        wanted = self.config.embed_model
        if info is None:
            return wanted or DEFAULT_MODEL
        if wanted is not None and wanted != info.embed_model:
            raise ModelMismatchError(
                f"collection {info.name!r} was built with embedding model {info.embed_model!r} "
                f"(dimension {info.embed_dim}), not {wanted!r}; re-ingest into a new collection to switch models"
            )
        return info.embed_model

    # -- collections ------------------------------------------------------------------------
    def collections(self) -> list[CollectionInfo]:
        return self.store.collections()

    def collection(
        self, name: str = DEFAULT_COLLECTION, create: bool = False, language: str | None = None
    ) -> Collection:
        """``language`` (ISO 639-1, e.g. "th") sets the whole collection's language instead of detecting it
        per document; "" goes back to detection. A name is letters, digits, ``_ . -`` and spaces (it names a
        folder of the store)."""
        name = collection_name(name, new=False)
        code = check_language(language) if language is not None else None  # before anything is created
        try:
            info: CollectionInfo | None = self.store.collection(name)
        except CollectionNotFoundError:
            if not create:
                raise
            collection_name(name)  # a new name follows the strict rule
            info = None
        model = self._model_for(info)
        if info is None:
            embedder = self.embedder(model)
            self.store.create_collection(name, embedder.model_id, embedder.dimension)
        if code is not None:
            self.store.set_collection_language(name, code)
        return Collection(self, name, model)

    def collection_selector(self) -> CollectionSelector:
        """What ``search`` chooses collections with (``EngineConfig.collection_selector``), made once."""
        with self._lock:
            selector = self._collection_selector
        if selector is None:
            from waypost.route.search import make_collection_selector

            selector = make_collection_selector(self, self.config.collection_selector)
            with self._lock:
                self._collection_selector = self._collection_selector or selector
                selector = self._collection_selector
        return selector

    def use_collection_selector(self, selector: CollectionSelector) -> None:
        """Choose collections with ``selector`` from now on (for example one with other weights)."""
        with self._lock:
            self._collection_selector = selector

    def search(
        self,
        query: str,
        k: int = 10,
        collections: Sequence[str] | None = None,
        strategy: str = "auto",
        filters: Filter | None = None,
    ) -> RetrievalResult:
        """Search the named collections, or those ``auto`` chooses (one, or several merged: see
        ``route.search.fuse_collections``); the explanation says which were chosen, by what, with what
        confidence and why."""
        from waypost.route.search import search

        return search(self, query, k, collections, strategy, filters)

    def purge(self, vacuum: bool = True) -> PurgeReport:
        """``Collection.purge`` for every collection (see ``waypost.purge``)."""
        from waypost.purge import purge

        return purge(self, vacuum=vacuum)

    def drop(self, name: str) -> None:
        name = collection_name(name, new=False)  # never a path: the index folder of this name is removed
        self.store.drop_collection(name)
        self.telemetry.flush()  # its routes go with it, buffered ones too
        self.backend.routes.clear(name)
        self.indexes.forget(name)
        self.trees.forget(name)
        self.graphs.forget(name)


def open_store(path: str | Path, config: EngineConfig | None = None) -> Engine:
    return Engine(path, config)


__all__ = [
    "DEFAULT_COLLECTION",
    "Collection",
    "Engine",
    "EngineConfig",
    "check_language",
    "check_request",
    "open_store",
]
