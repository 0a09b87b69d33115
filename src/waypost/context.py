"""The search context: what every strategy and post stage needs (the collection's indexes, the embedder,
the store to fetch hits), shared by ``retrieval/``, ``post/`` and ``route/``."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt

from waypost.base import DocumentStore, Embedder, FloatMatrix
from waypost.embeddings.coverage import CoverageBook
from waypost.embeddings.query_vectors import query_vector
from waypost.errors import WaypostError
from waypost.filters.model import Filter
from waypost.index.dense import QueryScores
from waypost.index.set import IndexSet
from waypost.index.topk import Mask, Positions, Scores
from waypost.llm.accounting import PriceTable
from waypost.llm.base import LLMProvider
from waypost.types import Explanation, Hit, NodeRef, Provenance

if TYPE_CHECKING:
    from waypost.filters.extract import Extraction
    from waypost.graph.live import LiveGraph
    from waypost.hierarchy.live import LiveTree
    from waypost.hierarchy.search import TreeArrays
    from waypost.llm.accounting import QueryMetadata
    from waypost.post.evidence import EvidenceGraph


class QueryFilterExtractor(Protocol):
    """Rule-based (``FilterExtractor``) or LLM-backed (``LLMFilterExtractor``, which falls back to rules)."""

    def extract(self, query: str, usage: QueryMetadata | None = None) -> Extraction: ...


@dataclass
class SearchContext:
    collection: str
    indexes: IndexSet
    embedder: Embedder
    store: DocumentStore
    coverage: CoverageBook | None = None
    tree: LiveTree | None = None  # the collection's RAPTOR tree, for hierarchical strategies
    graph: LiveGraph | None = None  # the collection's knowledge graph, for graph strategies
    llm_source: Callable[[], LLMProvider | None] | None = None  # the configured LLM, loaded on first ask
    prices: PriceTable = field(default_factory=PriceTable)
    # the collection's configured filter extractor (the LLM's with llm_filters), made on first ask; None: the
    # rules over this context's indexes
    filter_extractor_source: Callable[[], QueryFilterExtractor] | None = None
    _query_vector: tuple[str, FloatMatrix] | None = field(default=None, repr=False)
    _dense: tuple[str, QueryScores] | None = field(default=None, repr=False)
    _lexical: tuple[str, npt.NDArray[np.float64]] | None = field(default=None, repr=False)
    _evidence: EvidenceGraph | None = field(default=None, repr=False)

    def llm(self) -> LLMProvider | None:
        """The engine's LLM for strategies with an LLM step, or None (they then run their offline path)."""
        return self.llm_source() if self.llm_source is not None else None

    def filter_extractor(self) -> QueryFilterExtractor:
        """What extracts filters from query text (the metadata strategy's first step)."""
        return self.filter_extractor_source() if self.filter_extractor_source is not None else self.indexes.extractor()

    def query_vector(self, query: str) -> FloatMatrix:
        """The query's embedding, computed once per context (a strategy and its post stages share it)."""
        if self._query_vector is None or self._query_vector[0] != query:
            self._query_vector = (query, query_vector(self.embedder, query))
        return self._query_vector[1]

    def dense(self, query: str) -> QueryScores:
        """The query's dense scores, once per context and query: ``top(k, mask)`` candidates and scores
        ``at(positions)`` (exact; from HNSW candidates in a collection past ``exact_dense_below`` chunks)."""
        if self._dense is None or self._dense[0] != query:
            self._dense = (query, QueryScores(self.indexes.dense, self.query_vector(query)))
        return self._dense[1]

    def dense_scores(self, query: str) -> npt.NDArray[np.float32]:
        """Cosine of every position with the query (a full scan at any size: for strategies that score every
        position, such as the tree's leaves; the others ask ``dense(query)`` for candidates)."""
        return self.dense(query).full()

    def lexical_scores(self, query: str) -> npt.NDArray[np.float64]:
        """BM25 of every position for the query, computed once per context and query."""
        if self._lexical is None or self._lexical[0] != query:
            self._lexical = (query, self.indexes.bm25.scores(query))
        return self._lexical[1]

    def evidence(self) -> EvidenceGraph:
        """The evidence graph over this context's indexes, shared by the post stages of one query (the
        documents a reranker reads are the ones passage assembly grows in)."""
        if self._evidence is None:
            from waypost.post.evidence import EvidenceGraph

            self._evidence = EvidenceGraph(self.collection, self.indexes, self.store)
        return self._evidence

    def tree_arrays(self, timer: Timer) -> TreeArrays:
        """The tree over this context's indexes, current with the store (built on first use)."""
        if self.tree is None:
            raise WaypostError("this search context has no tree: hierarchical strategies need an engine's collection")
        with timer.stage("tree"):
            arrays = self.tree.arrays(self.indexes)
        assert arrays is not None
        return arrays

    def dense_weight(self, query: str) -> tuple[str, float, str]:
        """The query's language and how far to trust the dense side in it (1: fully), with a note."""
        language = self.indexes.query_language(query)
        if self.coverage is None:
            return language, 1.0, f"language={language}"
        cov = self.coverage.get(language, self.indexes, self.collection)
        return language, cov.value, f"language={language} dense coverage={cov.value:.2f} ({cov.source})"

    def prefilter(self, filters: Filter | None, timer: Timer) -> Mask | None:
        """Positions a strategy may return: live ones matching ``filters`` (timed); ``None`` means all."""
        live = self.indexes.live
        if filters is None:
            return live
        with timer.stage("prefilter"):
            mask = self.indexes.metadata.mask(filters)
            return mask if live is None else mask & live

    def explain(
        self, strategy: str, query: str, semantic_query: str, filters: Filter | None, mask: Mask | None, timer: Timer
    ) -> Explanation:
        candidates = int(mask.sum()) if mask is not None else self.indexes.live_count
        explanation = Explanation(
            strategy, query, semantic_query, str(filters) if filters else None, candidates, timer.ms
        )
        explanation.notes.extend(timer.notes)
        return explanation

    def hits(
        self,
        positions: Positions,
        scores: Scores,
        strategy: str,
        stages: dict[str, dict[int, tuple[int, float]]] | None = None,
        nodes: Sequence[NodeRef | None] | None = None,
    ) -> list[Hit]:
        """Materialise ranked positions into hits, with per-stage ranks and scores as provenance."""
        rows = [int(self.indexes.row_ids[p]) for p in positions]
        stored = {s.row_id: s for s in self.store.chunks_by_row(self.collection, rows)}
        out: list[Hit] = []
        refs = list(nodes) if nodes is not None else [None] * len(rows)
        for pos, row, score, ref in zip(positions, rows, scores, refs, strict=True):
            s = stored.get(row)
            if s is None:  # deleted between index build and fetch
                continue
            stage_scores: dict[str, float] = {}
            stage_ranks: dict[str, int] = {}
            for stage, table in (stages or {}).items():
                if int(pos) in table:
                    rank, value = table[int(pos)]
                    stage_ranks[stage], stage_scores[stage] = rank, round(float(value), 6)
            out.append(
                Hit(
                    s.chunk,
                    float(score),
                    strategy,
                    Provenance(self.collection, s.title, s.source, stage_scores, stage_ranks),
                    s.metadata,
                    ref,
                )
            )
        return out

    def reference_links(self, positions: Positions) -> list[Positions]:
        """Link targets of the chunks at ``positions`` (see ``waypost.index.references``)."""
        rows = [int(self.indexes.row_ids[p]) for p in positions]
        texts = {s.row_id: s.chunk.text for s in self.store.chunks_by_row(self.collection, rows)}
        return [
            self.indexes.references.targets(int(p), texts[r]) if r in texts else np.zeros(0, dtype=np.int64)
            for p, r in zip(positions, rows, strict=True)
        ]


def ranked_table(positions: Positions, scores: Scores) -> dict[int, tuple[int, float]]:
    return {int(p): (rank, float(s)) for rank, (p, s) in enumerate(zip(positions, scores, strict=True), start=1)}


class Timer:
    """Collects per-stage wall time in milliseconds."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}
        self.notes: list[str] = []  # what a stage decided, for explain (the query's language, weights)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.ms[name] = self.ms.get(name, 0.0) + (time.perf_counter() - t0) * 1000.0


def empty() -> tuple[Positions, Scores]:
    return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
