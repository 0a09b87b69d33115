"""``Engine.search``: choose the collections (stage 1) when none are named, run the strategy on each,
merge several into one list, and explain the choice."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from waypost.embeddings import query_vectors
from waypost.errors import InvalidInputError, WaypostError
from waypost.filters.model import Filter, check_filter
from waypost.index.dense import QueryScores
from waypost.retrieval.registry import DEFAULT_STRATEGY
from waypost.route import plan_hints
from waypost.route.base import AUTO, CollectionChoice, CollectionSelector
from waypost.route.collections import EmbeddingCollectionSelector, LLMCollectionSelector, read_profile_text
from waypost.route.execute import fuse_results, merge_by_similarity
from waypost.text.language import detector
from waypost.types import Hit, RetrievalResult
from waypost.validation import positive_int, query_text

if TYPE_CHECKING:
    from waypost.base import FloatMatrix
    from waypost.collection import Collection
    from waypost.engine import Engine
    from waypost.route.corrective import Alternatives

SELECTORS = ("embedding", "learned:PATH", "llm")
COSINES_COMPARE_FROM = 0.5  # the embedder's coverage of a query's language from which its cosines compare
OTHER_COLLECTION_BELOW = 0.6  # a single-collection choice less sure than this lets the corrective loop try the next


def make_collection_selector(engine: Engine, kind: str = "embedding") -> CollectionSelector:
    """``embedding`` (no LLM), ``learned:PATH`` (a JSON profile with exemplar queries, fitted weights and a
    ``fuse_ratio``, as ``waypost router train-collections`` writes; each optional), or ``llm`` (the engine's LLM,
    falling back to embeddings)."""
    embedding = EmbeddingCollectionSelector(engine)
    if kind == "embedding":
        return embedding
    if kind.startswith("learned:"):
        return EmbeddingCollectionSelector.from_json(engine, read_profile_text(Path(kind.removeprefix("learned:"))))
    if kind == "llm":
        llm = engine.llm()
        if llm is None:
            raise WaypostError("collection_selector='llm' needs an LLM: set llm (for example 'smollm2')")
        return LLMCollectionSelector(llm, embedding)
    raise WaypostError(f"collection_selector must be one of {', '.join(SELECTORS)}, not {kind!r}")


def choice_note(choice: CollectionChoice) -> str:
    return (
        f"collections {', '.join(choice.collections)} chosen by {choice.selector} "
        f"(confidence {choice.confidence:.2f}): {choice.reasoning}"
    )


def named_in_query(query: str, available: Sequence[str]) -> CollectionChoice | None:
    """The collections the query names itself ("... in the papers collection"), where they exist."""
    by_lower = {name.lower(): name for name in available}
    named = [by_lower[n.lower()] for n in plan_hints.collections(query) if n.lower() in by_lower]
    if not named:
        return None
    return CollectionChoice(named, 1.0, "the query names the collection", "query", {n: 1.0 for n in named})


def choose_collections(engine: Engine, query: str, filters: Filter | None = None) -> CollectionChoice:
    """Stage 1 alone: the collections the query names, else the engine's collection selector's choice
    among those with documents."""
    available = [info.name for info in engine.collections() if info.chunks > 0]
    if not available:
        raise WaypostError("there is no collection with documents to search: ingest some first")
    return named_in_query(query, available) or engine.collection_selector().select(query, available, filters)


def runner_up(engine: Engine, choice: CollectionChoice) -> Alternatives | None:
    """Stage 1's second collection, for the corrective loop to try, when stage 1 was unsure of its choice
    (below ``OTHER_COLLECTION_BELOW``) and did not fuse; None otherwise."""
    if choice.confidence >= OTHER_COLLECTION_BELOW or choice.selector in ("given", "query"):
        return None
    others = sorted((n for n in choice.scores if n not in choice.collections), key=lambda n: -choice.scores[n])
    if not others:
        return None
    name = others[0]

    def other(query: str, k: int, filters: Filter | None) -> tuple[str, RetrievalResult] | None:
        return name, engine.collection(name).retrieve(query, DEFAULT_STRATEGY, k, filters=filters)

    return other


def hit_similarities(collection: Collection, query_vector: FloatMatrix, hits: Sequence[Hit]) -> list[float]:
    """Each hit's cosine with the query: its chunk's, or for a passage its anchor's (the retrieved chunk it
    grew from: a passage's best chunk would favour long passages). A hit whose chunk is gone takes the
    cosine of the hit before it (the first, the best of its list)."""
    graph = collection.context().evidence()
    keys = [(h.chunk.document_id, anchor_index(h)) for h in hits]
    positions = graph.positions_of(keys)
    live = [p for p in positions if p is not None]
    dense = QueryScores(graph.indexes.dense, query_vector)
    found = dict(zip(live, dense.at(np.asarray(live, dtype=np.int64)).tolist(), strict=True)) if live else {}
    known = [found[p] if p is not None else None for p in positions]
    out: list[float] = []
    for value in known:  # a chunk gone since: its list's order says it is no better than the hit before
        out.append(
            value if value is not None else out[-1] if out else max((v for v in known if v is not None), default=0.0)
        )
    return out


def anchor_index(hit: Hit) -> int:
    """The chunk index of a passage hit's anchor (a chunk id is ``document#index``); a chunk hit's own."""
    ref = hit.passage
    if ref is not None:
        _document, _hash, index = ref.anchor.rpartition("#")
        if index.isdigit():
            return int(index)
    return hit.chunk.index


def why_cosines_do_not_compare(collections: Sequence[Collection], query: str) -> str | None:
    """Why the cosines of ``collections``' hits with the query do not compare across them, or None when they
    do: the collections use different embedding models, or the embedder covers the query's language (told
    apart from every collection's own) below ``COSINES_COMPARE_FROM`` in one of them (an English model's
    cosines with a Thai question say little; on the mixed workload's Thai questions a merge by them put
    English hits first)."""
    models = {c.embedder.model_id for c in collections}
    if len(models) > 1:
        return "their embedding models differ (" + ", ".join(sorted(models)) + ")"
    language = detector().detect(query)
    for collection in collections:
        ctx = collection.context()
        if ctx.coverage is None:
            continue
        covered = ctx.coverage.get(language, ctx.indexes, collection.name).value
        if covered < COSINES_COMPARE_FROM:
            return (
                f"the embedder covers the query's language ({language}) at {covered:.2f} in {collection.name}, "
                f"under {COSINES_COMPARE_FROM}"
            )
    return None


def fuse_collections(
    engine: Engine, query: str, choice: CollectionChoice, results: list[RetrievalResult], k: int
) -> RetrievalResult:
    """Several collections' results as one. Under one embedding model that covers the query's language,
    merged by each next hit's cosine with the query (``benchmarks/bench_fusion_merge.py``: on training queries
    forced to a tie with their runner-up collection, this keeps more of what the right collection alone
    scores than rank fusion); otherwise reciprocal rank fusion weighted by stage 1's probabilities, and the
    explanation says why. The merge's time is the ``merge`` stage of ``timings_ms``."""
    started = time.perf_counter()
    collections = [engine.collection(name) for name in choice.collections]
    reason = why_cosines_do_not_compare(collections, query)
    if reason is None:
        vector = np.asarray(query_vectors.query_vector(collections[0].embedder, query), dtype=np.float32).reshape(-1)
        similarities = [hit_similarities(c, vector, r.hits) for c, r in zip(collections, results, strict=True)]
        result = merge_by_similarity(query, results, similarities, k)
    else:
        weights = [choice.scores.get(name, 1.0) for name in choice.collections]
        result = fuse_results(query, results, k, weights)
        result.explanation.notes.append(f"ranks, not cosines: {reason}")
    result.explanation.timings_ms["merge"] = (time.perf_counter() - started) * 1000
    return result


def search(
    engine: Engine,
    query: str,
    k: int = 10,
    collections: Sequence[str] | None = None,
    strategy: str = "auto",
    filters: Filter | None = None,
) -> RetrievalResult:
    query = query_text(query)
    k = positive_int(k, "k")
    if filters is not None:
        check_filter(filters)
    if isinstance(collections, str):
        raise InvalidInputError(f"collections is a list of names, not the single name {collections!r}")
    with query_vectors.one_search():  # stage 1's query vector serves the collections' passes and the merge
        return _search(engine, query, k, collections, strategy, filters)


def _search(
    engine: Engine, query: str, k: int, collections: Sequence[str] | None, strategy: str, filters: Filter | None
) -> RetrievalResult:
    started = time.perf_counter()
    if collections:
        names = list(dict.fromkeys(collections))
        choice = CollectionChoice(names, 1.0, "named by the caller", "given", {n: 1.0 for n in names})
    else:
        choice = choose_collections(engine, query, filters)
    routed_ms = (time.perf_counter() - started) * 1000
    if strategy == AUTO and len(choice.collections) == 1:
        collection = engine.collection(choice.collections[0])
        other = runner_up(engine, choice)
        results = [engine.router().retrieve(collection, query, k, filters, alternatives=other)]
    else:
        results = [engine.collection(n).retrieve(query, strategy, k, filters=filters) for n in choice.collections]
    result = results[0] if len(results) == 1 else fuse_collections(engine, query, choice, results, k)
    result.explanation.timings_ms["collections"] = routed_ms
    result.explanation.notes.insert(0, choice_note(choice))
    route = dict(result.explanation.route or {})
    route["collections"] = {**choice.to_dict(), "ms": round(routed_ms, 3)}
    if len(results) > 1:
        route["per_collection"] = {
            name: (r.explanation.route or {}).get("label", r.explanation.strategy)
            for name, r in zip(choice.collections, results, strict=True)
        }
    result.explanation.route = route
    return result


__all__ = ["SELECTORS", "choice_note", "choose_collections", "make_collection_selector", "named_in_query", "search"]
