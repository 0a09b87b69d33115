"""Stage 1 of routing: which collections a query should search.

``EmbeddingCollectionSelector`` scores every collection from a few signals, each a number per (query,
collection) read through the collection's index (never its name or field names):

- ``probe``: the mean cosine of the query to the collection's 3 nearest chunks (an exact dense scan);
- ``sample``: the best cosine over ~200 chunk vectors sampled once per collection version;
- ``centroid``: the cosine to the mean chunk vector (cached per collection version);
- ``description``: the cosine to the collection's description (0 without one);
- ``language``: the share of the collection's chunks in the query's detected language;
- ``coverage``: the share of the query's terms the collection's vocabulary holds;
- ``lexical``: the share of the query's terms that its best-matching chunk holds (rare names that one
  chunk shares with the query say more than a vocabulary does);
- ``rare``: the same share weighted by each term's IDF in the collection, a term it lacks weighing as much
  as its rarest (one chunk holding a query's rare names outweighs a long chunk holding its common words);
- ``metadata``: the share of the query's words the collection's filter extractor reads as values of its
  metadata fields (a catalogue query such as "sports movies released before 2012");
- ``exemplar`` (learned): the mean cosine to the 5 nearest past queries known to belong to the collection
  (``exemplars``, e.g. training queries or queries users confirmed); 0 without them.

A word the filter extractor reads as a wanted value, a number or a field's name ("2005" as a year,
"series" as a type; ``Extraction.read_words``) counts, in ``coverage``, ``lexical`` and ``rare``, as held
by every chunk: a catalogue holds it in its fields rather than its text. It is a shortcut: every chunk, not
only the rows the filter keeps (``fields_hold_terms``; off, such terms count only where a chunk's text has
them). With it, ``metadata`` adds next to nothing, and the shipped weights leave it out (weight 0).

A linear score over them (weights fit as a conditional logit on training queries: see
``benchmarks/bench_collection_signals.py``) goes through a softmax over the collections, which makes the
confidence a calibrated probability. Collections whose probability is within ``fuse_ratio`` of the best
are returned too, to be fused (merged by each next hit's cosine with the query, or by rank weighted by
their probabilities where cosines say little: ``route.search.fuse_collections``). A filter the query
carries restricts the choice to the collections whose metadata has every field it names (when some have
them and some do not).

``LLMCollectionSelector`` asks an LLM with the names and descriptions; an invalid reply or an invented
name falls back to the embedding selector, and the reasoning says so."""

from __future__ import annotations

import json
import logging
import math
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from waypost.embeddings.query_vectors import query_vector
from waypost.errors import FilterError, InvalidInputError, WaypostError
from waypost.filters.model import Filter, conditions
from waypost.llm.base import GenerationParams, LLMProvider
from waypost.route.base import CollectionChoice

if TYPE_CHECKING:
    from waypost.engine import Engine
    from waypost.index.set import IndexSet

logger = logging.getLogger("waypost.route.collections")

SIGNALS = (
    "probe", "sample", "centroid", "description", "language", "coverage", "lexical", "rare", "metadata", "exemplar",
)  # fmt: skip
EXEMPLAR_K = 5
# Fit as a conditional logit on the TRAINING queries of the mixed workload, without exemplars (2,001
# queries of six sets; benchmarks/bench_collection_signals.py). Refit 2026-11-27 with ``rare`` (5-fold
# cross-validated log loss 0.0419 -> 0.0361) and 2026-11-28 with the words read as field values held
# (0.0361 -> 0.0331, fit without ``metadata``, which the held words make near redundant: with it, 0.0332
# and a weight of 0.31). The weights' scale is the softmax's inverse temperature, so the same fit
# calibrates the confidence.
DEFAULT_WEIGHTS: dict[str, float] = {
    "probe": 2.826,
    "sample": 1.706,
    "centroid": 1.93,
    # no collection of that workload has a description, so the fit could not weigh it: it counts as much as
    # the centroid (both summarize the collection in one vector); a signal that is 0 everywhere moves nothing
    "description": 1.93,
    "language": 0.381,
    "coverage": 2.405,
    "lexical": 2.699,
    "rare": 3.069,
    "metadata": 0.0,
}
SAMPLE_SIZE = 200
PROBE_K = 3
# A collection within this share of the best one's probability is searched too (a profile's "fuse_ratio" sets
# it; above 1: never fuse). Fused lists merge by each next hit's cosine with the query, or by rank weighted by
# probability where cosines do not compare (``route.search.fuse_collections``). The ratio was chosen under
# the earlier rank fusion: on the mixed workload's TRAIN split (967 queries, benchmarks/bench_fusion.py)
# ratios 0.5, 0.7, 0.85 and never fusing scored the same on every set (9, 4, 2 and 0 queries fused), and so
# did a confidence cap and steeper weights (p**2, p**4); 0.5 searches the query's own collection for the most
# queries (all but 1, against all but 2).
FUSE_RATIO = 0.5
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
    known = {n: set(engine.indexes.get(n).metadata.fields) for n in names}
    having = [n for n in names if wanted <= known[n]]
    if not having:
        missing = ", ".join(repr(f) for f in sorted(wanted - set().union(*known.values())))
        if missing:  # no collection could answer: say so once, with every collection's fields
            listing = "; ".join(f"{n}: {', '.join(sorted(known[n])) or 'none'}" for n in names)
            raise FilterError(f"unknown metadata field {missing}: no collection has it (fields of {listing})")
        return list(names), ""
    if len(having) == len(names):
        return list(names), ""
    fields = ", ".join(sorted(wanted))
    verb = "holds" if len(having) == 1 else "hold"
    return having, f"the query's filter names {fields}, which only {', '.join(having)} {verb}"


class EmbeddingCollectionSelector:
    name = "embedding"

    def __init__(
        self,
        engine: Engine,
        weights: Mapping[str, float] | None = None,
        fuse_ratio: float = FUSE_RATIO,
        sample_size: int = SAMPLE_SIZE,
        exemplars: Mapping[str, Sequence[str]] | None = None,
        fields_hold_terms: bool = True,
    ) -> None:
        self.engine = engine
        self.fields_hold_terms = fields_hold_terms
        self.exemplars = {name: list(texts) for name, texts in (exemplars or {}).items() if texts}
        self._exemplar_vectors: dict[str, Vector] = {}
        if self.exemplars:
            self.name = "learned"
        self.weights = dict(DEFAULT_WEIGHTS if weights is None else weights)
        check_signals(self.weights)
        self.fuse_ratio = fuse_ratio
        self.sample_size = sample_size
        self._profiles: dict[str, CollectionProfile] = {}
        self._lock = threading.Lock()

    # -- profiles ------------------------------------------------------------------------------
    def profile(self, name: str, index: IndexSet | None = None) -> CollectionProfile:
        """The collection's profile at its current version (made once per version); ``index``: its current
        index, when the caller holds it already."""
        store = self.engine.store
        index = index or self.engine.indexes.get(name)  # current: it checks the store's version itself
        version = index.version
        description = store.collection_description(name)
        with self._lock:
            found = self._profiles.get(name)
            if found is not None and found.version == version and found.description == description:
                return found
        info = store.collection(name)
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
    def exemplar_vectors(self, name: str) -> Vector | None:
        texts = self.exemplars.get(name)
        if not texts:
            return None
        with self._lock:
            found = self._exemplar_vectors.get(name)
        if found is None:
            model = self.engine.store.collection(name).embed_model
            found = np.asarray(self.engine.embedder(model).embed_documents(texts), np.float32)
            with self._lock:
                self._exemplar_vectors[name] = found
        return found

    def signals(
        self,
        query: str,
        names: Sequence[str],
        query_vectors: Mapping[str, Vector] | None = None,
        skip_identical: bool = False,
    ) -> dict[str, dict[str, float]]:
        """Every signal of every collection for ``query``: ``{collection: {signal: value}}``.
        ``query_vectors`` (embedding model -> the query's vector) saves embedding the query again;
        ``skip_identical`` leaves the query itself out of the exemplars (fitting on the exemplars)."""
        from waypost.text.language import detector

        language = detector().detect(query)
        vectors: dict[str, Vector] = dict(query_vectors or {})
        out: dict[str, dict[str, float]] = {}
        for name in names:
            index = self.engine.indexes.get(name)
            prof = self.profile(name, index)
            if prof.model not in vectors:
                vectors[prof.model] = np.asarray(query_vector(self.engine.embedder(prof.model), query), np.float32)
            q = vectors[prof.model]
            share, held = _metadata_reading(index, query, language) if prof.fields else (0.0, frozenset())
            _pos, top = index.dense.search(q, PROBE_K, index.live)
            out[name] = {
                "probe": float(np.mean(top)) if len(top) else 0.0,
                "sample": float(np.max(prof.sample @ q)) if len(prof.sample) else 0.0,
                "centroid": float(prof.centroid @ q),
                "description": 0.0 if prof.description_vector is None else float(prof.description_vector @ q),
                "language": prof.languages.get(language, 0.0),
                **_term_signals(index, query, language, held if self.fields_hold_terms else frozenset()),
                "metadata": share,
                "exemplar": _nearest_mean(self.exemplar_vectors(name), q, skip_identical) if self.exemplars else 0.0,
            }
        return out

    def select(
        self,
        query: str,
        collections: Sequence[str],
        filters: Filter | None = None,
        query_vectors: Mapping[str, Vector] | None = None,
    ) -> CollectionChoice:
        names = list(dict.fromkeys(collections))
        if not names:
            raise WaypostError("there is no collection to search: ingest documents first")
        allowed, why_fields = restrict_by_fields(self.engine, names, filters)
        if len(allowed) == 1:
            return CollectionChoice(allowed, 1.0, why_fields, self.name, {allowed[0]: 1.0})
        signals = self.signals(query, allowed, query_vectors)
        logits = np.array([sum(self.weights.get(s, 0.0) * signals[n][s] for s in SIGNALS) for n in allowed])
        probs = np.exp(logits - logits.max())
        probs /= probs.sum()
        order = np.argsort(-probs, kind="stable")
        best = float(probs[order[0]])
        chosen = [allowed[i] for i in order[:MAX_FUSED] if i == order[0] or probs[i] >= self.fuse_ratio * best]
        scores = {allowed[i]: round(float(probs[i]), 4) for i in order}
        lead = max(SIGNALS, key=lambda s: self.weights.get(s, 0.0) * signals[chosen[0]][s])
        reasoning = f"{chosen[0]} scores highest (p={best:.2f}; strongest signal: {lead})"
        together = float(probs[order[: len(chosen)]].sum())
        if len(chosen) > 1:
            reasoning += f"; {', '.join(chosen[1:])} close behind: fused (together p={together:.2f})"
        if why_fields:
            reasoning = why_fields + "; " + reasoning
        # the confidence is the lead collection's probability: fusing three unlikely ones is no certainty
        return CollectionChoice(chosen, best, reasoning, self.name, scores)

    def to_json(self) -> str:
        """The selector's learned state (weights, fuse ratio, exemplar queries) as JSON."""
        return json.dumps(
            {"weights": self.weights, "fuse_ratio": self.fuse_ratio, "exemplars": self.exemplars},
            ensure_ascii=False,
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, engine: Engine, text: str) -> EmbeddingCollectionSelector:
        weights, fuse_ratio, exemplars = parse_profile(text)
        return cls(engine, weights, fuse_ratio, exemplars=exemplars)


def check_signals(weights: Mapping[str, float]) -> None:
    unknown = set(weights) - set(SIGNALS)
    if unknown:
        raise InvalidInputError(f"unknown collection signals {sorted(unknown)}; known: {', '.join(SIGNALS)}")


def parse_profile(text: str) -> tuple[dict[str, float], float, dict[str, list[str]]]:
    """A collections profile's weights, fuse ratio and exemplar queries; ``InvalidInputError`` on a bad one."""
    try:
        raw = json.loads(text)
        weights = {str(k): float(v) for k, v in raw.get("weights", DEFAULT_WEIGHTS).items()}
        exemplars = {str(k): [str(t) for t in v] for k, v in raw.get("exemplars", {}).items()}
        fuse_ratio = float(raw.get("fuse_ratio", FUSE_RATIO))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InvalidInputError(f"not a collection selector profile: {exc}") from None
    check_signals(weights)
    return weights, fuse_ratio, exemplars


def read_profile_text(path: Path) -> str:
    """A collection selector profile's text; ``WaypostError`` naming the file when it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise WaypostError(f"cannot read the collection selector profile {path}: {reason}") from None


def check_profile_file(path: Path) -> None:
    """Read and parse a collections profile without an engine (a server checks one before it starts);
    ``WaypostError`` naming the file when it cannot be read or is not a profile."""
    text = read_profile_text(path)
    try:
        parse_profile(text)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{path}: {exc}") from None


def _live_vectors(index: IndexSet, dim: int) -> Vector:
    parts = []
    for segment, live in zip(index.segments, index.lives, strict=True):
        vectors = np.asarray(segment.dense.vectors, dtype=np.float32)
        parts.append(vectors if live is None else vectors[live])
    return np.concatenate(parts) if parts else np.zeros((0, dim), np.float32)


def _analysis_language(index: IndexSet, language: str) -> str:
    if language not in index.languages:
        return max(index.languages, key=lambda k: index.languages[k]) if index.languages else language
    return language


def _term_signals(index: IndexSet, query: str, language: str, held: frozenset[str] = frozenset()) -> dict[str, float]:
    """``coverage`` (the share of the query's terms, analyzed in its language, that occur in the collection),
    ``lexical`` (the share that the best single chunk holds) and ``rare`` (that share weighted by IDF).
    ``held``: terms the collection's metadata holds (read as values of its fields): they count as
    occurring in every chunk (a shortcut: only the rows the filter keeps hold them), once each."""
    terms = set(index.analyzers(_analysis_language(index, language)).terms(query))
    if not terms:
        return {"coverage": 0.0, "lexical": 0.0, "rare": 0.0}
    held = held & terms
    stats = index.chunk_stats
    df = stats.df
    ids = index.vocab.ids
    in_text = {t: ids[t] for t in terms if t in ids and ids[t] < df.shape[0] and df[ids[t]] > 0}
    known = [i for t, i in in_text.items() if t not in held]
    # a term's weight is its IDF here; a term the collection lacks weighs as much as its rarest could
    unseen = math.log(1.0 + max(1, stats.rows))
    idf = {term: math.log(1.0 + max(1, stats.rows) / float(df[term])) for term in known}
    held_weight = sum(
        math.log(1.0 + max(1, stats.rows) / float(df[in_text[t]])) if t in in_text else unseen for t in held
    )
    matched = np.zeros(len(index), dtype=np.int32)
    weighted = np.zeros(len(index), dtype=np.float64)
    for segment, offset in zip(index.segments, index.offsets, strict=True):
        postings = segment.chunks
        for term in known:
            if term < postings.terms:
                start, end = int(postings.by_term_ptr[term]), int(postings.by_term_ptr[term + 1])
                rows = offset + np.asarray(postings.by_term_row[start:end])
                matched[rows] += 1
                weighted[rows] += idf[term]
    if index.live is not None:
        matched[~index.live] = 0
        weighted[~index.live] = 0.0
    best = (int(matched.max()) if len(matched) else 0) + len(held)
    total = sum(idf.values()) + held_weight + unseen * (len(terms) - len(known) - len(held))
    rare = (float(weighted.max()) if len(weighted) else 0.0) + held_weight
    return {
        "coverage": (len(known) + len(held)) / len(terms),
        "lexical": best / len(terms),
        "rare": rare / total if total > 0 else 0.0,
    }


def _nearest_mean(vectors: Vector | None, q: Vector, skip_identical: bool) -> float:
    if vectors is None or not len(vectors):
        return 0.0
    sims = vectors @ q
    if skip_identical:
        sims = sims[sims < 0.9999]
    if not len(sims):
        return 0.0
    top = np.partition(sims, len(sims) - min(EXEMPLAR_K, len(sims)))[-EXEMPLAR_K:]
    return float(top.mean())


def _metadata_reading(index: IndexSet, query: str, language: str) -> tuple[float, frozenset[str]]:
    """The share of the query's words the collection's filter extractor turns into conditions, and the
    terms of the words it read as values or field names."""
    words = len(query.split())
    if not words:
        return 0.0, frozenset()
    extraction = index.extractor().extract(query)
    if extraction.filter is None:
        return 0.0, frozenset()
    held = frozenset(index.analyzers(_analysis_language(index, language)).terms(" ".join(extraction.read_words)))
    return max(0.0, 1.0 - len(extraction.semantic_query.split()) / words), held


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
    "check_profile_file",
    "check_signals",
    "parse_collection_reply",
    "parse_profile",
    "restrict_by_fields",
]
