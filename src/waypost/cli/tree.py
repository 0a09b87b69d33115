"""``waypost tree``: build, rebuild, status and show the RAPTOR tree."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from waypost.cli.app import app, console, err
from waypost.cli.common import (
    DEFAULT_STORE,
    CollOpt,
    JsonOpt,
    LlmOpt,
    StoreOpt,
    _engine,
    _existing,
    _fail,
    _open_engine,
    _tree_config,
)
from waypost.engine import DEFAULT_COLLECTION, Engine, EngineConfig

tree_app = typer.Typer(no_args_is_help=True, help="The RAPTOR tree behind raptor-* and doc-summary strategies.")
app.add_typer(tree_app, name="tree")


def _tree_engine(store: Path, llm: str, summarizer: str, shape: str | None = None) -> Engine:
    tree = None if shape is None else _tree_config(shape)
    return _open_engine(_existing(store), EngineConfig(llm=llm, tree_summarizer=summarizer, tree=tree))


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
        label = f" {escape(node.document_id)}" if node.document_id else ""
        console.print(
            f"{'  ' * level}[bold]#{node.id}[/] L{node.layer} {node.kind}{label} ({len(node.leaves)} chunks): "
            f"{escape(text)}",
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
