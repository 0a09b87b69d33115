"""Stage 1 of routing: which collections a query should search.

``EmbeddingCollectionSelector`` scores every collection from a few signals, each a number per (query,
collection) read through the collection's index (never its name or field names):

- ``probe``: the mean cosine of the query to the collection's 3 nearest chunks (an exact dense scan);
- ``sample``: the best cosine over ~200 chunk vectors sampled once per collection version;
- ``centroid``: the cosine to the mean chunk vector (cached per collection version);
- ``description``: the cosine to the collection's description (0 without one);
- ``language``: the share of the collection's chunks in the query's detected language;
- ``coverage``: the share of the query's terms the collection's vocabulary holds.

A linear score over them (weights fit as a conditional logit on training queries: see
``benchmarks/bench_collections.py``) goes through a softmax over the collections, which makes the
confidence a calibrated probability. Collections whose probability is within ``fuse_ratio`` of the best
are returned too, to be fused. A filter the query carries restricts the choice to the collections whose
metadata has every field it names (when some have them and some do not).

``LLMCollectionSelector`` asks an LLM with the names and descriptions; an invalid reply or an invented
name falls back to the embedding selector, and the reasoning says so."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from waypost.errors import InvalidInputError, WaypostError
from waypost.filters.model import Filter, conditions
from waypost.llm.base import GenerationParams, LLMProvider
from waypost.route.base import CollectionChoice

if TYPE_CHECKING:
    from waypost.engine import Engine
    from waypost.index.set import IndexSet

logger = logging.getLogger("waypost.route.collections")

SIGNALS = ("probe", "sample", "centroid", "description", "language", "coverage")
# Fit on the training queries of the mixed workload (benchmarks/bench_collections.py --fit); the scale of
# the weights is the softmax's inverse temperature, so the confidence is calibrated by the same fit.
DEFAULT_WEIGHTS: dict[str, float] = {
    "probe": 40.0,
    "sample": 10.0,
    "centroid": 5.0,
    "description": 10.0,
    "language": 4.0,
    "coverage": 4.0,
}
SAMPLE_SIZE = 200
PROBE_K = 3
FUSE_RATIO = 0.5  # a collection within this share of the best one's probability is searched too
MAX_FUSED = 3

Vector = npt.NDArray[np.float32]


@dataclass(frozen=True)
class CollectionProfile:
    """What the selector keeps per collection version: a centroid, a sample of chunk vectors, the metadata
    fields, the language shares and the description's vector."""

    version: str
    model: str
    centroid: Vector
    sample: Vector
    fields: frozenset[str]
    languages: dict[str, float]
    description: str
    description_vector: Vector | None


def filter_fields(filters: Filter | None) -> set[str]:
    return set() if filters is None else {c.field for c in conditions(filters)}


def restrict_by_fields(engine: Engine, names: Sequence[str], filters: Filter | None) -> tuple[list[str], str]:
    """The collections whose metadata has every field ``filters`` names, with a reason; all of ``names``
    when none or all of them have those fields."""
    wanted = filter_fields(filters)
    if not wanted:
        return list(names), ""
    having = [n for n in names if wanted <= set(engine.indexes.get(n).metadata.fields)]
    if not having or len(having) == len(names):
        return list(names), ""
    fields = ", ".join(sorted(wanted))
    return having, f"the query's filter names {fields}, which only {', '.join(having)} hold"


class EmbeddingCollectionSelector:
    name = "embedding"

    def __init__(
        self,
        engine: Engine,
        weights: Mapping[str, float] | None = None,
        fuse_ratio: float = FUSE_RATIO,
        sample_size: int = SAMPLE_SIZE,
    ) -> None:
        self.engine = engine
        self.weights = dict(DEFAULT_WEIGHTS if weights is None else weights)
        unknown = set(self.weights) - set(SIGNALS)
        if unknown:
            raise InvalidInputError(f"unknown collection signals {sorted(unknown)}; known: {', '.join(SIGNALS)}")
        self.fuse_ratio = fuse_ratio
        self.sample_size = sample_size
        self._profiles: dict[str, CollectionProfile] = {}
        self._lock = threading.Lock()

    # -- profiles ------------------------------------------------------------------------------
    def profile(self, name: str) -> CollectionProfile:
        """The collection's profile at its current version (made once per version)."""
        store = self.engine.store
        version = store.version(name)
        info = store.collection(name)
        with self._lock:
            found = self._profiles.get(name)
            if found is not None and found.version == version and found.description == info.description:
                return found
        index = self.engine.indexes.get(name)
        vectors = _live_vectors(index, info.embed_dim)
        centroid = vectors.mean(axis=0) if len(vectors) else np.zeros(info.embed_dim, np.float32)
        centroid = (centroid / max(float(np.linalg.norm(centroid)), 1e-9)).astype(np.float32)
        rng = np.random.default_rng(0)
        picked = rng.choice(len(vectors), size=min(self.sample_size, len(vectors)), replace=False)
        total = max(1, sum(index.languages.values()))
        described = None
        if info.description:
            described = self.engine.embedder(info.embed_model).embed_documents([info.description])[0]
        made = CollectionProfile(
            version,
            info.embed_model,
            centroid,
            np.ascontiguousarray(vectors[np.sort(picked)]),
            frozenset(index.metadata.fields),
            {lang: n / total for lang, n in index.languages.items()},
            info.description,
            described,
        )
        with self._lock:
            self._profiles[name] = made
        return made

    # -- scoring -------------------------------------------------------------------------------
    def signals(self, query: str, names: Sequence[str]) -> dict[str, dict[str, float]]:
        """Every signal of every collection for ``query``: ``{collection: {signal: value}}``."""
        from waypost.text.language import detector

        language = detector().detect(query)
        vectors: dict[str, Vector] = {}
        out: dict[str, dict[str, float]] = {}
        for name in names:
            prof = self.profile(name)
            if prof.model not in vectors:
                vectors[prof.model] = np.asarray(self.engine.embedder(prof.model).embed_query(query), np.float32)
            q = vectors[prof.model]
            index = self.engine.indexes.get(name)
            _pos, top = index.dense.search(q, PROBE_K, index.live)
            out[name] = {
                "probe": float(np.mean(top)) if len(top) else 0.0,
                "sample": float(np.max(prof.sample @ q)) if len(prof.sample) else 0.0,
                "centroid": float(prof.centroid @ q),
                "description": float(prof.description_vector @ q) if prof.description_vector is not None else 0.0,
                "language": prof.languages.get(language, 0.0),
                "coverage": _coverage(index, query, language),
            }
        return out

    def select(self, query: str, collections: Sequence[str], filters: Filter | None = None) -> CollectionChoice:
        names = list(dict.fromkeys(collections))
        if not names:
            raise WaypostError("there is no collection to search: ingest documents first")
        allowed, why_fields = restrict_by_fields(self.engine, names, filters)
        if len(allowed) == 1:
            return CollectionChoice(allowed, 1.0, why_fields, self.name, {allowed[0]: 1.0})
        signals = self.signals(query, allowed)
        logits = np.array([sum(self.weights.get(s, 0.0) * signals[n][s] for s in SIGNALS) for n in allowed])
        probs = np.exp(logits - logits.max())
        probs /= probs.sum()
        order = np.argsort(-probs, kind="stable")
        best = float(probs[order[0]])
        chosen = [allowed[i] for i in order[:MAX_FUSED] if probs[i] >= self.fuse_ratio * best]
        scores = {allowed[i]: round(float(probs[i]), 4) for i in order}
        lead = max(SIGNALS, key=lambda s: self.weights.get(s, 0.0) * signals[chosen[0]][s])
        reasoning = f"{chosen[0]} scores highest (p={best:.2f}; strongest signal: {lead})"
        if len(chosen) > 1:
            reasoning += f"; {', '.join(chosen[1:])} close behind: fused"
        if why_fields:
            reasoning = why_fields + "; " + reasoning
        return CollectionChoice(chosen, float(probs[order[: len(chosen)]].sum()), reasoning, self.name, scores)


def _live_vectors(index: IndexSet, dim: int) -> Vector:
    parts = []
    for segment, live in zip(index.segments, index.lives, strict=True):
        vectors = np.asarray(segment.dense.vectors, dtype=np.float32)
        parts.append(vectors if live is None else vectors[live])
    return np.concatenate(parts) if parts else np.zeros((0, dim), np.float32)


def _coverage(index: IndexSet, query: str, language: str) -> float:
    """The share of the query's terms (analyzed in its language) that occur in the collection."""
    if language not in index.languages:
        language = max(index.languages, key=lambda k: index.languages[k]) if index.languages else language
    terms = set(index.analyzers(language).terms(query))
    if not terms:
        return 0.0
    df = index.chunk_stats.df
    ids = index.vocab.ids
    known = sum(1 for t in terms if t in ids and ids[t] < df.shape[0] and df[ids[t]] > 0)
    return known / len(terms)


# -- the LLM selector ---------------------------------------------------------------------------------
PROMPT = """Choose which collection(s) to search for the user's query.

Collections:
{listing}

Query: {query}

Answer in exactly three lines:
COLLECTIONS: <one name, or several separated by commas when the query needs them>
CONFIDENCE: <a number from 0 to 1>
REASONING: <one sentence>"""

_LINE = re.compile(r"^\W*(collections?|confidence|reasoning)\W*[:=]\s*(.*)$", re.IGNORECASE)


def parse_collection_reply(reply: str, known: Sequence[str]) -> tuple[list[str], float, str] | str:
    """``(collections, confidence, reasoning)`` from an LLM reply, or a string saying why it is unusable
    (no collection line, or a name that is not one of ``known``). Tolerant of case, markdown, quotes."""
    fields: dict[str, str] = {}
    for line in reply.splitlines():
        match = _LINE.match(line.strip())
        if match:
            fields.setdefault(match.group(1).lower().rstrip("s"), match.group(2).strip())
    raw = fields.get("collection")
    if not raw:
        return "the reply names no collection"
    by_folded = {name.casefold(): name for name in known}
    chosen: list[str] = []
    for part in re.split(r"[,;]|\band\b", raw):
        token = part.strip().strip("`'\"*[]()<>. ").casefold()
        if not token:
            continue
        if token not in by_folded:
            return f"the reply names {part.strip()!r}, which is not a collection"
        chosen.append(by_folded[token])
    if not chosen:
        return "the reply names no collection"
    number = re.search(r"\d*\.?\d+", fields.get("confidence", ""))
    confidence = min(1.0, float(number.group())) if number else 0.5  # no number: undecided
    return list(dict.fromkeys(chosen)), confidence, fields.get("reasoning", "")


class LLMCollectionSelector:
    name = "llm"

    def __init__(self, llm: LLMProvider, fallback: EmbeddingCollectionSelector) -> None:
        self.llm = llm
        self.fallback = fallback

    def select(self, query: str, collections: Sequence[str], filters: Filter | None = None) -> CollectionChoice:
        names = list(dict.fromkeys(collections))
        allowed, why_fields = restrict_by_fields(self.fallback.engine, names, filters)
        if len(allowed) == 1:
            return CollectionChoice(allowed, 1.0, why_fields, self.name, {allowed[0]: 1.0})
        store = self.fallback.engine.store
        listing = "\n".join(f"- {n}: {store.collection(n).description or '(no description)'}" for n in allowed)
        try:
            reply = self.llm.complete(
                [{"role": "user", "content": PROMPT.format(listing=listing, query=query)}],
                GenerationParams(max_tokens=120),
            ).text
            parsed = parse_collection_reply(reply, allowed)
        except WaypostError as exc:
            parsed = f"the LLM failed ({exc})"
        if isinstance(parsed, str):
            logger.info("LLM collection choice unusable (%s): falling back to embeddings", parsed)
            choice = self.fallback.select(query, allowed)
            choice.reasoning = f"LLM reply unusable ({parsed}); embedding fallback: {choice.reasoning}"
            choice.selector = f"{self.name}->{self.fallback.name}"
            return choice
        chosen, confidence, reasoning = parsed
        if why_fields:
            reasoning = why_fields + "; " + reasoning
        return CollectionChoice(chosen, confidence, reasoning, self.name, {n: float(n in chosen) for n in allowed})


__all__ = [
    "DEFAULT_WEIGHTS",
    "SIGNALS",
    "CollectionProfile",
    "EmbeddingCollectionSelector",
    "LLMCollectionSelector",
    "parse_collection_reply",
    "restrict_by_fields",
]
