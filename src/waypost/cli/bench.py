"""``waypost bench mixed`` (the routing benchmark) and ``waypost router train`` (the learned router's
profile). The logic lives in ``evaluation/mixed*.py`` and ``route/train.py``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from waypost.cli.app import app, console
from waypost.cli.router import router_app

bench_app = typer.Typer(no_args_is_help=True, help="Benchmarks: the mixed workload of the router.")
app.add_typer(bench_app, name="bench")

PipelinesOpt = Annotated[
    list[str],
    typer.Option("--pipelines", help="Pipelines of the pool: a strategy name or a pipeline JSON value (repeat)."),
]


@router_app.command("train")
def router_train(
    datasets: Annotated[list[Path] | None, typer.Argument(help="BEIR-layout directories, one collection each.")] = None,
    store: Annotated[Path | None, typer.Option("--store", "-s", help="Store the sets are ingested into.")] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Where the JSON profile is written.")] = None,
    feedback: Annotated[
        bool,
        typer.Option(
            "--feedback",
            help="Train on the queries users gave feedback on (`waypost feedback`) in --store's own collections, "
            "instead of DATASETs; needs --out.",
        ),
    ] = False,
    pipelines: PipelinesOpt = [],  # noqa: B006
    scope: Annotated[
        str | None, typer.Option(help="A query metadata field every query is filtered by (e.g. meeting).")
    ] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="At most N training queries per set.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    """Run every pipeline of the pool on the sets' training splits (qrels/train.tsv, else the fixed half of
    the query ids), or on the queries with feedback in a store (--feedback), record each query's outcome,
    fit the gain model and write its profile (use it with `--router-profile PATH`)."""
    from waypost.errors import InvalidInputError
    from waypost.route.train import train_command, train_on_feedback

    if feedback:
        if datasets or scope:
            raise InvalidInputError("--feedback trains on the store's own collections: give no DATASET or --scope")
        if store is None or out is None:
            raise InvalidInputError("--feedback needs --store (whose feedback to learn from) and --out")
        summary = train_on_feedback(store, out, pipelines, limit, show_progress=not as_json)
    elif not datasets:
        raise InvalidInputError("give one or more DATASET directories, or --feedback with --store")
    else:
        summary = train_command(datasets, store, out, pipelines, scope, limit, show_progress=not as_json)
    if as_json:
        print(json.dumps(summary))
        return
    console.print(f"profile written to [bold]{summary['profile']}[/]")
    for key in ("queries", "sets", "oof_accuracy", "oof_score", "oof_default_score", "oof_oracle_score"):
        console.print(f"  {key}: {summary.get(key)}")
    console.print(f"  low confidence (< {summary['threshold']:.3f}): {summary['low_confidence']}")


@bench_app.command("mixed")
def bench_mixed(
    store: Annotated[Path | None, typer.Option("--store", "-s", help="The mixed store.")] = None,
    data: Annotated[
        Path | None, typer.Option("--data", help="Folder of the shared sets (default: ../shared/data).")
    ] = None,
    dataset: Annotated[
        list[Path], typer.Option("--dataset", "-d", help="Run these BEIR-layout sets instead of the six (repeat).")
    ] = [],  # noqa: B006
    report: Annotated[Path | None, typer.Option("--report", help="Write index.html and plots here.")] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="At most N test queries per set.")] = None,
    train_limit: Annotated[int | None, typer.Option(min=1, help="At most N training queries per set.")] = None,
    profile: Annotated[
        Path | None, typer.Option(help="Score this router profile (default: the one fitted on the train split).")
    ] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write the router fitted here (JSON).")] = None,
    pipelines: PipelinesOpt = [],  # noqa: B006
    only: Annotated[list[str], typer.Option("--set", help="Only these of the six sets (repeat).")] = [],  # noqa: B006
    no_prepare: Annotated[
        bool, typer.Option("--no-prepare", help="Read the store as it is: ingest and build nothing.")
    ] = False,
    live: Annotated[
        bool,
        typer.Option(
            "--live/--table",
            help='auto end to end through search(strategy="auto"): the collection chosen, planner and corrective '
            "loop on (default); --table scores the fitted model's choices from the outcome table instead.",
        ),
    ] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print the issue's figures as JSON.")] = False,
) -> None:
    """The mixed workload's test queries, interleaved, under auto routing against every fixed pipeline,
    the best single fixed pipeline, the per-query oracle and the controls (always-hybrid, shuffled labels,
    leave one set out). Trains on the training splits first (outcomes are cached in the store)."""
    from waypost.evaluation.mixed import default_store, default_workload, with_sets, workload_from_dirs
    from waypost.evaluation.mixed_bench import run_bench_mixed
    from waypost.route.train import parse_pool

    workload = workload_from_dirs(list(dataset)) if dataset else default_workload(data)
    if only:
        workload = with_sets(workload, only)
    pool = parse_pool(pipelines) if pipelines else None
    result = run_bench_mixed(
        store or default_store(),
        workload,
        limit,
        train_limit,
        profile,
        pool,
        live=live,
        show_progress=not as_json,
        prepare_store=not no_prepare,
        save_profile=out,
    )
    if report is not None:
        from waypost.evaluation.mixed_report import write_report

        page = write_report(result, report)
        if not as_json:
            console.print(f"report: {page}")
    if as_json:
        print(json.dumps(result.to_json()))
        return
    avg = result.averages()
    console.print(
        f"auto {avg['auto']:.4f} · best single fixed ({result.best_single}) {avg['best_single']:.4f} · "
        f"oracle {avg['oracle']:.4f} · gap closed {result.oracle_gap_closed:.3f} · "
        f"strategy accuracy {result.strategy_accuracy:.3f} · router p95 {result.router_p95_ms:.2f} ms · "
        f"auto p95 {result.auto_p95_ms:.1f} ms"
    )
    for s in result.sets:
        best = max(result.fixed[s], key=lambda p: result.fixed[s][p])
        controls = ", ".join(f"{n} {c[s]:.4f}" for n, c in result.controls.items() if s in c)
        console.print(
            f"  {s} ({result.metrics[s]}): auto {result.auto[s]:.4f}, best fixed {result.fixed[s][best]:.4f} "
            f"({best}), oracle {result.oracle[s]:.4f}; {controls}"
        )
