"""Corrective retrieval (CRAG-style): grade a result, and retry when it looks wrong.

``QualityEvaluator`` scores a result in [0, 1] from post-retrieval signals (query performance prediction:
the score distribution, NQC/WIG-like; query-term coverage of the top hits; dense/BM25 agreement; how many
documents the hits span), combined by a small logistic model fit on training queries
(``route.quality_fit``). Two learned thresholds give a verdict: correct above the upper, incorrect below
the lower, ambiguous between. ``CorrectiveLoop`` retries below them (the router's next pipeline, the
strictest extracted filter dropped, another collection, more candidates) and keeps the better result."""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from waypost.context import SearchContext, Timer
from waypost.errors import WaypostError
from waypost.filters.model import And, Condition, Filter, all_of, conditions
from waypost.index.topk import top_k
from waypost.route.base import Attempt, Choice, Pipeline, Quality
from waypost.text.analyzers import analyzers, normalize
from waypost.types import RetrievalResult

logger = logging.getLogger("waypost.route.corrective")

TOP = 10  # hits a grade reads
Z_CLIP = 3.0  # standardized signals are clipped to this many standard deviations
SIGNALS = (
    "fill",  # hits returned / k
    "gap",  # (s1 - s2) / |s1|
    "spread",  # std of the top scores / |s1|  (NQC, scale-free)
    "wig",  # mean of the top 3 minus mean of the top 10, / |s1|  (WIG-like)
    "coverage",  # mean share of the query's terms in each of the top 5 hits
    "coverage_any",  # share of the query's terms found in some top-5 hit
    "diversity",  # distinct documents / hits in the top 10
    "agreement",  # overlap of the dense and BM25 top 10 over the collection (query-level)
    "dense_top",  # best cosine of the query with any chunk (query-level)
)
Row = tuple[Mapping[str, float], float]  # a result's signals and its realized metric


@dataclass
class QualityModel:
    """A logistic model over standardized signals, the CRAG thresholds and the retry policy; JSON."""

    names: list[str]
    mean: list[float]
    scale: list[float]
    coef: list[float]
    intercept: float
    upper: float = 0.6
    lower: float = 0.3
    retry_ambiguous: bool = False
    keep_margin: float = 0.0  # a retry replaces the result only if it grades this much higher
    info: dict[str, Any] = field(default_factory=dict)  # how it was fit (rows, sets, correlation)

    def score(self, signals: Mapping[str, float]) -> float:
        z = self.intercept
        for name, mu, sd, w in zip(self.names, self.mean, self.scale, self.coef, strict=True):
            value = signals.get(name)
            if value is not None and math.isfinite(value):  # a missing signal counts as the training mean
                z += w * max(-Z_CLIP, min(Z_CLIP, (value - mu) / sd))  # no extrapolation far past training
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))

    def verdict(self, score: float) -> str:
        if score >= self.upper:
            return "correct"
        return "incorrect" if score < self.lower else "ambiguous"

    def wants_retry(self, verdict: str) -> bool:
        return verdict == "incorrect" or (verdict == "ambiguous" and self.retry_ambiguous)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> QualityModel:
        try:
            raw = json.loads(text)
            model = cls(**raw)
        except (ValueError, TypeError) as exc:
            raise WaypostError(f"not a corrective quality profile: {exc}") from None
        if not (len(model.names) == len(model.mean) == len(model.scale) == len(model.coef)):
            raise WaypostError("corrective quality profile: names, mean, scale and coef differ in length")
        if any(s <= 0 for s in model.scale) or not 0.0 <= model.lower <= model.upper <= 1.0:
            raise WaypostError("corrective quality profile: scales must be positive and 0 <= lower <= upper <= 1")
        return model

    def save(self, path: str | Path) -> None:
        target = Path(path)
        tmp = target.with_suffix(".tmp")
        tmp.write_text(self.to_json() + "\n", encoding="utf-8")
        tmp.replace(target)

    @classmethod
    def load(cls, path: str | Path | None = None) -> QualityModel:
        """The profile at ``path``, or the one shipped with the package."""
        if path is not None:
            return cls.from_json(Path(path).read_text(encoding="utf-8"))
        shipped = resources.files("waypost.route").joinpath("profiles/corrective.json")
        return cls.from_json(shipped.read_text(encoding="utf-8"))


def _scores_signals(scores: Sequence[float], k: int) -> dict[str, float]:
    s = np.asarray(scores[:TOP], dtype=np.float64)
    out = {"fill": min(1.0, len(scores) / max(1, min(k, TOP)))}
    if s.size == 0:
        return {**out, "gap": 0.0, "spread": 0.0, "wig": 0.0}
    top = abs(float(s[0])) or 1.0
    out["gap"] = float(s[0] - s[1]) / top if s.size > 1 else 1.0
    out["spread"] = float(s.std()) / top
    out["wig"] = float(s[:3].mean() - s.mean()) / top
    return out


class QualityEvaluator:
    """Grades a result in [0, 1]. Give it the ``SearchContext`` the query ran in: its cached dense and BM25
    scores give the agreement and best-cosine signals for free (a fresh context embeds the query once).
    The query-level signals are kept per query, so grading a retry of the same query costs only the rest."""

    def __init__(self, model: QualityModel | None = None) -> None:
        self.model = model or QualityModel.load()
        self._query_level: dict[tuple[int, int, str, str], dict[str, float]] = {}
        self._terms: dict[tuple[int, str], list[str]] = {}

    def signals(
        self,
        query: str,
        result: RetrievalResult,
        ctx: SearchContext | None = None,
        k: int = TOP,
        filters: Filter | None = None,
    ) -> dict[str, float]:
        hits = result.hits[:TOP]
        out = _scores_signals([h.score for h in result.hits], k)
        out["diversity"] = len({h.chunk.document_id for h in hits}) / len(hits) if hits else 0.0
        terms = self._query_terms(query, ctx)
        if terms and hits:
            shares, found = [], set()
            for hit in hits[:5]:
                fields = (
                    " ".join(map(str, hit.metadata.values())) if hit.metadata else ""
                )  # a hit's fields are its text too
                text = normalize(f"{hit.provenance.document_title} {fields} {hit.chunk.text}")
                present = {t for t in terms if t in text}  # analyzed terms (stems) as substrings: cheap
                shares.append(len(present) / len(terms))
                found |= present
            out["coverage"] = sum(shares) / len(shares)
            out["coverage_any"] = len(found) / len(terms)
        elif hits:
            out["coverage"] = out["coverage_any"] = 0.0
        if ctx is not None:
            out.update(self._collection_signals(query, ctx, filters))
        return out

    def grade(
        self,
        query: str,
        result: RetrievalResult,
        ctx: SearchContext | None = None,
        k: int = TOP,
        filters: Filter | None = None,
    ) -> Quality:
        signals = self.signals(query, result, ctx, k, filters)
        if not result.hits:  # nothing found is wrong whatever the thresholds say
            return Quality(0.0, "incorrect", signals)
        score = self.model.score(signals)
        return Quality(score, self.model.verdict(score), signals)

    def _query_terms(self, query: str, ctx: SearchContext | None) -> list[str]:
        key = (id(ctx.indexes) if ctx is not None else 0, query)
        found = self._terms.get(key)
        if found is None:
            if ctx is not None:
                terms = ctx.indexes.bm25.query_tokens(query)  # the collection's analyzer, in the query's language
            else:
                terms = analyzers()("en").terms(query)
            # a stem's last letter may differ from the word's ("graviti" in "gravity"): match without it
            found = list(
                dict.fromkeys(
                    t[:-1] if len(t) >= 5 and t.isascii() else t for t in terms if len(t) > 1 or not t.isascii()
                )
            )
            if len(self._terms) > 512:
                self._terms.clear()
            self._terms[key] = found
        return found

    def _collection_signals(self, query: str, ctx: SearchContext, filters: Filter | None) -> dict[str, float]:
        key = (id(ctx.indexes), ctx.indexes.generation, str(filters), query)
        found = self._query_level.get(key)
        if found is not None:
            return found
        mask = ctx.prefilter(filters, Timer())
        lexical = ctx.lexical_scores(query).astype(np.float32)
        d_pos, d_scores = ctx.dense(query).top(TOP, mask)
        s_pos, s_scores = top_k(lexical, TOP, mask)
        s_pos = s_pos[s_scores > 0]
        both = len(set(d_pos.tolist()) & set(s_pos.tolist()))
        found = {
            "agreement": both / max(1, min(TOP, len(d_pos))),
            "dense_top": float(d_scores[0]) if d_scores.size else 0.0,
        }
        if len(self._query_level) > 512:
            self._query_level.clear()
        self._query_level[key] = found
        return found


Execute = Callable[[Pipeline, int, Filter | None], RetrievalResult]
ANOTHER_COLLECTION = "another collection"  # the attempt's action when it searched another collection
Alternatives = Callable[[str, int, Filter | None], tuple[str, RetrievalResult] | None]  # (collection, result)
Action = Callable[
    [], tuple[RetrievalResult, SearchContext | None] | None
]  # a retry: its result, the context to grade in


@dataclass
class _Candidate:
    result: RetrievalResult
    quality: Quality
    action: str


class CorrectiveLoop:
    """Below the learned thresholds, retry at most ``max_retries`` times, in this order: the strictest
    extracted filter dropped (first when the result is short), the router's next pipeline
    (``choice.ranking``), another collection (``alternatives``, if the engine gives one), the pipeline
    after that, more candidates (``k * 3``, then cut to ``k``). Keeps the result the evaluator grades
    best; every attempt says what it tried and why."""

    def __init__(
        self, evaluator: QualityEvaluator, max_retries: int = 2, alternatives: Alternatives | None = None
    ) -> None:
        if max_retries < 0:
            raise WaypostError(f"max_retries must be 0 or more, got {max_retries}")
        self.evaluator = evaluator
        self.max_retries = max_retries
        self.alternatives = alternatives

    def correct(
        self,
        query: str,
        result: RetrievalResult,
        choice: Choice,
        execute: Execute,
        k: int,
        filters: Filter | None,
        *,
        extracted: Filter | None = None,
        ctx: SearchContext | None = None,
        alternatives: Alternatives | None = None,
    ) -> tuple[RetrievalResult, list[Attempt]]:
        """``filters``: what the query ran with; ``extracted``: the part of it taken from the query's
        words (only that part may be dropped; a user's filter never is); ``ctx``: the search context the
        query ran in (cheap agreement signals); ``alternatives``: another collection to try for this
        query (stage 1's runner-up), else the loop's own."""
        model = self.evaluator.model
        first = self.evaluator.grade(query, result, ctx, k, filters)
        best = _Candidate(result, first, choice.pipeline.label)
        attempts: list[Attempt] = []
        if not model.wants_retry(first.verdict) or self.max_retries == 0:
            return result, attempts
        why = f"{choice.pipeline.label} graded {first.score:.2f} ({first.verdict})"
        other = alternatives or self.alternatives
        for action, run in self._actions(query, result, choice, execute, k, filters, extracted, ctx, other):
            if len(attempts) >= self.max_retries:
                break
            t0 = time.perf_counter()
            try:
                found = run()
            except WaypostError as exc:  # a pipeline that cannot run here: say so and go on
                attempts.append(Attempt(action, f"{why}; failed: {exc}", 0.0, False, _ms(t0)))
                continue
            if found is None:
                continue
            retried, grade_ctx = found
            retried.hits = retried.hits[:k]
            quality = self.evaluator.grade(query, retried, grade_ctx, k, filters if grade_ctx is ctx else None)
            better = quality.score > best.quality.score + model.keep_margin
            if better:
                best = _Candidate(retried, quality, action)
            reason = f"{why}; this graded {quality.score:.2f} ({quality.verdict})" + (
                ", better: kept" if better else ", not better"
            )
            attempts.append(Attempt(action, reason, quality.score, better, _ms(t0)))
            if best.quality.verdict == "correct":
                break
        if best.result is not result:
            for attempt in attempts:
                attempt.kept = attempt.action == best.action
            best.result.explanation.notes.append(
                f"corrective: kept '{best.action}' ({best.quality.score:.2f}) over {choice.pipeline.label} "
                f"({first.score:.2f})"
            )
        elif attempts:
            result.explanation.notes.append(
                f"corrective: {len(attempts)} retries graded no better than {first.score:.2f}; kept the first"
            )
        return best.result, attempts

    def _actions(
        self,
        query: str,
        result: RetrievalResult,
        choice: Choice,
        execute: Execute,
        k: int,
        filters: Filter | None,
        extracted: Filter | None,
        ctx: SearchContext | None,
        alternatives: Alternatives | None = None,
    ) -> list[tuple[str, Action]]:
        """The retries in the order they are tried: a short result first loosens an extracted filter;
        then the next pipeline, another collection, the pipeline after, and more candidates."""

        def run(pipeline: Pipeline, depth: int, flt: Filter | None) -> Action:
            return lambda: (execute(pipeline, depth, flt), ctx)

        nexts = [p for p in dict.fromkeys(p for p, _s in choice.ranking) if p != choice.pipeline][:2]
        actions = [(f"next pipeline {p.label}", run(p, k, filters)) for p in nexts]
        if alternatives is not None:
            found_other = alternatives

            def other() -> tuple[RetrievalResult, SearchContext | None] | None:
                found = found_other(query, k, filters)
                if found is None:
                    return None
                found[1].explanation.notes.append(f"from collection {found[0]}")
                return found[1], None

            actions.insert(min(1, len(actions)), (ANOTHER_COLLECTION, other))
        loose = drop_strictest(filters, extracted, ctx) if extracted is not None and filters is not None else None
        if loose is not None:
            dropped, relaxed = loose
            # a short result is the filter's fault first; otherwise the filter goes after the next pipeline
            actions.insert(
                0 if len(result.hits) < k else min(1, len(actions)),
                (f"dropped filter {dropped}", run(choice.pipeline, k, relaxed)),
            )
        actions.append((f"more candidates ({k * 3})", run(choice.pipeline, k * 3, filters)))
        return actions


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000.0, 3)


def drop_strictest(
    filters: Filter, extracted: Filter, ctx: SearchContext | None
) -> tuple[Condition, Filter | None] | None:
    """``filters`` without its most selective extracted condition (fewest matching chunks, when a context
    can count them; else the last one), or None when no extracted condition can be dropped safely (only
    a top-level AND of conditions, or a single condition, is loosened)."""
    candidates = [c for c in conditions(extracted)]
    if isinstance(filters, Condition):
        parts: list[Filter] = [filters]
    elif isinstance(filters, And) and all(isinstance(i, Condition) for i in filters.items):
        parts = list(filters.items)
    else:
        return None
    droppable = [c for c in candidates if c in parts]
    if not droppable:
        return None
    if ctx is not None:
        live = ctx.indexes.live  # masks ignore deletes (an exclusion keeps deleted rows): count live rows only
        masks = [ctx.indexes.metadata.mask(c) for c in droppable]
        counts = [int((m if live is None else m & live).sum()) for m in masks]
        strictest = droppable[int(np.argmin(counts))]
    else:
        strictest = droppable[-1]
    return strictest, all_of([p for p in parts if p != strictest])
