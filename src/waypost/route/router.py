"""The router: for one collection, the features pass (the hybrid first stage), a selector's choice among
the runnable pipelines, the pipeline run (the first stage reused when the choice is plain hybrid), the
corrective loop, and the route recorded in the result's explanation, the cache and the telemetry log.
Everything beyond the selector is optional: a planner, a corrective loop, a cache, a telemetry sink."""

from __future__ import annotations

import importlib
import logging
import threading
import time
import uuid
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from waypost.base import Reranker
from waypost.errors import InvalidInputError, WaypostError
from waypost.filters.model import Filter, all_of
from waypost.retrieval.fusion import FusionConfig
from waypost.route.base import FUSE, Attempt, Choice, GainPredictor, Pipeline, PipelineSelector, Planner, RouteRecord
from waypost.route.base import Telemetry as TelemetrySink
from waypost.route.candidates import StructureCache, runnable_pipelines
from waypost.route.config import RouterConfig
from waypost.route.corrective import ANOTHER_COLLECTION
from waypost.route.execute import interleave_results, run_pipeline
from waypost.route.features import extract_features
from waypost.route.selectors.common import is_default
from waypost.route.selectors.heuristic import HeuristicSelector
from waypost.types import RetrievalResult

if TYPE_CHECKING:
    from waypost.context import SearchContext
    from waypost.engine import Collection, Engine
    from waypost.route.corrective import Alternatives

logger = logging.getLogger("waypost.route")

SHIPPED_PROFILE = Path(__file__).with_name("profiles") / "default.json"
Execute = Callable[[Pipeline, int, Filter | None], RetrievalResult]


class Corrector(Protocol):
    """The corrective loop (``route.corrective.CorrectiveLoop``): grades a result, retries below its
    thresholds, keeps the best and says what it tried."""

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
    ) -> tuple[RetrievalResult, list[Attempt]]: ...


class ResultCache(Protocol):
    """A query cache (``route.cache.QueryCache``); keys come from ``Router.cache_key``."""

    def get(self, key: Any) -> RetrievalResult | None: ...

    def put(self, key: Any, result: RetrievalResult) -> None: ...


CacheKeyFn = Callable[["Collection", str, str, int, Filter | None], Hashable]
PlanRunner = Callable[[Any, Callable[[str], RetrievalResult], int], RetrievalResult]  # (plan, run one query, k)


def load_profile(path: Path | None = None) -> GainPredictor | None:
    """The trained gain model at ``path`` (an error when it cannot be read), or the shipped one (None when
    the package has none)."""
    where = path if path is not None else SHIPPED_PROFILE
    if path is None and not where.exists():
        return None
    try:
        model = importlib.import_module("waypost.route.model")
    except ImportError:
        if path is not None:
            raise WaypostError("router profiles need waypost.route.model, which this install lacks") from None
        return None
    return cast(GainPredictor, model.GainModel.load(where))


@dataclass
class Stage:
    """Per-stage wall time of one routed query, in milliseconds."""

    first_stage: float = 0.0  # the hybrid pass the features are read from
    features: float = 0.0  # beyond the hybrid pass
    select: float = 0.0
    retrieve: float = 0.0
    correct: float = 0.0

    def to_dict(self) -> dict[str, float]:
        return {k: round(v, 3) for k, v in self.__dict__.items()}


class Router:
    def __init__(
        self,
        selector: PipelineSelector | None = None,
        *,
        config: RouterConfig | None = None,
        planner: Planner | None = None,
        plan_runner: PlanRunner | None = None,
        corrector: Corrector | None = None,
        cache: ResultCache | None = None,
        cache_key: CacheKeyFn | None = None,
        telemetry: TelemetrySink | None = None,
        selector_for: Callable[[Collection], PipelineSelector] | None = None,
    ) -> None:
        """``selector``: one for every collection (default: from ``config``, see ``make_selector``);
        ``selector_for``: one per collection instead (an embedding selector needs its embedder)."""
        self.config = config or RouterConfig()
        self.config.check()
        self._selector = selector
        self._selector_for = selector_for
        self.planner = planner
        self.plan_runner = plan_runner
        self.corrector = corrector
        self.cache = cache
        self.cache_key = cache_key
        self.telemetry = telemetry
        self._made: dict[str, PipelineSelector] = {}
        self.structures = StructureCache()
        self._lock = threading.Lock()
        self._routing_id = uuid.uuid4().hex[:12]  # in cache keys: another router's results are not served

    @classmethod
    def from_engine(cls, engine: Engine) -> Router:
        """The router ``engine.config.router`` describes, with the engine's query cache and telemetry."""
        from waypost.route.cache import cache_key
        from waypost.route.corrective import CorrectiveLoop, QualityEvaluator, QualityModel
        from waypost.route.planner import LLMPlanner, RulePlanner, run_plan

        config = engine.config.router
        planner: Planner | None = None
        if config.planner == "rules":
            planner = RulePlanner()
        elif config.planner == "llm":
            llm = engine.llm()
            planner = LLMPlanner(llm, RulePlanner(), engine.config.prices) if llm is not None else RulePlanner()
        corrector = None
        if config.corrective:
            model = QualityModel.load(config.corrective_profile)
            corrector = CorrectiveLoop(QualityEvaluator(model), max_retries=config.max_retries)
        return cls(
            config=config,
            planner=planner,
            plan_runner=run_plan if planner is not None else None,
            corrector=corrector,
            cache=engine.query_cache,
            cache_key=cache_key,
            telemetry=engine.telemetry,
        )

    def use_selector(self, selector: PipelineSelector) -> None:
        """Route every collection with ``selector`` from now on (a benchmark's freshly trained profile)."""
        with self._lock:
            self._selector = selector
            self._routing_id = uuid.uuid4().hex[:12]

    def selector(self, collection: Collection) -> PipelineSelector:
        """The given selector, else ``selector_for(collection)``, else the one the config names (made on
        first use; an embedding selector once per embedder)."""
        if self._selector is not None:
            return self._selector
        if self._selector_for is not None:
            return self._selector_for(collection)
        key = collection.model if self.config.selector == "embedding" else ""
        with self._lock:
            if key not in self._made:
                self._made[key] = make_selector(self.config, collection.engine, collection)
            return self._made[key]

    def retrieve(
        self,
        collection: Collection,
        query: str,
        k: int = 10,
        filters: Filter | None = None,
        fusion: FusionConfig | None = None,
        passages: Any = None,
        rerank: str | Reranker | None = None,
        params: Mapping[str, object] | None = None,
        *,
        alternatives: Alternatives | None = None,
    ) -> RetrievalResult:
        """Route ``query`` on ``collection`` and run the chosen pipeline; ``passages`` (a PassageConfig)
        and ``rerank`` (a profile name), when given, override the chosen pipeline's; a ``Reranker`` object
        reorders the routed result. ``params`` are refused: they belong to a named strategy.
        ``alternatives``: another collection the corrective loop may try (``Engine.search`` gives stage 1's
        runner-up when it was unsure)."""
        if params:
            raise InvalidInputError("params belong to a named strategy; strategy='auto' chooses its own")
        if rerank is not None and not isinstance(rerank, str):
            routed = self.retrieve(
                collection, query, max(k, rerank.depth), filters, fusion, passages, alternatives=alternatives
            )
            result = rerank.rerank(query, routed)
            result.hits = result.hits[:k]
            return result
        started = time.perf_counter()
        variant = f"auto@{self._routing_id}"  # this router and what the caller set beyond the query
        if passages is not None or rerank is not None or fusion is not None:
            variant += f"|passages={passages!r}|rerank={rerank}|fusion={fusion!r}"
        key = None
        if self.cache is not None and self.cache_key is not None:
            key = self.cache_key(collection, query, variant, k, filters)
        if self.cache is not None and key is not None:
            cached = self.cache.get(key)
            if cached is not None:
                route = dict(cached.explanation.route or {})
                route["cache_hit"] = True
                cached.explanation.route = route
                self._record(collection.name, route, (time.perf_counter() - started) * 1000, len(query))
                return cached
        plan = self.planner.plan(query) if self.planner is not None else None
        typed = ""  # what the plan's document types did
        if plan is not None and plan.document_types:
            from waypost.route.planner import type_filter

            by_type, typed = type_filter(plan, collection.engine.indexes.get(collection.name).metadata)
            if by_type is not None:
                filters = by_type if filters is None else all_of([filters, by_type])
        if plan is not None and (plan.sub_queries or plan.must_include or plan.must_exclude):
            result = self._run_plan(plan, collection, k, filters, fusion, passages, rerank)
        else:
            result = self.route_one(collection, query, k, filters, fusion, passages, rerank, alternatives)
            if plan is not None and result.explanation.route is not None:
                result.explanation.route["plan"] = plan.to_dict()
        if typed and result.explanation.route is not None:
            result.explanation.route["plan"]["document_types_applied"] = typed
            result.explanation.notes.append(typed)
        self._finish(collection, key, result, started, len(query))
        return result

    def route_one(
        self,
        collection: Collection,
        query: str,
        k: int = 10,
        filters: Filter | None = None,
        fusion: FusionConfig | None = None,
        passages: Any = None,
        rerank: str | None = None,
        alternatives: Alternatives | None = None,
    ) -> RetrievalResult:
        """One query, no plan, no cache: features, choice, run, correction; the route in the explanation."""
        stage = Stage()
        ctx = collection.context()
        fusion = fusion or collection.engine.config.fusion
        found = extract_features(query, ctx, filters, k, fusion)
        t1 = time.perf_counter()
        config = self.config
        llm = collection.engine.llm_configured
        candidates = runnable_pipelines(ctx, llm, config.pool, config.build_on_first_use, self.structures)
        selector = self.selector(collection)
        choice = selector.select(query, found.features, candidates)
        choice.pipeline = override(choice.pipeline, passages, rerank)
        t2 = time.perf_counter()
        stage.first_stage, stage.features = found.first_stage_ms, found.features_ms
        stage.select = (t2 - t1) * 1000

        def execute(pipeline: Pipeline, depth: int, flt: Filter | None) -> RetrievalResult:
            return run_pipeline(collection, pipeline, query, depth, flt, ctx=ctx, fusion=fusion)

        reused = is_default(choice.pipeline)
        result = found.first_stage if reused else execute(choice.pipeline, k, filters)
        t3 = time.perf_counter()
        stage.retrieve = (t3 - t2) * 1000
        attempts: list[Attempt] = []
        asked: list[str] = []  # the other collections the corrective loop searched
        # an unsure choice is graded; an empty result is wrong however sure the choice was
        if self.corrector is not None and (choice.confidence < config.correct_below or not result.hits):
            more: dict[str, Any] = {}
            if alternatives is not None:
                offered = alternatives

                def tracked(q: str, depth: int, flt: Filter | None) -> tuple[str, RetrievalResult] | None:
                    found_other = offered(q, depth, flt)
                    if found_other is not None:
                        asked.append(found_other[0])
                    return found_other

                more["alternatives"] = tracked
            result, attempts = self.corrector.correct(
                query, result, choice, execute, k, filters, extracted=found.extracted, ctx=ctx, **more
            )
            stage.correct = (time.perf_counter() - t3) * 1000
        result.hits = result.hits[:k]
        route = route_dict(collection.name, choice, candidates, stage, attempts, reused)
        if asked and any(a.kept and a.action == ANOTHER_COLLECTION for a in attempts):
            route["collection"] = asked[-1]
            route["cacheable"] = False  # its key would name this collection and version, not the other's
        result.explanation.route = route
        return result

    def _run_plan(
        self,
        plan: Any,
        collection: Collection,
        k: int,
        filters: Filter | None,
        fusion: FusionConfig | None,
        passages: Any,
        rerank: str | None,
    ) -> RetrievalResult:
        """Each query of the plan routed on its own; fused (by the planner's runner when given)."""
        routes: list[dict[str, Any]] = []

        depth = k * 3 if plan.must_include or plan.must_exclude else k  # text post-filters drop some hits

        def run(text: str) -> RetrievalResult:
            one = self.route_one(collection, text, depth, filters, fusion, passages, rerank)
            routes.append({"query": text, **(one.explanation.route or {})})
            return one

        if self.plan_runner is not None:
            result = self.plan_runner(plan, run, k)
        else:
            queries = list(dict.fromkeys([plan.query, *plan.sub_queries]))
            result = interleave_results(plan.query, [run(q) for q in queries], k)
        first = next((r for r in routes if r.get("query") == plan.query), routes[0] if routes else {})
        route = {key: value for key, value in first.items() if key != "query"}
        route["plan"] = plan.to_dict()
        route["sub_routes"] = [{"query": r["query"], "label": r.get("label")} for r in routes]
        for sub, r in zip(route["sub_routes"], routes, strict=True):
            if r.get("cacheable") is False:
                sub["cacheable"] = False
        result.explanation.route = route
        return result

    def _finish(
        self, collection: Collection, key: Hashable | None, result: RetrievalResult, started: float, n: int
    ) -> None:
        route = result.explanation.route or {}
        route.setdefault("cache_hit", False)
        cacheable = route.pop("cacheable", True) and all(r.get("cacheable", True) for r in route.get("sub_routes", []))
        if self.cache is not None and key is not None and cacheable:
            self.cache.put(key, result)
        self._record(collection.name, route, (time.perf_counter() - started) * 1000, n)

    def _record(self, collection: str, route: dict[str, Any], total_ms: float, query_chars: int) -> None:
        if self.telemetry is None:
            return
        timings = dict(route.get("timings_ms") or {})
        timings["total"] = round(total_ms, 3)
        record = RouteRecord(
            time.time(),
            collection,
            str(route.get("label", "")),
            float(route.get("confidence", 0.0)),
            str(route.get("selector", "")),
            int(route.get("retries", 0)),
            bool(route.get("cache_hit", False)),
            timings,
            query_chars,
        )
        try:
            self.telemetry.record(record)
        except WaypostError as exc:  # telemetry never fails a query
            logger.warning("route telemetry failed: %s", exc)


def override(pipeline: Pipeline, passages: Any, rerank: str | None) -> Pipeline:
    """``pipeline`` with the caller's passages policy and reranker, when given."""
    if passages is None and rerank is None:
        return pipeline
    if pipeline.strategy == FUSE:
        return Pipeline(FUSE, fuse=tuple(override(p, passages, rerank) for p in pipeline.fuse))
    from waypost.route.execute import passage_fields

    fields = pipeline.passages if passages is None else tuple(sorted(passage_fields(passages).items()))
    return Pipeline(pipeline.strategy, pipeline.params, fields, rerank or pipeline.rerank)


def route_dict(
    collection: str,
    choice: Choice,
    candidates: Sequence[Pipeline],
    stage: Stage,
    attempts: Sequence[Attempt],
    reused_first_stage: bool,
) -> dict[str, Any]:
    """What ``--explain`` prints and telemetry records about one routed query."""
    return {
        "collection": collection,
        "pipeline": choice.pipeline.to_dict(),
        "pipeline_json": choice.pipeline.to_json(),
        "label": choice.pipeline.label,
        "confidence": round(choice.confidence, 4),
        "reasoning": choice.reasoning,
        "selector": choice.selector,
        "ranking": [[p.label, round(s, 4)] for p, s in choice.ranking[:5]],
        "candidates": [p.label for p in candidates],
        "reused_first_stage": reused_first_stage,
        "timings_ms": stage.to_dict(),
        "retries": len(attempts),
        "attempts": [
            {"action": a.action, "reason": a.reason, "quality": round(a.quality, 4), "kept": a.kept, "ms": a.ms}
            for a in attempts
        ],
    }


def make_selector(config: RouterConfig, engine: Engine, collection: Collection) -> PipelineSelector:
    """The selector ``config.selector`` names; learned falls back to heuristic when no profile loads, the
    LLM selector to learned then heuristic."""
    heuristic = HeuristicSelector()
    if config.selector == "heuristic":
        return heuristic
    if config.selector == "round-robin":
        from waypost.route.selectors.round_robin import RoundRobinSelector

        return RoundRobinSelector()
    if config.selector == "embedding":
        from waypost.route.selectors.embedding import EmbeddingSelector, load_exemplars

        exemplars = load_exemplars(config.exemplars)
        return EmbeddingSelector(collection.embedder, exemplars)
    learned: PipelineSelector | None = None
    profile = load_profile(config.profile)
    if profile is not None:
        from waypost.route.selectors.learned import LearnedSelector

        learned = LearnedSelector(profile)
    elif config.selector == "learned":
        logger.info("no router profile loaded: the heuristic selector routes")
    if config.selector == "learned":
        return learned or heuristic
    llm = engine.llm()
    chain = [s for s in (learned, heuristic) if s is not None]
    if llm is None:
        logger.info("the LLM selector needs an LLM: routing with %s", chain[0].name)
        return chain[0]
    from waypost.route.selectors.llm import LLMSelector

    return LLMSelector(llm, chain)
