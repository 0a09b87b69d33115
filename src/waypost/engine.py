"""The public entry point: open a store directory, then add, delete and retrieve per collection."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from waypost.answer.model import Answer, AnswerStream
from waypost.answer.service import AnswerService
from waypost.base import CollectionInfo, Embedder, Feedback, Reranker
from waypost.context import SearchContext
from waypost.embeddings.coverage import CoverageBook
from waypost.embeddings.factory import DEFAULT_MODEL, make_embedder
from waypost.errors import CollectionNotFoundError, InvalidInputError, ModelMismatchError, WaypostError
from waypost.filters.extract import FilterExtractor
from waypost.filters.model import Filter, check_filter
from waypost.graph.communities import CommunityReporter, ExtractiveReporter
from waypost.graph.extract import DEFAULT_SPACY_MODEL, SpacyExtractor
from waypost.graph.graph import GraphConfig
from waypost.graph.live import GraphCache, LiveGraph
from waypost.graph.model import Extractor
from waypost.hierarchy.live import LiveTree, TreeCache
from waypost.hierarchy.summarize import ExtractiveSummarizer, LLMSummarizer, Summarizer
from waypost.hierarchy.tree import TreeConfig
from waypost.index.set import IndexCache, MergePolicy
from waypost.ingest.chunker import Chunker
from waypost.ingest.pipeline import Ingestor, IngestReport, documents_from_paths
from waypost.llm.accounting import PriceTable
from waypost.llm.base import LLMProvider
from waypost.lru import DEFAULT_OPEN_COLLECTIONS
from waypost.post.passages import PassageAssembler, PassageConfig
from waypost.purge import PurgeReport
from waypost.retrieval.fusion import FusionConfig
from waypost.retrieval.metadata import QueryFilterExtractor
from waypost.retrieval.registry import make_retriever
from waypost.retrieval.registry import strategy as strategy_spec
from waypost.route.base import AUTO, CollectionSelector
from waypost.route.cache import DEFAULT_MAX_ENTRIES, DEFAULT_TTL_S, QueryCache
from waypost.route.config import RouterConfig
from waypost.route.telemetry import RouteTelemetry
from waypost.store.backend import open_backend
from waypost.types import Document, Hit, RetrievalResult
from waypost.validation import collection_name, id_list, name_string, one_id, positive_int, query_text, string_mapping

if TYPE_CHECKING:
    from waypost.route.router import Router

DEFAULT_COLLECTION = "default"


@dataclass
class EngineConfig:
    embed_model: str | None = None  # None: the model the collection was built with, else the default
    chunk_tokens: int = 200
    fusion: FusionConfig = field(default_factory=FusionConfig)
    approximate_dense: bool = False
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


class Engine:
    """One store directory: a SQLite system of record plus derived indexes and an embedding cache."""

    def __init__(self, path: str | Path, config: EngineConfig | None = None) -> None:
        self.path = Path(path)
        self.config = config or EngineConfig()
        self.backend = open_backend(self.path)
        self.store = self.backend.documents
        self.indexes = IndexCache(
            self.store,
            self.path / "indexes",
            self.config.approximate_dense,
            self.config.merge_policy,
            background=self.config.background_index_work,
            max_open=self.config.max_open_collections,
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
        if language is not None:
            self.store.set_collection_language(name, check_language(language))
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
        """Search the named collections, or those ``auto`` chooses (one, or several fused by reciprocal rank);
        the explanation says which were chosen, by what, with what confidence and why."""
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


class Collection:
    def __init__(self, engine: Engine, name: str, model: str) -> None:
        self.engine = engine
        self.name = name
        self.model = model
        self._checked: Embedder | None = None

    @property
    def info(self) -> CollectionInfo:
        return self.engine.store.collection(self.name)

    @property
    def embedder(self) -> Embedder:
        embedder = self.engine.embedder(self.model)
        if self._checked is not embedder:  # checked once per embedder: counting chunks is not free
            info = self.info
            if embedder.model_id != info.embed_model or embedder.dimension != info.embed_dim:
                raise ModelMismatchError(
                    f"collection {self.name!r} holds {info.embed_model!r} vectors of dimension {info.embed_dim}; "
                    f"the configured embedder is {embedder.model_id!r} ({embedder.dimension})"
                )
            self._checked = embedder
        return embedder

    def describe(self, text: str) -> None:
        """Say what this collection holds (a sentence or two; "" clears it): ``auto`` reads it to choose
        collections. Not a content change: cached results stay valid."""
        if not isinstance(text, str):
            raise InvalidInputError(f"a collection description is text, not {type(text).__name__}")
        self.engine.store.set_collection_description(self.name, " ".join(text.split()))

    def _ingestor(self) -> Ingestor:
        return Ingestor(
            self.engine.store,
            self.embedder,
            Chunker(self.engine.config.chunk_tokens),
            language=self.engine.store.collection_language(self.name),
        )

    def add(self, documents: Iterable[Document], show_progress: bool = False, total: int | None = None) -> IngestReport:
        """Insert new documents, replace changed ones, skip unchanged ones (by content hash).

        ``documents`` is an iterable of ``Document`` (a single one or a string is refused). Lone surrogates
        in any text become U+FFFD; a document with a field of the wrong type, or NaN or Infinity in its
        metadata, is skipped and named in the report's ``failures`` while the rest is ingested."""
        return self._ingestor().ingest(self.name, documents, show_progress=show_progress, total=total)

    def add_paths(self, paths: Iterable[str | Path], show_progress: bool = False) -> IngestReport:
        """Load every supported file under ``paths`` (a list: one path alone is refused, as ids are); bad
        files are reported, the rest still ingested."""
        if isinstance(paths, (str, bytes, Path)):
            raise InvalidInputError(f"paths must be a list of paths, not the single path {paths!r}; pass [{paths!r}]")
        report = IngestReport()
        docs = documents_from_paths(paths, report.failures)
        return self._ingestor().ingest(self.name, docs, report=report, show_progress=show_progress)

    def delete(self, ids: Iterable[str]) -> int:
        """Delete documents by id, with their feedback and the cache entries derived from their text (see
        ``waypost.purge``); returns how many existed. ``ids`` is a list (or other iterable) of ids: a bare
        string is refused with ``InvalidInputError`` (use ``delete(["doc1"])``), never read as one id per
        character."""
        from waypost.purge import DeletedChunks

        ids = id_list(ids)
        deleted = DeletedChunks(self.engine, self.name, ids)  # read before the rows go
        removed = self.engine.store.delete(self.name, ids)
        deleted.forget()
        return removed

    def purge(self, vacuum: bool = True) -> PurgeReport:
        """Force off the disk now what deletes left: tombstoned index rows, unused terms, old index states,
        cache entries of text no chunk holds; then vacuum the store and truncate its WAL."""
        from waypost.purge import purge

        return purge(self.engine, [self.name], vacuum=vacuum)

    def get(self, doc_id: str) -> Document | None:
        return self.engine.store.get_document(self.name, one_id(doc_id))

    def documents(self) -> Iterable[Document]:
        return self.engine.store.iter_documents(self.name)

    def context(self) -> SearchContext:
        embedder = self.embedder
        return SearchContext(
            self.name,
            self.engine.indexes.get(self.name),
            embedder,
            self.engine.store,
            self.engine.coverage(embedder),
            self.engine.trees.live(self.name),
            self.engine.graphs.live(self.name),
            self.engine.llm,
            self.engine.config.prices,
            self.query_filter_extractor if self.engine.config.llm_filters else None,
        )

    def tree(self) -> LiveTree:
        """This collection's RAPTOR tree (``get()`` builds it on first use; ``rebuild()``, ``status()``)."""
        return self.engine.trees.live(self.name)

    def graph(self) -> LiveGraph:
        """This collection's knowledge graph (``get()`` builds it on first use; ``rebuild()``, ``status()``)."""
        return self.engine.graphs.live(self.name)

    def extractor(self) -> FilterExtractor:
        """The rule-based filter extractor over this collection's current fields and values."""
        return self.engine.indexes.get(self.name).extractor()

    def query_filter_extractor(self) -> QueryFilterExtractor:
        """What the metadata strategy uses: the LLM (falling back to rules) when ``llm_filters`` is on, else rules."""
        llm = self.engine.llm() if self.engine.config.llm_filters else None
        if llm is None:
            return self.extractor()
        from waypost.filters.llm_extract import LLMFilterExtractor

        return LLMFilterExtractor(llm, self.extractor(), self.engine.config.prices)

    def answerer(
        self,
        params: Mapping[str, object] | None = None,
        passages: PassageConfig | None = None,
        rerank: str | Reranker | None = None,
    ) -> AnswerService:
        return AnswerService(
            lambda q, strategy, k: self.retrieve(q, strategy, k, params=params, passages=passages, rerank=rerank),
            self.engine.llm(),
            self.engine.config.prices,
        )

    def answer(
        self,
        question: str,
        strategy: str = AUTO,
        k: int = 5,
        params: Mapping[str, object] | None = None,
        passages: PassageConfig | None = None,
        rerank: str | Reranker | None = None,
    ) -> Answer:
        """Retrieve, then answer with citations (LLM if configured and healthy, else extractive); with
        ``passages`` the citations point at passage spans."""
        question, strategy, k, params = check_request(question, strategy, k, params, rerank, passages)
        return self.answerer(params, passages, rerank).answer(question, strategy, k)

    def stream_answer(
        self,
        question: str,
        strategy: str = AUTO,
        k: int = 5,
        params: Mapping[str, object] | None = None,
        passages: PassageConfig | None = None,
        rerank: str | Reranker | None = None,
    ) -> AnswerStream:
        question, strategy, k, params = check_request(question, strategy, k, params, rerank, passages)
        return self.answerer(params, passages, rerank).stream(question, strategy, k)

    def retrieve(
        self,
        query: str,
        strategy: str = "hybrid",
        k: int = 10,
        filters: Filter | None = None,
        fusion: FusionConfig | None = None,
        params: Mapping[str, object] | None = None,
        passages: PassageConfig | None = None,
        rerank: str | Reranker | None = None,
        *,
        context: SearchContext | None = None,
    ) -> RetrievalResult:
        """``strategy="auto"``: the engine's router picks the pipeline (see ``waypost.route.router``);
        ``params``: the strategy's own parameters (see ``waypost strategies``), e.g. ``{"budget": 1000}``;
        ``passages``: assemble the hits into passages (``PassageConfig()``: grow, 1,024 tokens);
        ``rerank``: reorder the best hits first (``"default"``, a profile name, ``"cross-encoder:PATH"``,
        ``"llm"``; see ``waypost.post.rerank.factory``), or a ``Reranker`` already made; ``context``: a
        search context of this collection to reuse (its query vector and cached scores)."""
        query, strategy, k, params = check_request(query, strategy, k, params, rerank, passages)
        if filters is not None:
            check_filter(filters)
        if fusion is not None and not isinstance(fusion, FusionConfig):
            raise InvalidInputError(f"fusion must be a FusionConfig, got {type(fusion).__name__}")
        if strategy == AUTO:
            return self.engine.router().retrieve(self, query, k, filters, fusion, passages, rerank, params)
        ctx = context or self.context()
        fusion = fusion or self.engine.config.fusion
        reranker = self.reranker(rerank, ctx) if isinstance(rerank, str) else rerank
        want = max(k, reranker.depth) if reranker is not None else k
        result = make_retriever(strategy, ctx, fusion, params).retrieve(query, want, filters)
        if reranker is not None:
            result = reranker.rerank(query, result)
        if passages is not None:
            result = PassageAssembler(ctx, passages).assemble(query, result)
        result.hits = result.hits[:k]
        return result

    def feedback(self, query: str, hit: Hit | str, kind: str = "used", rating: float | None = None) -> Feedback:
        """Record that a hit (or a chunk id such as ``"doc#3"``) was used, rejected, or rated (0 to 5) for
        ``query``; ``waypost rerank train --feedback`` learns from these."""
        if not isinstance(query, str) or not query.strip():
            raise InvalidInputError("feedback needs the query the hit was returned for")
        if not isinstance(hit, (Hit, str)):
            raise InvalidInputError(f"feedback is about a Hit or a chunk id such as 'doc#3', not {hit!r}")
        if rating is not None and (isinstance(rating, bool) or not isinstance(rating, (int, float))):
            raise InvalidInputError(f"a rating is a number from 0 to 5, got {rating!r}")
        if kind not in ("used", "rejected", "rating"):
            raise WaypostError(f"feedback kind must be used, rejected or rating, not {kind!r}")
        if kind == "rating" and (rating is None or not 0.0 <= rating <= 5.0):
            raise WaypostError(f"a rating must be between 0 and 5, got {rating!r}")
        if isinstance(hit, Hit):
            document_id, start, end = hit.chunk.document_id, hit.chunk.start, hit.chunk.end
        else:
            document_id, _sep, index = hit.rpartition("#")
            if not document_id or not index.isdigit():
                raise WaypostError(f"a chunk id looks like DOCUMENT#INDEX, not {hit!r}")
            rows = self.engine.store.row_ids_of(self.name, [(document_id, int(index))])
            found = self.engine.store.chunks_by_row(self.name, list(rows.values()))
            if not found:
                raise WaypostError(f"no chunk {hit!r} in collection {self.name!r}")
            start, end = found[0].chunk.start, found[0].chunk.end
        label = {"used": 1.0, "rejected": 0.0}.get(kind, (rating or 0.0) / 5.0)
        entry = Feedback(query.strip(), document_id, start, end, label, kind, time.time())
        self.engine.store.record_feedback(self.name, [entry])
        return entry

    def reranker(self, spec: str, ctx: SearchContext | None = None, depth: int | None = None) -> Reranker:
        """The reranker ``spec`` names, bound to this collection (see ``waypost.post.rerank.factory``)."""
        from waypost.post.rerank.factory import DEFAULT_DEPTH, make_reranker

        llm = self.engine.llm() if name_string(spec, "rerank").partition(":")[0] == "llm" else None
        depth = DEFAULT_DEPTH if depth is None else depth
        return make_reranker(spec, ctx or self.context(), self.engine.path, llm, self.engine.config.prices, depth)


def check_request(
    query: object,
    strategy: object,
    k: object,
    params: object,
    rerank: object = None,
    passages: object = None,
) -> tuple[str, str, int, Mapping[str, object] | None]:
    """The arguments every query call shares, checked: each problem is an ``InvalidInputError`` naming it."""
    text = query_text(query)
    name = name_string(strategy, "strategy")
    if name not in ("web", AUTO):
        strategy_spec(name)  # an unknown name lists the known ones
    count = positive_int(k, "k")
    checked = string_mapping(params, "params")
    if rerank is not None and not isinstance(rerank, str) and not callable(getattr(rerank, "rerank", None)):
        raise InvalidInputError(f"rerank must be a name, a Reranker or None, got {rerank!r}")
    if passages is not None and not isinstance(passages, PassageConfig):
        raise InvalidInputError(f"passages must be a PassageConfig or None, got {passages!r}")
    return text, name, count, checked


def check_language(language: str) -> str:
    """An ISO 639 code (``th``, ``tha``, ``en-US``), made canonical, or "" for detection; else an error."""
    from waypost.text.language import canonical_language

    code = canonical_language(language)
    if code and not (code.isalpha() and 2 <= len(code) <= 3):
        raise WaypostError(f"language must be an ISO 639 code such as 'en', 'de' or 'th', not {language!r}")
    return code


def open_store(path: str | Path, config: EngineConfig | None = None) -> Engine:
    return Engine(path, config)
