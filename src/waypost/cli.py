"""The ``waypost`` command line: add, query, rm, ls, stats, eval, demo."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

# One BLAS thread: on few cores it otherwise fights torch's threads (set before numpy loads).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import typer
from rich.console import Console
from rich.table import Table

from waypost.engine import DEFAULT_COLLECTION, Engine, EngineConfig
from waypost.errors import WaypostError
from waypost.filters.model import Filter, parse_filter, parse_filter_json
from waypost.hierarchy.tree import TreeConfig
from waypost.post.passages import PassageConfig, PassagePolicy
from waypost.retrieval.fusion import FusionConfig, FusionMethod
from waypost.retrieval.params import describe, split_assignments
from waypost.retrieval.registry import STRATEGIES
from waypost.types import RetrievalResult

app = typer.Typer(add_completion=False, no_args_is_help=True, help="waypost: local-first adaptive retrieval.")
console = Console()
err = Console(stderr=True)

StoreOpt = Annotated[Path, typer.Option("--store", "-s", envvar="WAYPOST_STORE", help="Store directory.")]
CollOpt = Annotated[str, typer.Option("--collection", "-c", help="Collection name.")]
ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        help="Embedding model: a sentence-transformers name or "
        "path, or openai:MODEL@URL. Default: the collection's own.",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
LlmOpt = Annotated[str, typer.Option("--llm", help="none (extractive), smollm2, gguf:PATH or openai:MODEL@URL.")]
DEFAULT_STORE = Path(".waypost")
StrategyOpt = Annotated[str, typer.Option(help=f"One of: {', '.join(STRATEGIES)}.")]
FusionOpt = Annotated[FusionMethod, typer.Option(help="Hybrid fusion method.")]
AlphaOpt = Annotated[float, typer.Option(min=0.0, max=1.0, help="Dense weight for weighted fusion.")]
ReferencesOpt = Annotated[float, typer.Option(min=0.0, help="Boost for documents the top hits name by title (0: off).")]
LlmFiltersOpt = Annotated[bool, typer.Option("--llm-filters", help="Let the --llm extract filters.")]
ParamOpt = Annotated[
    list[str],
    typer.Option(
        "--param", "-p", help="A strategy parameter as name=value, e.g. budget=1000 (see: waypost strategies)."
    ),
]
PassagesOpt = Annotated[
    str | None,
    typer.Option(help="Return passages: grow (follow relevance), auto-merge (parent sections) or small-to-big."),
]
RerankOpt = Annotated[
    str | None,
    typer.Option(
        help="Rerank the best hits: default (hand-set), precision, balanced, recall, a trained profile's name "
        "or .json path (waypost rerank train), cross-encoder:PATH, or llm[:pointwise|:listwise]."
    ),
]
PassageTokensOpt = Annotated[int, typer.Option(min=1, help="Longest passage, in tokens (with --passages).")]
PassageKeepOpt = Annotated[
    float, typer.Option(min=0.0, max=1.0, help="grow: a neighbour joins while this relevant relative to the anchor.")
]
PassageWindowOpt = Annotated[int, typer.Option(min=0, help="small-to-big: neighbours taken on each side.")]


def _passages(policy: str | None, tokens: int, keep: float, window: int) -> PassageConfig | None:
    if policy is None:
        return None
    try:
        return PassageConfig(PassagePolicy(policy), tokens, keep, window)
    except ValueError:
        _fail(f"--passages must be one of {', '.join(p.value for p in PassagePolicy)}, not {policy!r}")
        raise


def _existing(store: Path) -> Path:
    """Commands that read never create a store: a mistyped --store is an error, not an empty store."""
    if not (store / "store.sqlite").exists():
        raise WaypostError(f"no waypost store at {store} (create one with: waypost add PATH --store {store})")
    return store


def _engine(
    store: Path, model: str | None = None, chunk_tokens: int = 200, fusion: FusionConfig | None = None
) -> Engine:
    return Engine(store, EngineConfig(embed_model=model, chunk_tokens=chunk_tokens, fusion=fusion or FusionConfig()))


def _fail(message: str) -> None:
    err.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(2)


@app.command()
def add(
    paths: Annotated[list[Path], typer.Argument(help="Files or folders (.txt .md .html .pdf .jsonl .csv).")],
    store: StoreOpt = DEFAULT_STORE,
    collection: CollOpt = DEFAULT_COLLECTION,
    model: ModelOpt = None,
    chunk_tokens: Annotated[int, typer.Option(help="Token budget per chunk.")] = 200,
    language: Annotated[
        str | None,
        typer.Option(help="The collection's language (ISO 639-1, e.g. th); '' detects per document (default)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Ingest documents. Unchanged documents are skipped; changed ones are replaced atomically."""
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise WaypostError(f"no such file or folder: {', '.join(missing)}")
    with _engine(store, model, chunk_tokens) as engine:
        coll = engine.collection(collection, create=True, language=language)
        report = coll.add_paths(paths, show_progress=not as_json)
    if as_json:
        print(json.dumps(report.to_dict()))
    else:
        console.print(
            f"added {report.added}, updated {report.updated}, unchanged {report.unchanged}, "
            f"{report.chunks} chunks in {report.seconds:.1f}s"
        )
        for f in report.failures:
            err.print(f"[yellow]skipped[/] {f.source}: {f.error}")
    if report.failures and not (report.added or report.updated or report.unchanged):
        raise typer.Exit(1)


def _filters(where: list[str], where_json: str | None) -> Filter | None:
    parsed = parse_filter(where)
    if where_json:
        extra = parse_filter_json(where_json)
        from waypost.filters.extract import combine

        return combine(parsed, extra)
    return parsed


def _print_result(result: RetrievalResult, explain: bool) -> None:
    table = Table(show_lines=True, expand=True)
    table.add_column("#", justify="right", width=3)
    table.add_column("score", justify="right", width=7)
    table.add_column("where", ratio=1)
    table.add_column("text", ratio=3)
    for i, hit in enumerate(result.hits, start=1):
        text = " ".join(hit.chunk.text.split())
        section = " > ".join(hit.chunk.section)
        where = f"[bold]{hit.document_id}[/]\n{section}\n[dim]chars {hit.chunk.start}-{hit.chunk.end}[/]"
        if hit.node is not None:
            where += (
                f"\n[dim]via {hit.node.kind} node {hit.node.id} (layer {hit.node.layer}, {hit.node.leaves} chunks)[/]"
            )
        table.add_row(str(i), f"{hit.score:.3f}", where, text[:400] + ("…" if len(text) > 400 else ""))
    console.print(table)
    if explain:
        ex = result.explanation
        console.print(f"[bold]strategy[/] {ex.strategy}   [bold]semantic query[/] {ex.semantic_query!r}")
        console.print(f"[bold]filters[/] {ex.filters or 'none'}   [bold]candidates[/] {ex.candidates}")
        console.print(
            "[bold]timings[/] "
            + ", ".join(f"{k} {v:.1f} ms" for k, v in ex.timings_ms.items())
            + f"   total {ex.total_ms:.1f} ms"
        )
        for note in ex.notes:
            console.print(f"  [dim]{note}[/]")
        for i, hit in enumerate(result.hits, start=1):
            if hit.features:
                values = " ".join(f"{name}={value:.2f}" for name, value in hit.features.items())
                console.print(f"  [dim]#{i} features: {values}[/]")


@app.command()
def query(
    text: Annotated[str, typer.Argument(help="The question or search terms.")],
    store: StoreOpt = DEFAULT_STORE,
    collection: CollOpt = DEFAULT_COLLECTION,
    strategy: StrategyOpt = "hybrid",
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
    explain: Annotated[bool, typer.Option("--explain", help="Show strategy, filters and timings.")] = False,
    model: ModelOpt = None,
    llm: LlmOpt = "none",
    llm_filters: LlmFiltersOpt = False,
    param: ParamOpt = [],  # noqa: B006
    passages: PassagesOpt = None,
    passage_tokens: PassageTokensOpt = PassageConfig.tokens,
    passage_keep: PassageKeepOpt = PassageConfig.keep,
    passage_window: PassageWindowOpt = PassageConfig.window,
    rerank: RerankOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Retrieve the best chunks for a query."""
    config = EngineConfig(
        embed_model=model,
        fusion=FusionConfig(method=fusion, alpha=alpha, reference_weight=references),
        llm=llm,
        llm_filters=llm_filters,
    )
    with Engine(_existing(store), config) as engine:
        result = engine.collection(collection).retrieve(
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


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question.")],
    store: StoreOpt = DEFAULT_STORE,
    collection: CollOpt = DEFAULT_COLLECTION,
    llm: LlmOpt = "none",
    strategy: StrategyOpt = "hybrid",
    k: Annotated[int, typer.Option("--k", "-k", min=1, help="Passages given to the answerer.")] = 5,
    stream: Annotated[bool, typer.Option("--stream/--no-stream", help="Print tokens as they arrive.")] = True,
    timeout: Annotated[float, typer.Option(help="LLM request timeout in seconds.")] = 60.0,
    explain: Annotated[bool, typer.Option("--explain", help="Show timings, LLM calls, tokens and cost.")] = False,
    model: ModelOpt = None,
    param: ParamOpt = [],  # noqa: B006
    passages: PassagesOpt = None,
    passage_tokens: PassageTokensOpt = PassageConfig.tokens,
    rerank: RerankOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Answer a question from the documents, with numbered citations to exact spans."""
    params = split_assignments(param)
    config = EngineConfig(embed_model=model, llm=llm, llm_timeout=timeout)
    passage_config = _passages(passages, passage_tokens, PassageConfig.keep, PassageConfig.window)
    with Engine(_existing(store), config) as engine:
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
        print(json.dumps(answer.to_dict()))
        return
    if not stream:
        console.print(answer.text, markup=False, highlight=False)
    elif answer.text.strip() != streamed.strip():
        # Citations were renumbered (or the reply was a refusal): show the final text they refer to.
        console.print("[bold]answer with its final citation numbers:[/]")
        console.print(answer.text, markup=False, highlight=False)
    for c in answer.citations:
        console.print(
            f"  [bold][{c.number}][/] {c.title or c.document_id} [dim]({c.document_id}, chars {c.start}-{c.end})[/]"
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
            console.print(f"[yellow]fallback[/] {fb}")


@app.command()
def rm(
    ids: Annotated[list[str], typer.Argument(help="Document ids to delete.")],
    store: StoreOpt = DEFAULT_STORE,
    collection: CollOpt = DEFAULT_COLLECTION,
    as_json: JsonOpt = False,
) -> None:
    """Delete documents (and their chunks and vectors) by id."""
    with _engine(_existing(store)) as engine:
        removed = engine.collection(collection).delete(ids)
    print(json.dumps({"removed": removed})) if as_json else console.print(f"removed {removed} of {len(ids)}")
    if removed < len(ids) and not as_json:
        err.print("[yellow]some ids were not found[/]")


@app.command("ls")
def ls_(
    store: StoreOpt = DEFAULT_STORE,
    collection: Annotated[
        str | None, typer.Option("--collection", "-c", help="List this collection's documents.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """List collections, or the documents of one collection."""
    with _engine(_existing(store)) as engine:
        if collection is None:
            infos = engine.collections()
            rows: list[dict[str, Any]] = [i.__dict__ for i in infos]
        else:
            rows = [
                {"id": d.id, "title": d.title, "source": d.source, "chars": len(d.text)}
                for d in engine.collection(collection).documents()
            ]
    if as_json:
        print(json.dumps(rows))
        return
    table = Table()
    for col in rows[0] if rows else ["(empty)"]:
        table.add_column(str(col))
    for row in rows:
        table.add_row(*[str(v) for v in row.values()])
    console.print(table)


@app.command()
def stats(store: StoreOpt = DEFAULT_STORE, collection: CollOpt = DEFAULT_COLLECTION, as_json: JsonOpt = False) -> None:
    """Counts, model, metadata fields and index state of a collection."""
    with _engine(_existing(store)) as engine:
        coll = engine.collection(collection)
        info = coll.info
        live = engine.indexes.live(collection)
        indexes = live.get()
        meta = indexes.metadata
        status = live.status()
        consumers = engine.store.consumers(collection)
        data: dict[str, Any] = {
            **info.__dict__,
            "index_generation": status.generation,
            "index_loaded_from": status.loaded_from,
            "last_index_update_ms": status.last_catch_up_ms,
            "segments": status.segments,
            "tombstones": status.tombstones,
            "saved_generation": status.persisted_generation,
            "last_merge": status.last_merge,
            "log_floor": engine.store.log_floor(collection),
            "log_consumers": consumers,
            "languages": indexes.languages,  # live chunks per language
            "collection_language": engine.store.collection_language(collection) or "detected per document",
            "index_errors": status.errors,  # failed background merges or saves, and ignored saved states
            "store_bytes": sum(p.stat().st_size for p in store.rglob("*") if p.is_file()),
            "fields": {
                f: {
                    "kind": meta.stats[f].kind,
                    "list": meta.stats[f].is_list,
                    "distinct": meta.distinct(f) or None,
                    "range": meta.date_span(f) if meta.stats[f].kind == "date" else meta.numeric_range(f),
                }
                for f in meta.fields
            },
        }
    if as_json:
        print(json.dumps(data))
        return
    for key, value in data.items():
        if key not in ("fields", "segments"):
            console.print(f"[bold]{key}[/] {value}")
    segments = Table(title="index segments (the first is the main one)")
    for col in ("segment", "rows", "documents", "tombstones", "saved"):
        segments.add_column(col)
    for seg in data["segments"]:
        segments.add_row(
            seg["name"], str(seg["rows"]), str(seg["documents"]), str(seg["tombstones"]), str(seg["saved"])
        )
    console.print(segments)
    if data["fields"]:
        table = Table(title="metadata fields")
        for col in ("field", "kind", "list", "distinct", "range"):
            table.add_column(col)
        for name, f in data["fields"].items():
            table.add_row(name, f["kind"], str(f["list"]), str(f["distinct"] or ""), str(f["range"] or ""))
        console.print(table)


def _tree_config(shape: str) -> TreeConfig:
    if shape not in ("full", "lite"):
        _fail(f"the tree shape must be full or lite, not {shape!r}")
    return TreeConfig(lite=shape == "lite")


@app.command("eval")
def eval_(
    dataset: Annotated[Path, typer.Argument(help="A BEIR-layout directory.")],
    strategy: StrategyOpt = "hybrid",
    k: Annotated[
        int, typer.Option("--k", "-k", min=1, help="Recall@k depth (Recall@2/5/10/100 are always reported).")
    ] = 100,
    fusion: FusionOpt = FusionMethod.WEIGHTED,
    alpha: AlphaOpt = FusionConfig.alpha,
    references: ReferencesOpt = FusionConfig.reference_weight,
    model: ModelOpt = None,
    chunk_tokens: Annotated[int, typer.Option(help="Token budget per chunk.")] = 200,
    split: Annotated[str, typer.Option(help="qrels split to evaluate.")] = "test",
    cache_dir: Annotated[
        Path | None, typer.Option(help="Where ingested eval corpora and embeddings are cached.")
    ] = None,
    limit: Annotated[int | None, typer.Option(help="Evaluate only the first N queries.")] = None,
    show_failures: Annotated[bool, typer.Option(help="List queries whose filters were extracted wrongly.")] = False,
    answer: Annotated[bool, typer.Option("--answer", help="Also answer every query; report answer_recall.")] = False,
    llm: LlmOpt = "none",
    llm_filters: LlmFiltersOpt = False,
    scope: Annotated[
        str | None,
        typer.Option(help="Restrict each query to documents whose metadata FIELD equals the query's (e.g. meeting)."),
    ] = None,
    by: Annotated[str | None, typer.Option(help="Also report metrics per value of this query metadata field.")] = None,
    param: ParamOpt = [],  # noqa: B006
    passages: PassagesOpt = None,
    passage_tokens: PassageTokensOpt = PassageConfig.tokens,
    passage_keep: PassageKeepOpt = PassageConfig.keep,
    passage_window: PassageWindowOpt = PassageConfig.window,
    rerank: RerankOpt = None,
    tree_shape: Annotated[
        str, typer.Option(help="Tree strategies: full (RAPTOR layers) or lite (one summary layer).")
    ] = "full",
    as_json: JsonOpt = False,
) -> None:
    """Evaluate a strategy on a BEIR dataset: nDCG@10, Recall@k, MRR, P@10, latency, filter accuracy, and
    evidence recall/precision at 500/1000/2000-token budgets where the set has span qrels."""
    from waypost.evaluation.runner import run_eval

    config = EngineConfig(
        embed_model=model,
        chunk_tokens=chunk_tokens,
        fusion=FusionConfig(method=fusion, alpha=alpha, reference_weight=references),
        llm=llm,
        llm_filters=llm_filters,
        tree=_tree_config(tree_shape),
    )
    report = run_eval(
        dataset,
        strategy,
        k,
        config,
        cache_dir,
        split,
        show_progress=not as_json,
        limit=limit,
        answer=answer,
        scope=scope,
        by=by,
        params=split_assignments(param),
        passages=_passages(passages, passage_tokens, passage_keep, passage_window),
        rerank=rerank,
    )
    if as_json:
        print(json.dumps(report.to_dict()))
        return
    table = Table(title=f"{report.dataset} · {strategy}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for name, value in report.metrics.items():
        table.add_row(name, f"{value:.4f}" if isinstance(value, float) else str(value))
    console.print(table)
    for group, values in report.by.items():
        sub = Table(title=f"{by} = {group}")
        sub.add_column("metric")
        sub.add_column("value", justify="right")
        for name, value in values.items():
            sub.add_row(name, f"{value:.4f}" if isinstance(value, float) else str(value))
        console.print(sub)
    if show_failures:
        for f in report.failures:
            console.print(f"[yellow]{f['query']}[/]\n  expected {f['expected']}\n  got      {f['predicted']}")


@app.command()
def demo(
    store: StoreOpt = Path(".waypost-demo"),
    query_text: Annotated[str, typer.Argument()] = "How does waypost keep the store consistent if ingest is killed?",
) -> None:
    """Ingest the bundled sample corpus, then answer a query with --explain."""
    samples = Path(__file__).parent / "samples"
    with _engine(store) as engine:
        report = engine.collection(DEFAULT_COLLECTION, create=True).add_paths([samples], show_progress=True)
        console.print(f"sample corpus: added {report.added}, unchanged {report.unchanged}, {report.chunks} new chunks")
        coll = engine.collection(DEFAULT_COLLECTION)
        result = coll.retrieve(query_text, "hybrid", k=3)
        answer = coll.answer(query_text, "hybrid", k=3)
    console.print(f"[bold]query[/] {query_text}")
    _print_result(result, explain=True)
    console.print(f"\n[bold]answer[/] ({answer.mode}, no LLM configured)")
    console.print(answer.text, markup=False, highlight=False)
    for c in answer.citations:
        console.print(f"  [bold][{c.number}][/] {c.document_id}, chars {c.start}-{c.end}")


@app.command()
def strategies() -> None:
    """The retrieval strategies and the parameters each takes (set them with --param name=value)."""
    for name, spec in STRATEGIES.items():
        console.print(f"[bold]{name}[/]  {describe(spec.params) or '(no parameters)'}")


@app.command()
def feedback(
    query_text: Annotated[str, typer.Argument(metavar="QUERY", help="The query the hit was returned for.")],
    chunk_id: Annotated[str, typer.Argument(help="The hit's chunk id, DOCUMENT#INDEX (shown by query --json).")],
    store: StoreOpt = DEFAULT_STORE,
    collection: CollOpt = DEFAULT_COLLECTION,
    rejected: Annotated[bool, typer.Option("--rejected", help="The hit was not useful.")] = False,
    rating: Annotated[float | None, typer.Option(min=0.0, max=5.0, help="A rating from 0 to 5.")] = None,
) -> None:
    """Record that a hit was used (the default), rejected, or rated; `waypost rerank train --feedback` learns
    from what is recorded."""
    if rejected and rating is not None:
        _fail("give --rejected or --rating, not both")
    kind = "rejected" if rejected else ("rating" if rating is not None else "used")
    with Engine(_existing(store)) as engine:
        entry = engine.collection(collection).feedback(query_text, chunk_id, kind, rating)
    console.print(
        f"recorded: {entry.kind} (label {entry.label:.2f}) for {entry.document_id} chars {entry.start}-{entry.end}"
    )


rerank_app = typer.Typer(no_args_is_help=True, help="Rerank profiles: learned weights for --rerank NAME.")
app.add_typer(rerank_app, name="rerank")


@rerank_app.command("train")
def rerank_train(
    dataset: Annotated[
        Path | None, typer.Argument(help="A BEIR-layout directory; its training split gives the queries.")
    ] = None,
    name: Annotated[str, typer.Option(help="The profile's name, for --rerank NAME.")] = "",
    split: Annotated[str, typer.Option(help="qrels split to learn from (never the one you report).")] = "train",
    scope: Annotated[str | None, typer.Option(help="As in eval: restrict each query to its FIELD's documents.")] = None,
    use_feedback: Annotated[
        bool, typer.Option("--feedback", help="Also learn from the feedback recorded in --store/--collection.")
    ] = False,
    store: StoreOpt = DEFAULT_STORE,
    collection: CollOpt = DEFAULT_COLLECTION,
    strategy: StrategyOpt = "hybrid",
    depth: Annotated[int, typer.Option(min=2, help="Candidates per query (as reranked at query time).")] = 30,
    chunk_tokens: Annotated[int, typer.Option(help="Token budget per chunk of the dataset's eval store.")] = 200,
    limit: Annotated[int | None, typer.Option(help="Use only the first N training queries.")] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Directory to save NAME.json in (default: the store's rerankers/ with --feedback alone, "
            "else ~/.local/share/waypost/rerankers)."
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Fit rerank weights to a dataset's training queries, to recorded feedback, or to both."""
    from waypost.evaluation.rerank_training import train_profile
    from waypost.post.rerank.profile import profile_directories, save_profile

    if not name:
        _fail("give the profile a --name")
    if dataset is None and not use_feedback:
        _fail("give a DATASET, --feedback, or both")
    profile = train_profile(
        name,
        dataset,
        split,
        EngineConfig(chunk_tokens=chunk_tokens),
        scope=scope,
        strategy=strategy,
        depth=depth,
        limit=limit,
        feedback_store=_existing(store) if use_feedback else None,
        feedback_collection=collection,
        show_progress=not as_json,
    )
    directory = out or (store / "rerankers" if dataset is None else profile_directories(None)[-1])
    path = save_profile(profile, directory)
    if as_json:
        print(json.dumps({"path": str(path), **profile.to_json()}))
        return
    console.print(f"saved [bold]{profile.name}[/] to {path}")
    console.print(f"trained on {profile.source}: {profile.trained}")
    console.print("weights (per standard deviation): " + " ".join(f"{k}={v:+.3f}" for k, v in profile.weights.items()))


tree_app = typer.Typer(no_args_is_help=True, help="The RAPTOR tree behind raptor-* and doc-summary strategies.")
app.add_typer(tree_app, name="tree")


def _tree_engine(store: Path, llm: str, summarizer: str, shape: str | None = None) -> Engine:
    tree = None if shape is None else _tree_config(shape)
    return Engine(_existing(store), EngineConfig(llm=llm, tree_summarizer=summarizer, tree=tree))


SummarizerOpt = Annotated[str, typer.Option(help="extractive (no LLM) or llm (needs --llm).")]
ShapeOpt = Annotated[
    str | None,
    typer.Option(help="full (RAPTOR layers) or lite (chunks under section or cluster summaries); "
                 "default: the stored tree's shape, else full."),
]  # fmt: skip


def _tree_build(store: Path, collection: str, summarizer: str, llm: str, shape: str | None, fresh: bool) -> None:
    with _tree_engine(store, llm, summarizer, shape) as engine:
        live = engine.collection(collection).tree()
        say = lambda m: err.print(f"[dim]{m}[/]")  # noqa: E731
        if fresh:
            live.rebuild(progress=say)
        else:
            live.get(build=True, progress=say)
        _print_tree_status(live.status().to_dict())


@tree_app.command("build")
def tree_build(
    store: StoreOpt = DEFAULT_STORE,
    collection: CollOpt = DEFAULT_COLLECTION,
    summarizer: SummarizerOpt = "extractive",
    llm: LlmOpt = "none",
    shape: ShapeOpt = None,
) -> None:
    """Build the tree if the collection has none, or none of the asked shape (else bring it up to date)."""
    _tree_build(store, collection, summarizer, llm, shape, fresh=False)


@tree_app.command("rebuild")
def tree_rebuild(
    store: StoreOpt = DEFAULT_STORE,
    collection: CollOpt = DEFAULT_COLLECTION,
    summarizer: SummarizerOpt = "extractive",
    llm: LlmOpt = "none",
    shape: ShapeOpt = None,
) -> None:
    """Build a new tree beside the live one and swap it in atomically."""
    _tree_build(store, collection, summarizer, llm, shape, fresh=True)


@tree_app.command("status")
def tree_status(
    store: StoreOpt = DEFAULT_STORE, collection: CollOpt = DEFAULT_COLLECTION, as_json: JsonOpt = False
) -> None:
    """Size, layers, applied generation and drift of the tree."""
    with _engine(_existing(store)) as engine:
        data = engine.collection(collection).tree().status().to_dict()
    if as_json:
        print(json.dumps(data))
    else:
        _print_tree_status(data)


def _print_tree_status(data: dict[str, Any]) -> None:
    if not data["built"]:
        console.print(f"collection {data['collection']!r} has no tree (build one with: waypost tree build)")
        return
    for key, value in data.items():
        console.print(f"[bold]{key}[/] {value}")
    if data["rebuild_advised"]:
        console.print("[yellow]drift is past the threshold: run waypost tree rebuild[/]")


@tree_app.command("show")
def tree_show(
    store: StoreOpt = DEFAULT_STORE,
    collection: CollOpt = DEFAULT_COLLECTION,
    depth: Annotated[int, typer.Option(min=1, help="Levels shown below each root.")] = 3,
    width: Annotated[int, typer.Option(min=20, help="Characters of each summary shown.")] = 100,
    children: Annotated[int, typer.Option(min=1, help="Children shown per node.")] = 6,
) -> None:
    """Print the tree: each node's layer, kind, covered chunks and its summary cut short."""
    with _engine(_existing(store)) as engine:
        tree = engine.collection(collection).tree().get(build=False)
    if tree is None:
        _fail(f"collection {collection!r} has no tree (build one with: waypost tree build)")
        return

    def show(node_id: int, level: int) -> None:
        node = tree.nodes[node_id]
        text = " ".join(node.text.split())
        text = text[:width] + ("…" if len(text) > width else "")
        label = f" {node.document_id}" if node.document_id else ""
        console.print(
            f"{'  ' * level}[bold]#{node.id}[/] L{node.layer} {node.kind}{label} ({len(node.leaves)} chunks): {text}",
            markup=True,
            highlight=False,
        )
        if level + 1 < depth:
            for c in node.children[:children]:
                show(c, level + 1)
            if len(node.children) > children:
                console.print(f"{'  ' * (level + 1)}[dim]… {len(node.children) - children} more[/]")

    for root in sorted(tree.roots(), key=lambda i: -tree.nodes[i].layer):
        show(root, 0)


def main() -> None:
    try:
        app()
    except WaypostError as exc:
        err.print(f"[bold red]error:[/] {exc}")
        sys.exit(2)


if __name__ == "__main__":
    main()
