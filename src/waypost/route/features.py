"""Query and first-stage features the router selects a pipeline from.

Cheap by design (a few tenths of a millisecond beyond the hybrid pass that runs anyway): regular
expressions over the query text, the BM25 index's statistics, the cached dense and lexical score
vectors, the rule filter extractor, and the collection's saved graph (loaded once, never built here).
Every name in ``FEATURE_NAMES`` is present and finite in every ``Features``; the names are stable
(a trained profile refers to them)."""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass

import numpy as np

from waypost.context import SearchContext
from waypost.errors import WaypostError
from waypost.filters.model import Filter, conditions
from waypost.index.set import IndexSet
from waypost.index.topk import Mask, top_k
from waypost.retrieval.fusion import FusionConfig
from waypost.retrieval.hybrid import HybridRetriever
from waypost.route.base import Features
from waypost.types import RetrievalResult

QUERY_FEATURES = (
    "words",  # query length in words
    "chars_log",
    "is_question",  # ends with "?"
    "q_who",
    "q_what",
    "q_when",
    "q_where",
    "q_which",
    "q_how",
    "q_why",
    "q_yesno",  # starts like a yes/no question ("is", "does", "can", ...)
    "entities",  # capitalised words not at the start of a sentence
    "entity_share",
    "quoted",  # quoted phrases
    "code_tokens",  # snake_case, camelCase, dotted.names, calls(), ::
    "numbers",
    "years",
    "and_or",  # conjunctions joining parts ("A and B")
    "comparison_cues",
    "summary_cues",
    "non_ascii_share",  # share of letters outside ASCII (scripts the lexical side may read better)
    "idf_max",  # rarest query term's IDF in the collection
    "idf_mean",
    "known_terms_share",  # query words the collection's vocabulary holds
    "dense_coverage",  # how far the embedder covers the query's language (1: fully)
    "filter_conditions",  # conditions the collection's rule extractor finds in the query
    "filter_selectivity",  # 1 - share of live chunks the extracted filter keeps (0: no filter)
    "filter_exclusions",  # its conditions that exclude a value ("not diesel"): the heuristic rules read it
)
FIRST_STAGE_FEATURES = (
    "top_score",  # fused hybrid score of the first hit
    "top_gap",  # first minus second
    "score_spread",  # standard deviation of the top 10
    "dense_top",  # best cosine
    "dense_gap",
    "dense_spread",
    "bm25_top_norm",  # best BM25 over the sum of the query terms' IDF (comparable across collections)
    "agreement",  # overlap of the dense and BM25 top 10, in [0, 1]
    "doc_concentration",  # distinct documents in the top 10 over the hits (low: few documents dominate)
    "graph_loaded",  # the collection has a knowledge graph
    "graph_entities",  # query spans naming an entity of the loaded graph
)
COLLECTION_FEATURES = (
    "doc_tokens_log",  # average document length in tokens (long-document signal), log
    "chunks_per_doc",
    "metadata_fields",
    "size_log",  # live chunks, log
)
FEATURE_NAMES: tuple[str, ...] = QUERY_FEATURES + FIRST_STAGE_FEATURES + COLLECTION_FEATURES

TOP = 10
_WORD = re.compile(r"\w+(?:['’-]\w+)*", re.UNICODE)
_QUOTED = re.compile(r"\"[^\"]{2,}\"|“[^”]{2,}”|«[^»]{2,}»|(?<!\w)'[^']{2,}'(?!\w)")
_CODE = re.compile(
    r"\b\w+_\w+\b|\b[a-z]+[A-Z]\w*\b|\b\w+(?:\.\w+)+\(?\)?|\b\w+\(\)|::|\b[A-Z]{2,}\d+\b|`[^`]+`|</?\w+>"
)
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?(?![\w])")
_YEAR = re.compile(r"\b(1[5-9]\d\d|20\d\d)s?\b")
_SENTENCE_END = re.compile(r"[.!?:;]$")
_QUESTION_WORDS = ("who", "what", "when", "where", "which", "how", "why")
_QUESTION_FORMS = {  # the word and its inflections that count for it
    "who": ("who", "whom", "whose"),
    "what": ("what",),
    "when": ("when",),
    "where": ("where",),
    "which": ("which",),
    "how": ("how",),
    "why": ("why",),
}
_YES_NO = frozenset(
    "is are was were am do does did can could will would shall should has have had may might must".split()
)
_AND_OR = re.compile(r"\b(?:and|or|versus|vs\.?)\b", re.IGNORECASE)
_COMPARISON = re.compile(
    r"\b(?:compare[ds]?|comparing|comparison|both|which of|more than|less than|fewer than|older|younger|"
    r"earlier|later|bigger|larger|smaller|longer|shorter|higher|lower|better|worse|differ(?:s|ence|ent)?|"
    r"same|in common|versus|vs\.?|between)\b",
    re.IGNORECASE,
)
_SUMMARY = re.compile(
    r"\b(?:summari[sz]e[ds]?|summary|overview|overall|discussion(?:s)? (?:about|of|on)|discuss(?:ed)?|"
    r"main points?|key points?|gist|in general|recap|outline|what was said|themes?)\b",
    re.IGNORECASE,
)


@dataclass
class FeaturePass:
    """The features of one query and the hybrid pass they were read from (the router reuses it when it
    picks plain hybrid)."""

    features: Features
    first_stage: RetrievalResult
    first_stage_ms: float = 0.0  # the hybrid pass
    features_ms: float = 0.0  # reading the features, beyond the hybrid pass (the router's own cost)
    extracted: Filter | None = None  # the filter the collection's rule extractor read from the query


def extract_features(
    query: str,
    ctx: SearchContext,
    filters: Filter | None = None,
    k: int = 10,
    fusion: FusionConfig | None = None,
) -> FeaturePass:
    """Run the hybrid first stage (as ``Collection.retrieve(query, "hybrid", k, filters)`` would with the
    same ``fusion``) and read every feature of ``FEATURE_NAMES`` from the query, the pass and the index."""
    t0 = time.perf_counter()
    first = HybridRetriever(ctx, fusion or FusionConfig()).retrieve(query, k, filters)
    t1 = time.perf_counter()
    features: Features = {}
    features.update(query_features(query))
    extracted = extracted_filter(query, ctx.indexes)
    features.update(index_features(query, ctx))
    features.update(filter_features(extracted, ctx.indexes))
    features.update(first_stage_features(query, ctx, first, filters))
    features.update(collection_features(ctx.indexes))
    out = {name: _finite(features.get(name, 0.0)) for name in FEATURE_NAMES}
    t2 = time.perf_counter()
    return FeaturePass(out, first, (t1 - t0) * 1000, (t2 - t1) * 1000, extracted)


def _finite(value: float) -> float:
    value = float(value)
    return value if math.isfinite(value) else 0.0


def query_features(query: str) -> Features:
    """Features of the query text alone (no index)."""
    text = query.strip()
    tokens = [(m.group(0), m.start()) for m in _WORD.finditer(text)]
    words = [w for w, _ in tokens]
    lower = [w.lower() for w in words]
    out: Features = {
        "words": float(len(words)),
        "chars_log": math.log1p(len(text)),
        "is_question": float(text.endswith("?")),
    }
    first = lower[0] if lower else ""
    present = set(lower)
    for name in _QUESTION_WORDS:
        out[f"q_{name}"] = float(any(form in present for form in _QUESTION_FORMS[name]))
    out["q_yesno"] = float(first in _YES_NO)
    entities = 0
    for i, (word, start) in enumerate(tokens):
        if i == 0 or not word[:1].isupper():
            continue
        before = text[:start].rstrip()
        if before and _SENTENCE_END.search(before):
            continue  # a sentence's first word
        entities += 1
    out["entities"] = float(entities)
    out["entity_share"] = entities / max(1, len(words))
    out["quoted"] = float(len(_QUOTED.findall(text)))
    out["code_tokens"] = float(len(_CODE.findall(text)))
    out["numbers"] = float(len(_NUMBER.findall(text)))
    out["years"] = float(len(_YEAR.findall(text)))
    out["and_or"] = float(len(_AND_OR.findall(text)))
    out["comparison_cues"] = float(len(_COMPARISON.findall(text)))
    out["summary_cues"] = float(len(_SUMMARY.findall(text)))
    letters = [c for c in text if c.isalpha()]
    out["non_ascii_share"] = sum(1 for c in letters if ord(c) > 127) / max(1, len(letters))
    return out


def index_features(query: str, ctx: SearchContext) -> Features:
    """Rare-term IDF, vocabulary coverage and the embedder's coverage of the query's language."""
    indexes = ctx.indexes
    out: Features = {}
    terms = indexes.bm25.query_tokens(query)
    stats = indexes.chunk_stats
    ids = [i for i in indexes.vocab.lookup(terms) if i < stats.df.shape[0]]
    if ids:
        df = stats.df[np.asarray(ids, dtype=np.int64)].astype(np.float64)
        idf = np.log((stats.rows - df + 0.5) / (df + 0.5) + 1.0)
        out["idf_max"], out["idf_mean"] = float(idf.max()), float(idf.mean())
    words = len(_WORD.findall(query))
    out["known_terms_share"] = min(1.0, len(set(terms)) / max(1, words))
    _language, weight, _note = ctx.dense_weight(query)
    out["dense_coverage"] = weight
    return out


def extracted_filter(query: str, indexes: IndexSet) -> Filter | None:
    """The filter the collection's rule extractor reads from the query (None without metadata)."""
    if not indexes.metadata.fields:
        return None
    return indexes.extractor().extract(query).filter


def filter_features(flt: Filter | None, indexes: IndexSet) -> Features:
    """How many conditions the extracted filter has, the share of live chunks it drops, and how many of its
    conditions exclude a value ("not diesel")."""
    if flt is None:
        return {"filter_conditions": 0.0, "filter_selectivity": 0.0, "filter_exclusions": 0.0}
    found = conditions(flt)
    count = float(len(found))
    exclusions = float(sum(c.op.negated for c in found))
    live = indexes.live_count
    try:
        mask = indexes.metadata.mask(flt)
    except WaypostError:  # a filter the index cannot evaluate: no selectivity to measure
        return {"filter_conditions": count, "filter_selectivity": 0.0, "filter_exclusions": exclusions}
    if indexes.live is not None:
        mask = mask & indexes.live
    kept = int(mask.sum()) / max(1, live)
    return {"filter_conditions": count, "filter_selectivity": 1.0 - kept, "filter_exclusions": exclusions}


def first_stage_features(
    query: str, ctx: SearchContext, first: RetrievalResult, filters: Filter | None = None
) -> Features:
    """Score-distribution, agreement and concentration features of the hybrid pass (post-retrieval
    query performance prediction), and the loaded graph's entities the query names."""
    out: Features = {}
    scores = np.asarray([h.score for h in first.hits[:TOP]], dtype=np.float64)
    out.update(_distribution("top_score", "top_gap", "score_spread", scores))
    mask = _mask(ctx, filters)
    d_pos, d_scores = ctx.dense(query).top(TOP, mask)
    dense = _distribution("dense_top", "dense_gap", "dense_spread", d_scores.astype(np.float64))
    out.update(dense)
    lexical = ctx.lexical_scores(query)
    s_pos, s_scores = top_k(lexical.astype(np.float32), TOP, mask)
    keep = s_scores > 0
    s_pos, s_scores = s_pos[keep], s_scores[keep]
    idf_sum = _idf_sum(query, ctx.indexes)
    out["bm25_top_norm"] = float(s_scores[0]) / idf_sum if s_scores.size and idf_sum > 0 else 0.0
    if d_pos.size and s_pos.size:
        out["agreement"] = len(set(d_pos.tolist()) & set(s_pos.tolist())) / float(min(TOP, d_pos.size))
    docs = [h.chunk.document_id for h in first.hits[:TOP]]
    out["doc_concentration"] = len(set(docs)) / len(docs) if docs else 0.0
    loaded, entities = _graph_entities(query, ctx)
    out["graph_loaded"], out["graph_entities"] = loaded, entities
    return out


def _distribution(top: str, gap: str, spread: str, scores: np.ndarray) -> Features:
    if scores.size == 0:
        return {top: 0.0, gap: 0.0, spread: 0.0}
    return {
        top: float(scores[0]),
        gap: float(scores[0] - scores[1]) if scores.size > 1 else float(scores[0]),
        spread: float(scores.std()),
    }


def _mask(ctx: SearchContext, filters: Filter | None) -> Mask | None:
    live = ctx.indexes.live
    if filters is None:
        return live
    mask = ctx.indexes.metadata.mask(filters)
    return mask if live is None else mask & live


def _idf_sum(query: str, indexes: IndexSet) -> float:
    stats = indexes.chunk_stats
    ids = [i for i in indexes.vocab.lookup(indexes.bm25.query_tokens(query)) if i < stats.df.shape[0]]
    if not ids:
        return 0.0
    df = stats.df[np.asarray(ids, dtype=np.int64)].astype(np.float64)
    return float(np.log((stats.rows - df + 0.5) / (df + 0.5) + 1.0).sum())


def _graph_entities(query: str, ctx: SearchContext) -> tuple[float, float]:
    """Spans of one to three words naming an entity of the collection's graph. A saved graph is loaded on
    the first routed query (never built), so a fresh process reads the same features as a warm one."""
    if ctx.graph is None:
        return 0.0, 0.0
    graph = ctx.graph.loaded()
    if graph is None and ctx.graph.exists():
        graph = ctx.graph.get(build=False)
    if graph is None:
        return 0.0, 0.0
    words = _WORD.findall(query)
    found: set[int] = set()
    for size in (3, 2, 1):
        for i in range(len(words) - size + 1):
            entity = graph.entity_named(" ".join(words[i : i + size]))
            if entity is not None:
                found.add(entity.id)
    return 1.0, float(len(found))


_COLLECTION_CACHE: dict[tuple[str, str, int], Features] = {}


def collection_features(indexes: IndexSet) -> Features:
    """Collection-level features, computed once per index generation."""
    key = (indexes.collection, indexes.version, indexes.generation)
    found = _COLLECTION_CACHE.get(key)
    if found is None:
        docs = indexes.doc_stats.rows
        found = {
            "doc_tokens_log": math.log1p(indexes.doc_stats.average_length),
            "chunks_per_doc": indexes.chunk_stats.rows / max(1, docs),
            "metadata_fields": float(len(indexes.metadata.fields)),
            "size_log": math.log1p(indexes.live_count),
        }
        if len(_COLLECTION_CACHE) > 64:
            _COLLECTION_CACHE.clear()
        _COLLECTION_CACHE[key] = found
    return found
