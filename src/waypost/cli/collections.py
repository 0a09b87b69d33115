"""Collections and their documents: add, rm, purge, ls, collection describe."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from waypost.cli.app import _one_line, app, console, err
from waypost.cli.common import (
    DEFAULT_STORE,
    CollOpt,
    JsonOpt,
    LlmOpt,
    ModelOpt,
    StoreOpt,
    _engine,
    _existing,
)
from waypost.cli.graph import _graph_engine
from waypost.engine import DEFAULT_COLLECTION
from waypost.errors import WaypostError


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
        table.add_row(*[Text(str(v)) for v in row.values()])  # titles are text, never console markup
    console.print(table)


collection_app = typer.Typer(no_args_is_help=True, help="A collection's settings (its description).")
app.add_typer(collection_app, name="collection")


@collection_app.command("describe")
def describe(
    name: Annotated[str, typer.Argument(help="The collection.")],
    text: Annotated[
        str, typer.Argument(help='What it holds, e.g. "Movie catalogue: plots, cast, ratings" ("" clears).')
    ],
    store: StoreOpt = DEFAULT_STORE,
) -> None:
    """Say what a collection holds: `--collection auto` reads it to choose collections."""
    with _engine(_existing(store)) as engine:
        coll = engine.collection(name)
        coll.describe(text)
        described = coll.info.description
    console.print(f"{name}: {described}" if described else f"{name}: description cleared", markup=False)
