"""Feedback on hits and the rerank profiles learned from it or from a dataset: feedback, rerank train."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from waypost.cli.app import app, console
from waypost.cli.common import (
    DEFAULT_STORE,
    CollOpt,
    JsonOpt,
    StoreOpt,
    StrategyOpt,
    _existing,
    _fail,
    _open_engine,
)
from waypost.engine import DEFAULT_COLLECTION, EngineConfig
from waypost.errors import WaypostError


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
    with _open_engine(_existing(store), EngineConfig()) as engine:
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
    limit: Annotated[int | None, typer.Option(min=1, help="Use only the first N training queries.")] = None,
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
