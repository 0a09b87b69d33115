"""A collection of one engine: ingest and delete documents, retrieve with any strategy (``auto``
routes), answer with citations, feedback, and the derived structures (tree, graph) it owns."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from waypost.answer.model import Answer, AnswerStream
from waypost.answer.service import AnswerService
from waypost.base import CollectionInfo, Embedder, Feedback, Reranker
from waypost.context import SearchContext
from waypost.errors import InvalidInputError, ModelMismatchError, WaypostError
from waypost.filters.extract import FilterExtractor
from waypost.filters.model import Filter, check_filter
from waypost.graph.live import LiveGraph
from waypost.hierarchy.live import LiveTree
from waypost.ingest.chunker import Chunker
from waypost.ingest.pipeline import Ingestor, IngestReport, StageHook, documents_from_paths
from waypost.post.passages import PassageAssembler, PassageConfig
from waypost.purge import PurgeReport
from waypost.retrieval.fusion import FusionConfig
from waypost.retrieval.metadata import QueryFilterExtractor
from waypost.retrieval.params import parse_params
from waypost.retrieval.registry import make_retriever
from waypost.retrieval.registry import strategy as strategy_spec
from waypost.route.base import AUTO
from waypost.types import Document, Hit, RetrievalResult
from waypost.validation import id_list, name_string, one_id, positive_int, query_text, string_mapping

if TYPE_CHECKING:
    from waypost.engine import Engine


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

    def add(
        self,
        documents: Iterable[Document],
        show_progress: bool = False,
        total: int | None = None,
        on_stage: StageHook | None = None,
        report: IngestReport | None = None,
    ) -> IngestReport:
        """Insert new documents, replace changed ones, skip unchanged ones (by content hash).

        ``documents`` is an iterable of ``Document`` (a single one or a string is refused). Lone surrogates
        in any text become U+FFFD; a document with a field of the wrong type, or NaN or Infinity in its
        metadata, is skipped and named in the report's ``failures`` while the rest is ingested. ``on_stage``
        hears each batch's stages (see ``waypost.ingest.pipeline.StageHook``) and may raise to stop."""
        return self._ingestor().ingest(self.name, documents, report, show_progress, total, on_stage)

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
            source_rows=self.source_rows,
        )

    def source_rows(self, hits: Sequence[Hit]) -> list[int]:
        """The store rows of the chunks behind ``hits``: every chunk an assembled passage joins."""
        wanted: list[tuple[str, int]] = []
        for hit in hits:
            if hit.passage is not None:
                for chunk_id in hit.passage.chunk_ids:
                    doc, _, index = chunk_id.rpartition("#")
                    if doc and index.isdigit():
                        wanted.append((doc, int(index)))
            else:
                wanted.append((hit.chunk.document_id, hit.chunk.index))
        return list(self.engine.store.row_ids_of(self.name, wanted).values())

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
    count = positive_int(k, "k")
    checked = string_mapping(params, "params")
    if name == "web":
        from waypost.retrieval.web import web_search_provider

        web_search_provider()  # not configured: said before any work (or stream)
    elif name != AUTO:
        parse_params(name, strategy_spec(name).params, checked)  # an unknown name lists the known ones
    if rerank is not None and not isinstance(rerank, str) and not callable(getattr(rerank, "rerank", None)):
        raise InvalidInputError(f"rerank must be a name, a Reranker or None, got {rerank!r}")
    if passages is not None and not isinstance(passages, PassageConfig):
        raise InvalidInputError(f"passages must be a PassageConfig or None, got {passages!r}")
    return text, name, count, checked


def check_language(language: str) -> str:
    """An ISO 639 code (``th``, ``tha``, ``en-US``), made canonical, or "" for detection; else an error."""
    from waypost.text.language import COUNTRY_NOT_LANGUAGE, ISO_639_1, canonical_language

    code = canonical_language(language)
    if code and not (code.isalpha() and 2 <= len(code) <= 3):
        raise WaypostError(f"language must be an ISO 639 code such as 'en', 'de' or 'th', not {language!r}")
    if len(code) == 2 and code not in ISO_639_1:
        meant = COUNTRY_NOT_LANGUAGE.get(code)
        hint = f" ({code!r} is a country; its language is {meant!r})" if meant else ""
        raise WaypostError(f"{language!r} is no ISO 639-1 language code{hint}")
    return code
