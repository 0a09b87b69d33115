"""Searching and answering: query, ask, demo, strategies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from waypost.cli.app import app, console
from waypost.cli.common import (
    DEFAULT_STORE,
    AlphaOpt,
    CollectionsProfileOpt,
    CollOpt,
    FusionOpt,
    JsonOpt,
    LlmFiltersOpt,
    LlmOpt,
    ModelOpt,
    ParamOpt,
    PassageKeepOpt,
    PassagesOpt,
    PassageTokensOpt,
    PassageWindowOpt,
    ReferencesOpt,
    RerankOpt,
    StoreOpt,
    StrategyOpt,
    _engine,
    _existing,
    _fail,
    _filters,
    _open_engine,
    _passages,
    collection_selector,
)
from waypost.engine import DEFAULT_COLLECTION, EngineConfig
from waypost.post.passages import PassageConfig
from waypost.retrieval.fusion import FusionConfig, FusionMethod
from waypost.retrieval.params import describe, split_assignments
from waypost.retrieval.registry import STRATEGIES
from waypost.route.base import AUTO, CollectionChoice, Pipeline
from waypost.route.config import RouterConfig
from waypost.route.execute import run_pipeline
from waypost.types import RetrievalResult
from waypost.validation import query_text


def _print_result(result: RetrievalResult, explain: bool) -> None:
    table = Table(show_lines=True, expand=True)
    table.add_column("#", justify="right", width=3)
    table.add_column("score", justify="right", width=7)
    table.add_column("where", ratio=1)
    table.add_column("text", ratio=3)
    several_collections = len({hit.provenance.collection for hit in result.hits}) > 1
    for i, hit in enumerate(result.hits, start=1):
        text = " ".join(hit.chunk.text.split())
        section = escape(" > ".join(hit.chunk.section))
        where = f"[bold]{escape(hit.document_id)}[/]\n{section}\n[dim]chars {hit.chunk.start}-{hit.chunk.end}[/]"
        if several_collections:
            where += f"\n[dim]in {escape(hit.provenance.collection)}[/]"
        if hit.node is not None:
            where += (
                f"\n[dim]via {hit.node.kind} node {escape(str(hit.node.id))} (layer {hit.node.layer}, "
                f"{hit.node.leaves} chunks)[/]"
            )
        table.add_row(str(i), f"{hit.score:.3f}", where, Text(text[:400] + ("…" if len(text) > 400 else "")))
    console.print(table)
    if explain:
        ex = result.explanation
        if ex.route:
            _print_route(ex.route)
        console.print(f"[bold]strategy[/] {ex.strategy}   [bold]semantic query[/] {escape(repr(ex.semantic_query))}")
        console.print(f"[bold]filters[/] {escape(str(ex.filters or 'none'))}   [bold]candidates[/] {ex.candidates}")
        console.print(
            "[bold]timings[/] "
            + ", ".join(f"{k} {v:.1f} ms" for k, v in ex.timings_ms.items())
            + f"   total {ex.total_ms:.1f} ms"
        )
        for note in ex.notes:
            console.print(f"  [dim]{escape(note)}[/]")
        for i, hit in enumerate(result.hits, start=1):
            if hit.features:
                values = " ".join(f"{name}={value:.2f}" for name, value in hit.features.items())
                console.print(f"  [dim]#{i} features: {values}[/]")


def _print_route(route: dict[str, Any]) -> None:
    """What the router chose and why (``--explain`` under ``--strategy auto``)."""
    chosen = route.get("collections")
    if route.get("label") is not None:
        console.print(
            f"[bold]route[/] {escape(str(route.get('label')))}   [bold]confidence[/] "
            f"{route.get('confidence', 0.0):.2f}   [bold]selector[/] {escape(str(route.get('selector')))}   "
            f"[bold]collection[/] {escape(str(route.get('collection')))}"
        )
        console.print(f"[bold]pipeline[/] {escape(str(route.get('pipeline_json')))}", highlight=False)
        console.print(f"[bold]reasoning[/] {escape(str(route.get('reasoning')))}")
    if chosen:
        console.print(
            f"[bold]collections[/] {escape(', '.join(chosen.get('collections', [])))}   [bold]confidence[/] "
            f"{chosen.get('confidence', 0.0):.2f}   [bold]by[/] {escape(str(chosen.get('selector')))}: "
            f"{escape(str(chosen.get('reasoning')))}"
        )
    for name, label in (route.get("per_collection") or {}).items():  # fused collections: each one's own route
        console.print(f"  [dim]{escape(str(name))}: {escape(str(label))}[/]")
    plan = route.get("plan")
    if plan and (plan.get("sub_queries") or plan.get("must_include") or plan.get("must_exclude")):
        console.print("[bold]plan[/] ", end="")
        console.print(json.dumps(plan, ensure_ascii=False), markup=False, highlight=False)  # query text is not markup
    stages = route.get("timings_ms") or {}
    if stages:
        console.print("[bold]routing[/] " + ", ".join(f"{escape(name)} {ms:.1f} ms" for name, ms in stages.items()))
    if route.get("ranking"):
        ranking = ", ".join(f"{label} {score:.3f}" for label, score in route["ranking"])
        console.print("[bold]ranking[/] " + escape(ranking))
    for attempt in route.get("attempts") or []:
        kept = "kept" if attempt.get("kept") else "not kept"
        console.print(
            f"  [dim]retry: {escape(str(attempt.get('action')))} ({kept}): {escape(str(attempt.get('reason')))}[/]"
        )


@app.command()
def query(
    text: Annotated[str, typer.Argument(help="The question or search terms.")],
    store: StoreOpt = DEFAULT_STORE,
    collection: CollOpt = DEFAULT_COLLECTION,
    strategy: StrategyOpt = AUTO,
    pipeline: Annotated[
        str | None,
        typer.Option("--pipeline", help='Replay a pipeline exactly, as --explain prints it: {"strategy": "hybrid"}.'),
    ] = None,
    k: Annotated[int, typer.Option("--k", "-k", min=1, help="Number of hits.")] = 5,
    where: Annotated[
        list[str], typer.Option("--where", "-w", help="Filter such as year>=2015 or 'country in India,Spain'.")
    ] = [],  # noqa: B006
    where_json: Annotated[
        str | None, typer.Option("--where-json", help='JSON filter: {"or": [{"type": "Movie"}, ...]}')
    ] = None,
    fusion: FusionOpt = FusionMethod.WEIGHTED,
    alpha: AlphaOpt = FusionConfig.alpha,
    references: ReferencesOpt = FusionConfig.reference_weight,
    explain: Annotated[
        bool, typer.Option("--explain", help="Show the route (pipeline, confidence, reasoning), filters and timings.")
    ] = False,
    model: ModelOpt = None,
    llm: LlmOpt = "none",
    llm_filters: LlmFiltersOpt = False,
    param: ParamOpt = [],  # noqa: B006
    passages: PassagesOpt = None,
    passage_tokens: PassageTokensOpt = PassageConfig.tokens,
    passage_keep: PassageKeepOpt = PassageConfig.keep,
    passage_window: PassageWindowOpt = PassageConfig.window,
    rerank: RerankOpt = None,
    router_profile: Annotated[
        Path | None,
        typer.Option("--router-profile", help="A router profile from `waypost router train` (default: shipped)."),
    ] = None,
    router_selector: Annotated[
        str,
        typer.Option(
            "--router-selector", help="How auto chooses: learned (default), heuristic, embedding, llm, round-robin."
        ),
    ] = "learned",
    collections_profile: CollectionsProfileOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Retrieve the best chunks for a query (`--collection auto`: the engine chooses the collections)."""
    if collections_profile is not None and collection != AUTO:
        _fail("--collections-profile chooses collections: it needs --collection auto")
    config = EngineConfig(
        embed_model=model,
        fusion=FusionConfig(method=fusion, alpha=alpha, reference_weight=references),
        llm=llm,
        llm_filters=llm_filters,
        collection_selector=collection_selector(collections_profile),
    )
    config.router = RouterConfig(selector=router_selector, profile=router_profile)
    config.router.check()
    replay = _replayed(pipeline, strategy, param, passages, rerank)
    if collection == AUTO and replay is not None:
        _fail("--pipeline replays one collection's pipeline: name the collection (-c NAME), not auto")
    with _open_engine(_existing(store), config) as engine:
        if collection == AUTO:  # stage 1: the engine chooses the collections
            if param or passages is not None or rerank is not None:
                _fail("--collection auto takes no --param, --passages or --rerank")
            result = engine.search(text, k, strategy=strategy, filters=_filters(where, where_json))
        elif replay is not None:
            coll = engine.collection(collection)
            result = run_pipeline(coll, replay, query_text(text), k, _filters(where, where_json))
        else:
            coll = engine.collection(collection)
            result = coll.retrieve(
                text,
                strategy,
                k=k,
                filters=_filters(where, where_json),
                params=split_assignments(param),
                passages=_passages(passages, passage_tokens, passage_keep, passage_window),
                rerank=rerank,
            )
    if as_json:
        payload = {
            "hits": [h.to_dict() for h in result.hits],
            "explain": result.explanation.to_dict(),
            "metadata": result.metadata.to_dict(),
        }
        print(json.dumps(payload))
    else:
        _print_result(result, explain)


def _replayed(
    pipeline: str | None, strategy: str, param: list[str], passages: object, rerank: str | None
) -> Pipeline | None:
    """The ``--pipeline`` to replay, or None; it carries its own strategy, parameters, passages and reranker."""
    if pipeline is None:
        return None
    if strategy != AUTO or param or passages is not None or rerank is not None:
        _fail("--pipeline replays a whole pipeline: leave out --strategy, --param, --passages and --rerank")
    return Pipeline.from_json(pipeline)  # bad JSON: an InvalidInputError the app prints


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question.")],
    store: StoreOpt = DEFAULT_STORE,
    collection: CollOpt = DEFAULT_COLLECTION,
    llm: LlmOpt = "none",
    strategy: StrategyOpt = AUTO,
    k: Annotated[int, typer.Option("--k", "-k", min=1, help="Passages given to the answerer.")] = 5,
    stream: Annotated[bool, typer.Option("--stream/--no-stream", help="Print tokens as they arrive.")] = True,
    timeout: Annotated[float, typer.Option(help="LLM request timeout in seconds.")] = 60.0,
    explain: Annotated[bool, typer.Option("--explain", help="Show timings, LLM calls, tokens and cost.")] = False,
    model: ModelOpt = None,
    param: ParamOpt = [],  # noqa: B006
    passages: PassagesOpt = None,
    passage_tokens: PassageTokensOpt = PassageConfig.tokens,
    rerank: RerankOpt = None,
    collections_profile: CollectionsProfileOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Answer a question from the documents, with numbered citations to exact spans."""
    if collections_profile is not None and collection != AUTO:
        _fail("--collections-profile chooses collections: it needs --collection auto")
    if collection == AUTO and (param or passages is not None or rerank is not None):
        _fail("--collection auto takes no --param, --passages or --rerank")
    params = split_assignments(param)
    choice: CollectionChoice | None = None
    config = EngineConfig(
        embed_model=model, llm=llm, llm_timeout=timeout, collection_selector=collection_selector(collections_profile)
    )
    passage_config = _passages(passages, passage_tokens, PassageConfig.keep, PassageConfig.window)
    with _open_engine(_existing(store), config) as engine:
        if collection == AUTO:  # stage 1: the answer comes from the collection the engine chooses
            from waypost.route.search import choice_note, choose_collections

            choice = choose_collections(engine, query_text(question))
            collection = choice.collections[0]
            if not as_json:
                unused = f" (not {', '.join(choice.collections[1:])})" if len(choice.collections) > 1 else ""
                console.print(
                    f"[dim]{escape(choice_note(choice))}; answering from {escape(collection)} alone{escape(unused)}[/]"
                )
        coll = engine.collection(collection)
        streamed = ""
        if stream and not as_json:
            live = coll.stream_answer(question, strategy, k, params, passage_config, rerank)
            for token in live.tokens:
                streamed += token
                console.print(token, end="", markup=False, highlight=False, soft_wrap=True)
            console.print()
            answer = live.answer
        else:
            answer = coll.answer(question, strategy, k, params, passage_config, rerank)
    assert answer is not None
    if as_json:
        payload = answer.to_dict()
        if choice is not None:  # stage 1 chose: say which collection answered and why
            payload = {"collection": collection, "collection_choice": choice.to_dict(), **payload}
        print(json.dumps(payload))
        return
    if not stream:
        console.print(answer.text, markup=False, highlight=False)
    elif answer.text.strip() != streamed.strip():
        # Citations were renumbered (or the reply was a refusal): show the final text they refer to.
        console.print("[bold]answer with its final citation numbers:[/]")
        console.print(answer.text, markup=False, highlight=False)
    for c in answer.citations:
        console.print(
            f"  [bold]\\[{c.number}][/] {escape(c.title or c.document_id)} "
            f"[dim]({escape(c.document_id)}, chars {c.start}-{c.end})[/]"
        )
    if explain:
        meta = answer.metadata.to_dict()
        console.print(
            f"[bold]mode[/] {answer.mode}   [bold]strategy[/] {meta['strategy']}   "
            f"[bold]total[/] {meta['total_ms']:.1f} ms"
        )
        console.print("[bold]timings[/] " + ", ".join(f"{k} {v:.1f} ms" for k, v in meta["timings_ms"].items()))
        console.print(
            f"[bold]llm[/] calls {meta['llm_calls']} (cached {meta['llm_cache_hits']}), tokens "
            f"{meta['prompt_tokens']} in / {meta['completion_tokens']} out, cost ${meta['cost_usd']:.6f}"
        )
        for fb in meta["fallbacks"]:
            console.print(f"[yellow]fallback[/] {escape(str(fb))}")


@app.command()
def demo(
    store: StoreOpt = Path(".waypost-demo"),
    query_text: Annotated[str, typer.Argument()] = "How does waypost keep the store consistent if ingest is killed?",
) -> None:
    """Ingest the bundled sample corpus, then answer a query with --explain."""
    samples = Path(__file__).parent.parent / "samples"
    with _engine(store) as engine:
        report = engine.collection(DEFAULT_COLLECTION, create=True).add_paths([samples], show_progress=True)
        console.print(f"sample corpus: added {report.added}, unchanged {report.unchanged}, {report.chunks} new chunks")
        coll = engine.collection(DEFAULT_COLLECTION)
        result = coll.retrieve(query_text, "hybrid", k=3)
        answer = coll.answer(query_text, "hybrid", k=3)
    console.print(f"[bold]query[/] {escape(query_text)}")
    _print_result(result, explain=True)
    console.print(f"\n[bold]answer[/] ({answer.mode}, no LLM configured)")
    console.print(answer.text, markup=False, highlight=False)
    for c in answer.citations:
        console.print(f"  [bold][{c.number}][/] {c.document_id}, chars {c.start}-{c.end}")


@app.command()
def strategies() -> None:
    """The retrieval strategies and the parameters each takes (set them with --param name=value)."""
    console.print(f"[bold]{AUTO}[/]  the router picks a pipeline per query (the default; see query --explain)")
    for name, spec in STRATEGIES.items():
        console.print(f"[bold]{name}[/]  {describe(spec.params) or '(no parameters)'}")
