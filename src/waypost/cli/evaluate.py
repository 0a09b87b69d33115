"""``waypost eval``: a strategy measured on a BEIR-layout dataset."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from waypost.cli.app import app, console
from waypost.cli.common import (
    AlphaOpt,
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
    StrategyOpt,
    _passages,
    _tree_config,
)
from waypost.engine import EngineConfig
from waypost.errors import InvalidInputError
from waypost.post.passages import PassageConfig
from waypost.retrieval.fusion import FusionConfig, FusionMethod
from waypost.retrieval.params import split_assignments
from waypost.store.backend import is_database_url


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
    limit: Annotated[int | None, typer.Option(min=1, help="Evaluate only the first N queries.")] = None,
    show_failures: Annotated[bool, typer.Option(help="List queries whose filters were extracted wrongly.")] = False,
    answer: Annotated[
        bool,
        typer.Option("--answer", help="Also answer queries with a gold answer (metadata.answer): answer_recall."),
    ] = False,
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
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            help="Evaluate on a PostgreSQL store, postgresql://USER@HOST/DB[?schema=NAME] (default: an embedded "
            "store under --cache-dir).",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Evaluate a strategy on a BEIR dataset: nDCG@10, Recall@k, MRR, P@10, latency, filter accuracy, and
    evidence recall/precision at 500/1000/2000-token budgets where the set has span qrels."""
    from waypost.evaluation.runner import run_eval

    if store is not None and not is_database_url(store):
        raise InvalidInputError("eval --store takes a postgresql:// URL (an embedded store lives under --cache-dir)")
    config = EngineConfig(
        embed_model=model,
        chunk_tokens=chunk_tokens,
        fusion=FusionConfig(method=fusion, alpha=alpha, reference_weight=references),
        llm=llm,
        llm_filters=llm_filters,
        tree=_tree_config(tree_shape),
        store=store,
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
            console.print(
                f"[yellow]{escape(str(f['query']))}[/]\n  expected {escape(str(f['expected']))}\n"
                f"  got      {escape(str(f['predicted']))}"
            )
