"""The ``waypost`` command line: add, query, rm, ls, stats, eval, demo."""

from __future__ import annotations

import datetime
import difflib
import json
import os
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from typer.core import TyperGroup

from waypost.embeddings.sentence_transformer import limit_blas_threads
from waypost.engine import DEFAULT_COLLECTION, Engine, EngineConfig
from waypost.errors import WaypostError
from waypost.filters.model import Filter, parse_filter, parse_filter_json
from waypost.graph.extract import DEFAULT_SPACY_MODEL
from waypost.graph.graph import KnowledgeGraph
from waypost.graph.live import LiveGraph
from waypost.graph.model import entity_key
from waypost.hierarchy.tree import TreeConfig
from waypost.post.passages import PassageConfig, PassagePolicy
from waypost.retrieval.fusion import FusionConfig, FusionMethod
from waypost.retrieval.params import describe, split_assignments
from waypost.retrieval.registry import STRATEGIES
from waypost.store.backend import open_backend, store_exists
from waypost.types import RetrievalResult

if TYPE_CHECKING:
    from typer import _click  # typer's own copy of click, which its Group.invoke takes

console = Console()
err = Console(stderr=True)


def _one_line(message: str) -> str:
    """A message as one printable line (lone surrogates, e.g. from odd file names, escaped)."""
    return " ".join(message.split()).encode("utf-8", "backslashreplace").decode("utf-8")


def _print_error(message: str) -> None:
    err.print("[bold red]error:[/] ", end="")
    err.print(_one_line(message), markup=False, highlight=False, soft_wrap=True)


class _Commands(TyperGroup):
    """Runs every command (subcommands too) so that bad input never ends in a traceback: a ``WaypostError``,
    or the ``OSError``/``UnicodeError``/``ValueError`` of an unusable file, prints one line and exits 2; any
    other exception is a bug, reported in one line with where it happened (``WAYPOST_TRACEBACK=1``: in full)."""

    def invoke(self, ctx: _click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort, typer.TyperException):  # usage errors and exits are typer's own
            raise
        except WaypostError as exc:
            _print_error(str(exc))
        except (OSError, UnicodeError, ValueError) as exc:
            _print_error(f"{type(exc).__name__}: {exc}")
        except Exception as exc:
            if os.environ.get("WAYPOST_TRACEBACK"):
                raise
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            _print_error(
                f"unexpected {type(exc).__name__}: {exc} (at {Path(frame.filename).name}:{frame.lineno} in "
                f"{frame.name}); this is a bug in waypost: please report it, with the full traceback that "
                "WAYPOST_TRACEBACK=1 prints"
            )
            raise typer.Exit(1) from exc
        raise typer.Exit(2)


app = typer.Typer(
    cls=_Commands, add_completion=False, no_args_is_help=True, help="waypost: local-first adaptive retrieval."
)

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
    if not store_exists(store):
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
            err.print("[yellow]skipped[/] ", end="")
            err.print(_one_line(f"{f.source}: {f.error}"), markup=False, highlight=False, soft_wrap=True)
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


@app.command()
def purge(
    store: StoreOpt = DEFAULT_STORE,
    collection: Annotated[str | None, typer.Option("--collection", "-c", help="One collection (default: all).")] = None,
    llm: LlmOpt = "none",
    vacuum: Annotated[bool, typer.Option(help="Rewrite the store file (VACUUM) so no freed page survives.")] = True,
    as_json: JsonOpt = False,
) -> None:
    """Remove now what deletes left on disk: tombstoned index rows and unused terms, old index states, cache
    entries of deleted text; catch up trees and graphs; zero freed pages, vacuum, truncate the WAL files."""
    engine, _ = _graph_engine(_existing(store), collection or DEFAULT_COLLECTION, None, llm, None, lenient=True)
    with engine:
        if collection is not None:
            report = engine.collection(collection).purge(vacuum=vacuum)
        else:
            report = engine.purge(vacuum=vacuum)
    if as_json:
        print(json.dumps(report.to_dict()))
        return
    console.print(
        f"purged {', '.join(report.collections) or 'no collections'}: {report.tombstoned_rows} tombstoned rows, "
        f"{report.vocabulary_terms} unused terms, {report.index_files} old index files, "
        f"{report.llm_cache_entries} LLM cache entries, {report.embedding_cache_entries} embedding cache entries"
        + ("; store vacuumed" if report.vacuumed else "")
    )
    for line in report.skipped:
        err.print(f"[yellow]not purged[/] {line}")


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
    from waypost.post.rerank.profile import check_new_name, profile_directories, save_profile

    if not name:
        _fail("give the profile a --name")
    try:
        check_new_name(name)  # before training, not after it
    except WaypostError as exc:
        _fail(str(exc))
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


graph_app = typer.Typer(
    no_args_is_help=True, help="The knowledge graph behind hipporag: entities, relations and communities."
)
app.add_typer(graph_app, name="graph")
GRAPH_EXTRACTORS = ("spacy", "llm")
ExtractorOpt = Annotated[
    str | None,
    typer.Option(
        help="spacy (offline NER and noun phrases) or llm (OpenIE triples, needs --llm); "
        "default: the stored graph's extractor, else spacy."
    ),
]
GRAPH_REPORTS = ("extractive", "llm")
ReportsOpt = Annotated[
    str | None,
    typer.Option(
        help="Community reports: extractive (no LLM) or llm (written by the --llm); "
        "default: the stored graph's, else extractive."
    ),
]
SpacyModelOpt = Annotated[
    str | None, typer.Option(help="An installed spaCy pipeline package; default: the stored graph's, else the default.")
]
NO_GRAPH = "collection {!r} has no graph (build one with: waypost graph build)"


def _stored_extractor(store: Path, collection: str) -> tuple[str | None, str | None, str | None]:
    """(extractor kind, spaCy model, reports kind) of the collection's stored graph: ("spacy", MODEL, ...) or
    ("llm", None, ...) with "extractive" or "llm" reports; (None, None, None) without a graph."""
    with open_backend(_existing(store)) as backend:
        record = backend.graphs.record(collection)
    if record is None:
        return None, None, None
    kind, _, rest = record.extractor.partition(":")
    reports = "llm" if record.reporter.startswith("llm:") else "extractive"
    return kind, (rest.split(":", 1)[0] or None) if kind == "spacy" else None, reports


def _graph_engine(
    store: Path,
    collection: str,
    extractor: str | None,
    llm: str,
    spacy_model: str | None,
    lenient: bool = False,
    reports: str | None = None,
) -> tuple[Engine, bool]:
    """An engine whose graph extractor and reporter are ``extractor`` and ``reports`` (default: the ones that
    made the stored graph, so that catching up extends that graph instead of replacing it). The flag says
    whether it can extend it: with ``lenient``, a graph an LLM made without an --llm is only read (True
    otherwise, or an error)."""
    stored, stored_model, stored_reports = _stored_extractor(store, collection)
    kind = extractor or stored or "spacy"
    report_kind = reports or stored_reports or "extractive"
    if kind not in GRAPH_EXTRACTORS:
        _fail(f"--extractor must be one of {', '.join(GRAPH_EXTRACTORS)}, not {kind!r}")
    if report_kind not in GRAPH_REPORTS:
        _fail(f"--reports must be one of {', '.join(GRAPH_REPORTS)}, not {report_kind!r}")
    can_extract = True
    if kind == "llm" and llm == "none":
        if not lenient and extractor:
            _fail("--extractor llm needs an LLM: pass --llm (for example smollm2)")
        if not lenient:
            _fail("the stored graph was made by an LLM: pass --llm (for example smollm2) to extend it, "
                  "or --extractor spacy to rebuild it offline")  # fmt: skip
        kind, can_extract = "spacy", False
    if report_kind == "llm" and llm == "none":
        if not lenient and reports:
            _fail("--reports llm needs an LLM: pass --llm (for example smollm2)")
        if not lenient:
            _fail("the stored graph's community reports were written by an LLM: pass --llm (for example smollm2) "
                  "to extend it, or --reports extractive to rebuild it offline")  # fmt: skip
        report_kind, can_extract = "extractive", False
    model = spacy_model or (stored_model if stored == "spacy" else None) or DEFAULT_SPACY_MODEL
    config = EngineConfig(llm=llm, graph_extractor=kind, spacy_model=model, graph_reports=report_kind)
    return Engine(_existing(store), config), can_extract


def _graph_status(live: LiveGraph) -> dict[str, Any]:
    """The graph's status (``GraphStatus.to_dict()``) with the stored graph's build and update times."""
    data: dict[str, Any] = live.status().to_dict()
    record = live.graphs.record(live.collection)
    data["built_at"] = record.built_at if record is not None else None
    data["updated_at"] = record.updated_at if record is not None else None
    data["drift_threshold"] = record.config.drift_threshold if record is not None else None
    return data


@graph_app.command("build")
def graph_build(
    store: StoreOpt = DEFAULT_STORE,
    collection: CollOpt = DEFAULT_COLLECTION,
    rebuild: Annotated[bool, typer.Option("--rebuild", help="Build anew and swap it in atomically.")] = False,
    extractor: ExtractorOpt = None,
    reports: ReportsOpt = None,
    llm: LlmOpt = "none",
    spacy_model: SpacyModelOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Build the graph if the collection has none (else bring it up to date with the collection); a graph
    another extractor or reporter made is built anew."""
    engine, _ = _graph_engine(store, collection, extractor, llm, spacy_model, reports=reports)
    with engine:
        live = engine.collection(collection).graph()
        if rebuild:
            live.rebuild(show_progress=not as_json)
        else:
            live.get(build=True, show_progress=not as_json)
        data = _graph_status(live)
    if as_json:
        print(json.dumps(data))
    else:
        _print_graph_status(data)


@graph_app.command("status")
def graph_status(
    store: StoreOpt = DEFAULT_STORE, collection: CollOpt = DEFAULT_COLLECTION, as_json: JsonOpt = False
) -> None:
    """Size, communities per level, applied generation, drift and build times of the stored graph."""
    with _engine(_existing(store)) as engine:
        data = _graph_status(engine.collection(collection).graph())
    if as_json:
        print(json.dumps(data))
    else:
        _print_graph_status(data)


def _when(stamp: float | None) -> str:
    if stamp is None:
        return "-"
    return datetime.datetime.fromtimestamp(stamp).strftime("%Y-%m-%d %H:%M:%S")


def _print_graph_status(data: dict[str, Any]) -> None:
    if not data["built"]:
        console.print(NO_GRAPH.format(data["collection"]))
        return
    behind = data["store_generation"] - data["generation"]
    levels = ", ".join(f"level {level}: {n}" for level, n in data["communities"].items()) or "none"
    seconds = ", ".join(f"{stage} {s:.2f}" for stage, s in data["build_seconds"].items()) or "-"
    update = data["last_update"]
    lag = f"([yellow]{behind} behind: waypost graph build catches up[/])" if behind else "(current)"
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    for key, value in (
        ("collection", data["collection"]),
        ("extractor", f"{data['extractor']} (reports: {data['reporter']})"),
        ("entities", f"{data['entities']} ({data['named_entities']} named, "
                     f"{data['entities'] - data['named_entities']} phrases)"),
        ("relations", data["relations"]),
        ("mentions", data["mentions"]),
        ("synonyms", data["synonyms"]),
        ("communities", levels),
        ("chunks covered", data["chunks"]),
        ("generation", f"{data['generation']} of the store's {data['store_generation']} {lag}"),
        ("drift", f"{data['drift']:.4f} (Leiden runs again past {data['drift_threshold']})"),
        ("size", f"{data['size_mb']:.2f} MB"),
        ("build seconds", seconds),
        ("built", _when(data["built_at"])),
        ("last update", ", ".join(f"{k} {v}" for k, v in update.items()) if update else _when(data["updated_at"])),
    ):  # fmt: skip
        table.add_row(key, str(value))
    console.print(table, highlight=False)


def _suggest(graph: KnowledgeGraph, name: str, n: int = 5) -> list[str]:
    """Entity names close to ``name``: those whose key holds it (or it theirs), then difflib's nearest keys."""
    key = entity_key(name)
    keys = sorted(graph.by_key, key=lambda k: (-len(graph.entities[graph.by_key[k]].rows), k))
    near = [k for k in keys if key and (key in k or (len(k) > 3 and k in key))]
    near += difflib.get_close_matches(key, list(graph.by_key), n=n, cutoff=0.6)
    return [graph.entities[graph.by_key[k]].name for k in dict.fromkeys(near)][:n]


def _chunk_refs(engine: Engine, collection: str, rows: list[int]) -> dict[int, dict[str, Any]]:
    """Chunk row -> where it is (chunk id, document id and title, chunk index)."""
    out: dict[int, dict[str, Any]] = {}
    for stored in engine.store.chunks_by_row(collection, sorted(set(rows))):
        c = stored.chunk
        out[stored.row_id] = {
            "row": stored.row_id, "chunk_id": c.id, "document_id": c.document_id, "chunk_index": c.index,
            "title": stored.title, "start": c.start, "end": c.end,
        }  # fmt: skip
    return out


def _ref(refs: dict[int, dict[str, Any]], row: int) -> dict[str, Any]:
    return refs.get(row) or {"row": row, "chunk_id": None, "document_id": None, "chunk_index": None, "title": None}


def _community_brief(graph: KnowledgeGraph, cid: int) -> dict[str, Any]:
    c = graph.communities[cid]
    return {"id": c.id, "level": c.level, "parent": c.parent, "title": c.title, "members": len(c.members)}


def _entity_view(engine: Engine, collection: str, graph: KnowledgeGraph, eid: int, hops: int) -> dict[str, Any]:
    e = graph.entities[eid]
    relations = sorted(graph.relations_of(eid), key=lambda r: (-r.weight, r.id))
    refs = _chunk_refs(engine, collection, [*e.rows, *(r.row for r in relations)])
    mentions = [
        {**_ref(refs, row), "count": count, "sentence": e.sentences.get(row, "")}
        for row, count in sorted(e.rows.items(), key=lambda rc: (-rc[1], rc[0]))
    ]
    rels = []
    for r in relations:
        other = r.target if r.source == eid else r.source
        rels.append({
            "id": r.id, "source": graph.entities[r.source].name, "target": graph.entities[r.target].name,
            "label": r.label, "direction": "out" if r.source == eid else "in", "other": other,
            "other_name": graph.entities[other].name, "weight": r.weight, **_ref(refs, r.row),
        })  # fmt: skip
    synonyms = [
        {"id": o, "name": graph.entities[o].name, "similarity": sim}
        for o, sim in sorted(graph.synonyms.get(eid, {}).items(), key=lambda os: -os[1])
        if o in graph.entities
    ]
    seen, frontier, neighbours = {eid}, {eid: 0.0}, []
    for hop in range(1, hops + 1):
        reached: dict[int, float] = {}
        for node in frontier:
            for other, w in graph.neighbours(node).items():
                if other not in seen and other in graph.entities:
                    reached[other] = reached.get(other, 0.0) + w
        for other, w in sorted(reached.items(), key=lambda ow: (-ow[1], ow[0])):
            o = graph.entities[other]
            neighbours.append({"id": other, "name": o.name, "label": o.label, "hops": hop, "weight": round(w, 4)})
        seen |= set(reached)
        frontier = reached
    return {
        "collection": collection,
        "entity": {"id": e.id, "name": e.name, "key": e.key, "label": e.label, "kind": e.kind,
                   "description": e.description, "chunks": len(e.rows), "mentions": sum(e.rows.values())},
        "mentions": mentions,
        "relations": rels,
        "synonyms": synonyms,
        "communities": [_community_brief(graph, c) for c in graph.member_of.get(eid, []) if c in graph.communities],
        "neighbours": neighbours,
    }  # fmt: skip


def _community_view(engine: Engine, collection: str, graph: KnowledgeGraph, cid: int) -> dict[str, Any]:
    c = graph.communities[cid]
    refs = _chunk_refs(engine, collection, c.rows)
    members = sorted(c.members, key=lambda m: (-len(graph.entities[m].rows), m))
    return {
        "collection": collection,
        "community": {**_community_brief(graph, cid), "report": c.report},
        "members": [{"id": m, "name": graph.entities[m].name, "label": graph.entities[m].label,
                     "chunks": len(graph.entities[m].rows)} for m in members],
        "sources": [_ref(refs, row) for row in c.rows],
        "children": [_community_brief(graph, o) for o in sorted(graph.communities)
                     if graph.communities[o].parent == cid],
    }  # fmt: skip


def _where(ref: dict[str, Any]) -> str:
    if ref["chunk_id"] is None:
        return f"row {ref['row']} (gone)"
    return f"{ref['chunk_id']} (row {ref['row']})"


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _more(shown: int, total: int, indent: str = "  ") -> None:
    if total > shown:
        console.print(f"{indent}[dim]… {total - shown} more (--limit)[/]")


def _print_entity(view: dict[str, Any], limit: int) -> None:
    e = view["entity"]
    out = console.print
    out(f"[bold]{e['name']}[/]  {e['label']} ({e['kind']}), entity #{e['id']}, "
        f"{_n(e['mentions'], 'mention')} in {_n(e['chunks'], 'chunk')}", highlight=False)  # fmt: skip
    if e["description"]:
        out(f"[italic]{e['description']}[/]", highlight=False)
    out(f"\n[bold]mentioned in[/] ({_n(len(view['mentions']), 'chunk')})")
    for m in view["mentions"][:limit]:
        doc = f"{m['document_id']}" + (f" “{m['title']}”" if m["title"] else "") if m["document_id"] else "?"
        out(f"  {_where(m)}  [dim]{doc}[/]", highlight=False)
        if m["sentence"]:
            out(f"    {m['sentence']}", highlight=False)
    _more(min(limit, len(view["mentions"])), len(view["mentions"]))
    out(f"\n[bold]relations[/] ({len(view['relations'])})")
    for r in view["relations"][:limit]:
        out(f"  {r['source']} — {r['label']} — {r['target']}  [dim]{_where(r)}[/]", highlight=False)
    _more(min(limit, len(view["relations"])), len(view["relations"]))
    if view["synonyms"]:
        out("\n[bold]synonyms[/] " + ", ".join(f"{s['name']} ({s['similarity']:.2f})" for s in view["synonyms"]),
            highlight=False)  # fmt: skip
    out("\n[bold]communities[/]" + ("" if view["communities"] else " none"))
    for c in view["communities"]:
        out(f"  #{c['id']} L{c['level']} {c['title']} ({_n(c['members'], 'member')})", highlight=False)
    hops = max((n["hops"] for n in view["neighbours"]), default=0)
    for hop in range(1, hops + 1):
        near = [n for n in view["neighbours"] if n["hops"] == hop]
        out(f"\n[bold]neighbours, {hop} hop{'s' if hop > 1 else ''}[/] ({len(near)})")
        out("  " + "; ".join(f"{n['name']} [dim]{n['label']} {n['weight']:g}[/]" for n in near[:limit]),
            highlight=False)  # fmt: skip
        _more(min(limit, len(near)), len(near))


def _print_community(view: dict[str, Any], limit: int) -> None:
    c = view["community"]
    out = console.print
    parent = f", inside #{c['parent']}" if c["parent"] >= 0 else ""
    out(f"[bold]community #{c['id']}[/] L{c['level']}{parent}: {c['title']} ({_n(c['members'], 'member')})",
        highlight=False)  # fmt: skip
    out("\n[bold]members[/] " + "; ".join(f"{m['name']} [dim]{m['label']}[/]" for m in view["members"][:limit]),
        highlight=False)  # fmt: skip
    _more(min(limit, len(view["members"])), len(view["members"]))
    if view["children"]:
        out("\n[bold]sub-communities[/] " + "; ".join(f"#{k['id']} {k['title']}" for k in view["children"]),
            highlight=False)  # fmt: skip
    out("\n[bold]report[/]")
    out(c["report"], highlight=False, markup=False)
    out(f"\n[bold]sources[/] ({_n(len(view['sources']), 'chunk')})")
    for s in view["sources"][:limit]:
        out(f"  {_where(s)}  [dim]{s['document_id'] or '?'}[/]", highlight=False)
    _more(min(limit, len(view["sources"])), len(view["sources"]))


@graph_app.command("show")
def graph_show(
    entity: Annotated[str | None, typer.Argument(help="An entity's name (case does not matter).")] = None,
    store: StoreOpt = DEFAULT_STORE,
    collection: CollOpt = DEFAULT_COLLECTION,
    community: Annotated[int | None, typer.Option(help="Show community ID (its report, members and sources).")] = None,
    hops: Annotated[int, typer.Option(min=1, max=3, help="Neighbours up to this many hops away.")] = 1,
    limit: Annotated[int, typer.Option(min=1, help="Items shown per list (JSON lists them all).")] = 20,
    llm: LlmOpt = "none",
    as_json: JsonOpt = False,
) -> None:
    """An entity's neighbourhood and sources (mentions, relations, synonyms, communities), or a community."""
    if (entity is None) == (community is None):
        _fail("give an ENTITY name or --community ID (one of them)")
    engine, can_extract = _graph_engine(store, collection, None, llm, None, lenient=True)
    with engine:
        live = engine.collection(collection).graph()
        if can_extract:
            graph = live.get(build=False)
        else:  # an LLM made it and none is given: what is stored, not caught up
            loaded = live.graphs.load(collection)
            graph = loaded[0] if loaded is not None else None
            behind = engine.store.generation(collection) - (graph.generation if graph is not None else 0)
            if graph is not None and behind > 0:
                err.print(f"[yellow]the stored graph is {behind} generations behind the collection; pass the --llm "
                          "that built it to catch up[/]")  # fmt: skip
        if graph is None:
            _fail(NO_GRAPH.format(collection))
            return
        if community is not None:
            if community not in graph.communities:
                ids = sorted(graph.communities)
                known = f"its communities are #{ids[0]}..#{ids[-1]}" if ids else "it has no communities"
                _fail(f"no community #{community} in the graph of {collection!r} ({known})")
            view = _community_view(engine, collection, graph, community)
        else:
            assert entity is not None
            found = graph.entity_named(entity)
            if found is None:
                close = _suggest(graph, entity)
                hint = f"; did you mean: {', '.join(close)}?" if close else " (and no name close to it)"
                _fail(f"no entity named {entity!r} in the graph of {collection!r}{hint}")
                return
            view = _entity_view(engine, collection, graph, found.id, hops)
    if as_json:
        print(json.dumps(view))
    elif community is not None:
        _print_community(view, limit)
    else:
        _print_entity(view, limit)


def _thread_settings() -> None:
    """One BLAS thread: on few cores it otherwise fights torch's threads. The variables reach the libraries loaded
    from now on; threadpoolctl limits those already loaded (importing waypost loads numpy)."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    limit_blas_threads()


def main() -> None:
    _thread_settings()
    try:
        app()
    except WaypostError as exc:
        err.print(f"[bold red]error:[/] {exc}")
        sys.exit(2)


if __name__ == "__main__":
    main()
