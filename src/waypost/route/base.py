"""Contracts of the routing brain (``route/``): a pipeline is a value; selectors choose one with a
confidence and a reason; the planner, the quality judge, the cache and the telemetry log are small
policies the router composes. Implementations live in their own modules; nothing here names a strategy."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from waypost.errors import InvalidInputError

if TYPE_CHECKING:
    from waypost.filters.model import Filter

Scalar = str | int | float | bool
FUSE = "fuse"  # the pseudo-strategy of a pipeline that fuses other pipelines by reciprocal rank
AUTO = "auto"  # the strategy name that hands a query to the router


@dataclass(frozen=True)
class Pipeline:
    """What runs for a query: a registered strategy with its parameters, a passages policy, a rerank
    profile; or (``strategy == "fuse"``) the reciprocal-rank fusion of other pipelines. Hashable,
    printable (``label``), and a JSON value (``to_json`` / ``from_json``) that ``--pipeline`` replays."""

    strategy: str
    params: tuple[tuple[str, Scalar], ...] = ()
    passages: tuple[tuple[str, Scalar], ...] | None = None  # PassageConfig fields; () means the defaults
    rerank: str | None = None
    fuse: tuple[Pipeline, ...] = ()

    @classmethod
    def of(
        cls,
        strategy: str,
        params: Mapping[str, Scalar] | None = None,
        passages: Mapping[str, Scalar] | None = None,
        rerank: str | None = None,
    ) -> Pipeline:
        return cls(
            strategy,
            tuple(sorted((params or {}).items())),
            None if passages is None else tuple(sorted(passages.items())),
            rerank,
        )

    @classmethod
    def fusion(cls, parts: Sequence[Pipeline]) -> Pipeline:
        if len(parts) < 2:
            raise InvalidInputError("a fused pipeline needs at least two parts")
        return cls(FUSE, fuse=tuple(parts))

    @property
    def label(self) -> str:
        """Short and stable: ``hybrid``, ``hybrid+passages``, ``bm25[k1=1.2]+rerank:default``,
        ``fuse(hybrid|hipporag)``. Labels name outcome columns in training data and benchmark reports."""
        if self.strategy == FUSE:
            return "fuse(" + "|".join(p.label for p in self.fuse) + ")"
        text = self.strategy
        if self.params:
            text += "[" + ",".join(f"{k}={v}" for k, v in self.params) + "]"
        if self.passages is not None:
            text += "+passages" + ("[" + ",".join(f"{k}={v}" for k, v in self.passages) + "]" if self.passages else "")
        if self.rerank:
            text += f"+rerank:{self.rerank}"
        return text

    def strategies(self) -> list[str]:
        """Every registered strategy this pipeline runs."""
        if self.strategy == FUSE:
            return [s for p in self.fuse for s in p.strategies()]
        return [self.strategy]

    def to_dict(self) -> dict[str, Any]:
        if self.strategy == FUSE:
            return {"strategy": FUSE, "fuse": [p.to_dict() for p in self.fuse]}
        out: dict[str, Any] = {"strategy": self.strategy}
        if self.params:
            out["params"] = dict(self.params)
        if self.passages is not None:
            out["passages"] = dict(self.passages)
        if self.rerank:
            out["rerank"] = self.rerank
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, raw: object) -> Pipeline:
        if isinstance(raw, str):
            return cls.of(raw)
        if not isinstance(raw, Mapping) or not isinstance(raw.get("strategy"), str):
            raise InvalidInputError(f'a pipeline is {{"strategy": NAME, ...}}, not {raw!r}')
        unknown = set(raw) - {"strategy", "params", "passages", "rerank", "fuse"}
        if unknown:
            raise InvalidInputError(f"a pipeline has no field {', '.join(sorted(map(repr, unknown)))}")
        if raw["strategy"] == FUSE:
            parts = raw.get("fuse")
            if not isinstance(parts, list):
                raise InvalidInputError('a "fuse" pipeline lists its parts under "fuse"')
            return cls.fusion([cls.from_dict(p) for p in parts])
        for name in ("params", "passages"):
            value = raw.get(name)
            if value is not None and not (
                isinstance(value, Mapping) and all(isinstance(v, (str, int, float, bool)) for v in value.values())
            ):
                raise InvalidInputError(f"pipeline {name} is a mapping of names to numbers, strings or booleans")
        rerank = raw.get("rerank")
        if rerank is not None and not isinstance(rerank, str):
            raise InvalidInputError("pipeline rerank is a profile name")
        return cls.of(raw["strategy"], raw.get("params"), raw.get("passages"), rerank)

    @classmethod
    def from_json(cls, text: str) -> Pipeline:
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"--pipeline is not JSON: {exc.msg} at character {exc.pos}") from None
        return cls.from_dict(raw)


Features = dict[str, float]  # named numeric features of one query (see ``route.features``)


@dataclass
class Choice:
    """A selector's answer: the pipeline, a calibrated confidence in [0, 1], a readable reason, and every
    candidate's score, best first (the corrective loop takes the next one from there)."""

    pipeline: Pipeline
    confidence: float
    reasoning: str
    selector: str
    ranking: list[tuple[Pipeline, float]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "pipeline": self.pipeline.to_dict(),
            "label": self.pipeline.label,
            "confidence": round(self.confidence, 4),
            "reasoning": self.reasoning,
            "selector": self.selector,
            "ranking": [[p.label, round(s, 4)] for p, s in self.ranking],
        }


class PipelineSelector(Protocol):
    """Chooses a pipeline among ``candidates`` (all runnable on the collection) from the query's features."""

    name: str

    def select(self, query: str, features: Features, candidates: Sequence[Pipeline]) -> Choice: ...


@dataclass
class CollectionChoice:
    collections: list[str]  # one, or several to fuse
    confidence: float  # the probability of the lead collection (the first)
    reasoning: str
    selector: str
    scores: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "collections": list(self.collections),
            "confidence": round(self.confidence, 4),
            "reasoning": self.reasoning,
            "selector": self.selector,
            "scores": {name: round(score, 4) for name, score in self.scores.items()},
        }


class CollectionSelector(Protocol):
    """Chooses among ``collections``; a filter the query carries is a signal (its fields narrow the choice)."""

    name: str

    def select(self, query: str, collections: Sequence[str], filters: Filter | None = None) -> CollectionChoice: ...


@dataclass
class RouteRecord:
    """One routed query as telemetry keeps it (bounded in the store; ``waypost stats --routes``)."""

    at: float  # unix seconds
    collection: str
    pipeline: str  # label
    confidence: float
    selector: str
    retries: int
    cache_hit: bool
    timings_ms: dict[str, float]
    query_chars: int


class GainPredictor(Protocol):
    """A trained router profile (``route/model.py``, saved as JSON): each pipeline's predicted gain in
    the set's metric over ``default`` (hybrid), from a query's features."""

    pipelines: list[Pipeline]
    default: Pipeline
    threshold: float  # below this confidence the router takes the low-confidence policy
    low_confidence: str  # "default" (the reliability default) or "fuse" (RRF of the top two)

    def predict(self, features: Features) -> dict[str, float]: ...  # pipeline label -> predicted gain

    def confidence(self, gains: Mapping[str, float]) -> float: ...  # calibrated, in [0, 1]

    def unfamiliar(self, features: Features) -> str | None: ...  # why the collection is unlike its training ones


@dataclass
class QueryPlan:
    """What the planner made of a query: the sub-queries to run (empty: the query itself), expansions,
    constraints and a mode. Printed by ``--explain``."""

    query: str
    sub_queries: list[str] = field(default_factory=list)
    expansions: list[str] = field(default_factory=list)
    must_include: list[str] = field(default_factory=list)
    must_exclude: list[str] = field(default_factory=list)
    date_range: tuple[str | None, str | None] | None = None  # ISO dates, either end open
    document_types: list[str] = field(default_factory=list)
    collections: list[str] = field(default_factory=list)
    mode: str = "balanced"  # precision | balanced | recall
    planner: str = "rules"
    reasoning: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"query": self.query, "mode": self.mode, "planner": self.planner}
        for name in ("sub_queries", "expansions", "must_include", "must_exclude", "document_types", "collections"):
            if getattr(self, name):
                out[name] = list(getattr(self, name))
        if self.date_range is not None:
            out["date_range"] = list(self.date_range)
        if self.reasoning:
            out["reasoning"] = self.reasoning
        return out


class Planner(Protocol):
    name: str

    def plan(self, query: str) -> QueryPlan: ...


@dataclass
class Quality:
    """The corrective loop's grade of a result: a score in [0, 1], a CRAG-style verdict from two learned
    thresholds (correct above the upper, incorrect below the lower, ambiguous between), and its signals."""

    score: float
    verdict: str  # correct | ambiguous | incorrect
    signals: dict[str, float] = field(default_factory=dict)


@dataclass
class Attempt:
    """One retry of the corrective loop: what changed, why, its grade, and whether it was kept."""

    action: str  # e.g. "next pipeline hipporag", "more candidates", "dropped filter year>=2010"
    reason: str
    quality: float
    kept: bool
    ms: float = 0.0


class Telemetry(Protocol):
    def record(self, record: RouteRecord) -> None: ...
