"""``waypost router``: the router behind ``--strategy auto`` (its commands join this group)."""

from __future__ import annotations

import errno
import json
import os
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from waypost.cli.app import app, console
from waypost.cli.common import DEFAULT_STORE, StoreOpt, _existing, _open_engine

router_app = typer.Typer(no_args_is_help=True, help="The router behind --strategy auto.")
app.add_typer(router_app, name="router")


@router_app.command("train-collections")
def router_train_collections(
    out: Annotated[Path, typer.Option("--out", "-o", help="Where the collection selector's JSON profile goes.")],
    queries: Annotated[
        Path | None,
        typer.Argument(help='JSONL of labelled queries: {"query": "...", "collection": "NAME"} per line.'),
    ] = None,
    store: StoreOpt = DEFAULT_STORE,
    use_feedback: Annotated[
        bool,
        typer.Option(
            "--feedback",
            help="Also label queries from recorded feedback (`waypost feedback`): the collection whose hits were "
            "used most for each. Where QUERIES labels the same query, its label stands.",
        ),
    ] = False,
    exemplars: Annotated[
        bool, typer.Option("--exemplars/--no-exemplars", help="Keep the queries as exemplars of their collection.")
    ] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    """Fit stage 1 (which collection answers a query) on labelled queries, from a file, from recorded
    feedback, or both, and write its profile; use it with `--collection auto --collections-profile PATH`."""
    from waypost.engine import EngineConfig
    from waypost.errors import InvalidInputError, WaypostError
    from waypost.route.collections_fit import fit_collections, labelled_from_feedback, merge_labels, read_labelled

    if queries is None and not use_feedback:
        raise InvalidInputError("give a file of labelled QUERIES, --feedback, or both")
    labelled = read_labelled(queries) if queries is not None else []
    _existing(store)
    sources: dict[str, int] = {}
    try:  # a profile that cannot be written is found before the fit, not after it
        if out.is_dir():
            raise IsADirectoryError(errno.EISDIR, "is a directory")
        out.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out.parent, prefix=f".{out.name}.", delete=False) as tmp:
            staged = Path(tmp.name)
    except OSError as exc:
        raise WaypostError(f"cannot write the profile to {out}: {exc.strerror}") from None
    try:
        with _open_engine(store, EngineConfig(background_index_work=False)) as engine:
            from_feedback = labelled_from_feedback(engine) if use_feedback else None
            if from_feedback is not None:
                labelled, overridden = merge_labels(labelled, from_feedback.queries)
                sources = {
                    "feedback_queries": len(from_feedback.queries) - overridden,
                    "feedback_ambiguous": len(from_feedback.ambiguous),
                    "feedback_overridden": overridden,
                }
            if not labelled:
                raise InvalidInputError("no labelled query: the store holds no feedback that a hit was used")
            fitted = fit_collections(engine, labelled, exemplars=exemplars, show_progress=not as_json)
        staged.write_text(fitted.selector.to_json(), encoding="utf-8")
        os.replace(staged, out)
    finally:
        staged.unlink(missing_ok=True)
    summary = {"profile": str(out), **fitted.summary(), **(sources if use_feedback else {})}
    if as_json:
        print(json.dumps(summary))
        return
    console.print(f"collection profile written to [bold]{out}[/]")
    cv = "n/a (too few queries)" if fitted.cv_accuracy is None else f"{fitted.cv_accuracy:.4f}"
    console.print(f"  {fitted.queries} queries; accuracy {fitted.train_accuracy:.4f} on them, {cv} cross-validated")
    for name, row in sorted(fitted.per_collection.items()):
        console.print(f"  {name}: {row['accuracy']:.4f} of {int(row['queries'])}")
    if use_feedback:
        console.print(
            f"  from feedback: {sources['feedback_queries']} queries ({sources['feedback_ambiguous']} left out as "
            f"useful in two collections equally, {sources['feedback_overridden']} labelled in the file instead)"
        )
    if fitted.unlabelled:
        console.print(f"  [yellow]no labelled query for {', '.join(fitted.unlabelled)}: chosen on signals alone[/]")
