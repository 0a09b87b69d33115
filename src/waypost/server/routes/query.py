"""Retrieval: one pipeline (or ``auto``), several side by side, the strategies' parameter schemas, feedback."""

from __future__ import annotations

import dataclasses
import json
import time
import typing
from typing import Any

from fastapi import APIRouter, HTTPException

from waypost.aio import AsyncCollection
from waypost.errors import WaypostError
from waypost.filters.model import Filter, parse_filter_json
from waypost.post.passages import PassageConfig, PassagePolicy
from waypost.retrieval.registry import STRATEGIES
from waypost.server.auto import AUTO_REFUSES, is_auto, search_auto
from waypost.server.deps import Reader, TenantEngine, Writer, open_collection
from waypost.server.models import (
    CompareIn,
    CompareOut,
    CompareRun,
    ErrorOut,
    FeedbackIn,
    FeedbackOut,
    ParamOut,
    PassagesIn,
    RetrieveIn,
    RetrieveOut,
    StrategyList,
    StrategyOut,
)
from waypost.server.views import hits_out, retrieve_out
from waypost.types import RetrievalResult

router = APIRouter(prefix="/v1", tags=["retrieval"], responses={401: {"model": ErrorOut}, 404: {"model": ErrorOut}})


def passage_config(passages: PassagesIn | None) -> PassageConfig | None:
    return None if passages is None else PassageConfig(policy=PassagePolicy(passages.policy), tokens=passages.tokens)


def filter_of(raw: dict[str, Any] | None) -> Filter | None:
    """The request's filter, within the limits a filter's JSON text has everywhere (``parse_filter_json``)."""
    return None if raw is None else parse_filter_json(json.dumps(raw, ensure_ascii=False, separators=(",", ":")))


def check_rerank(spec: str | None) -> None:
    """A client names a rerank profile or ``llm``, never a path on the server (a profile file or a model folder)."""
    if spec is None:
        return
    name = spec.strip()
    if "/" in name or "\\" in name or name.lower().endswith(".json") or name.startswith(("cross-encoder", "~")):
        raise HTTPException(
            400, "rerank takes a profile name (default, precision, balanced, recall or a trained profile) or "
            "llm[:pointwise|listwise]; paths on the server are not accepted",
        )  # fmt: skip


async def run_retrieve(
    coll: AsyncCollection,
    query: str,
    strategy: str,
    k: int,
    filters: dict[str, Any] | None,
    params: dict[str, Any] | None,
    passages: PassagesIn | None,
    rerank: str | None,
) -> tuple[RetrievalResult, float]:
    check_rerank(rerank)
    t0 = time.perf_counter()
    result = await coll.retrieve(query, strategy, k, filter_of(filters), params, passage_config(passages), rerank)
    return result, (time.perf_counter() - t0) * 1000


@router.post("/retrieve", response_model=RetrieveOut, responses={400: {"model": ErrorOut}})
async def retrieve(body: RetrieveIn, _: Reader, engine: TenantEngine) -> RetrieveOut:
    """Search one collection with a strategy, or ``auto`` (the router picks the pipeline and says why);
    collection ``auto`` lets waypost choose the collection(s) too (``collection_choice`` says which and why)."""
    if is_auto(body.collection):
        return await retrieve_auto(body, engine)
    coll = await open_collection(engine, body.collection)
    result, ms = await run_retrieve(
        coll, body.query, body.strategy, body.k, body.filters, body.params, body.passages, body.rerank
    )
    return retrieve_out(result, [coll.name], ms, explain=body.explain)


async def retrieve_auto(body: RetrieveIn, engine: TenantEngine) -> RetrieveOut:
    """Collection ``auto``: stage 1 chooses, several chosen collections are fused (``Engine.search``)."""
    if body.params or body.passages is not None or body.rerank is not None:
        raise HTTPException(400, AUTO_REFUSES + "; name a collection to use them")
    t0 = time.perf_counter()
    result, choice, answered = await search_auto(engine, body.query, body.strategy, body.k, filter_of(body.filters))
    return retrieve_out(result, answered, (time.perf_counter() - t0) * 1000, choice, body.explain)


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


@router.post("/compare", response_model=CompareOut, responses={400: {"model": ErrorOut}})
async def compare(body: CompareIn, _: Reader, engine: TenantEngine) -> CompareOut:
    """Two or three pipelines on one query: their hits, latency and how much their documents overlap."""
    coll = await open_collection(engine, body.collection)
    runs: list[CompareRun] = []
    documents: list[set[str]] = []
    for pipeline in body.pipelines:
        result, ms = await run_retrieve(
            coll, body.query, pipeline.strategy, body.k, None, pipeline.params, pipeline.passages, pipeline.rerank
        )
        runs.append(CompareRun(pipeline=pipeline, hits=hits_out(result.hits), latency_ms=round(ms, 3),
                               route=result.explanation.route))  # fmt: skip
        documents.append(set(result.document_ids()))
    overlap = [[round(jaccard(a, b), 4) for b in documents] for a in documents]
    shared = sorted(set.intersection(*documents)) if documents else []
    return CompareOut(runs=runs, overlap=overlap, shared_documents=shared)


def _params(params_type: type[Any]) -> list[ParamOut]:
    hints = typing.get_type_hints(params_type)
    out = []
    for f in dataclasses.fields(params_type):
        kind = hints[f.name]
        args = [a for a in typing.get_args(kind) if a is not type(None)]
        base = args[0] if args else kind
        default = f.default if f.default is not dataclasses.MISSING else None
        out.append(ParamOut(name=f.name, type=getattr(base, "__name__", str(base)), default=default))
    return out


@router.get("/strategies", response_model=StrategyList)
async def strategies(_: Reader) -> StrategyList:
    """Every strategy with its cost class, what it needs, and its parameters (to build forms from)."""
    auto = StrategyOut(name="auto", cost=1.0, needs_tree=False, needs_graph=False, needs_llm=False, params=[])
    listed = [
        StrategyOut(
            name=name,
            cost=spec.cost,
            needs_tree=spec.needs_tree,
            needs_graph=spec.needs_graph,
            needs_llm=spec.needs_llm,
            params=_params(spec.params),
        )
        for name, spec in STRATEGIES.items()
    ]
    return StrategyList(strategies=[auto, *listed])


@router.post("/feedback", status_code=201, response_model=FeedbackOut, responses={400: {"model": ErrorOut}})
async def feedback(body: FeedbackIn, _: Writer, engine: TenantEngine) -> FeedbackOut:
    """Record that a hit was used, rejected or rated for a query (``waypost rerank train --feedback``)."""
    coll = await open_collection(engine, body.collection)
    if body.kind == "rating" and body.rating is None:
        raise HTTPException(400, "a rating needs a value from 0 to 5")
    try:
        entry = await engine.run(lambda: coll.sync.feedback(body.query, body.chunk_id, body.kind, body.rating))
    except WaypostError as exc:
        if "no chunk" in str(exc):
            raise HTTPException(404, str(exc)) from None
        raise
    return FeedbackOut(recorded=True, document_id=entry.document_id, span=[entry.start, entry.end])


@router.get("/stats/routes")
async def stats_routes(_: Reader, engine: TenantEngine, collection: str | None = None) -> dict[str, Any]:
    """This tenant's routed queries: the distribution of pipelines, confidence, retries and latency
    (``waypost stats --routes``); never another tenant's."""
    from waypost.route.telemetry import route_stats

    if collection is not None:
        await open_collection(engine, collection)
    return await engine.run(lambda: route_stats(engine.sync, collection))
