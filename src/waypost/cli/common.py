"""Options and helpers shared by the commands: store, collection, model, strategy, passages, filters."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from waypost.cli.app import err
from waypost.engine import Engine, EngineConfig
from waypost.errors import WaypostError
from waypost.filters.model import Filter, parse_filter, parse_filter_json
from waypost.hierarchy.tree import TreeConfig
from waypost.post.passages import PassageConfig, PassagePolicy
from waypost.retrieval.fusion import FusionConfig, FusionMethod
from waypost.retrieval.registry import STRATEGIES
from waypost.store.backend import database_label, is_database_url, store_exists, working_directory

if TYPE_CHECKING:
    _LocalPath = Path
else:
    _LocalPath = type(Path())  # Path itself cannot be subclassed before Python 3.12


class DatabaseStore(_LocalPath):
    """``--store postgresql://...``: the path is the engine's local working directory (indexes, caches), named
    after the URL without its password; ``url`` is the store."""

    url: str = ""


def _store_location(value: str | Path) -> Path:
    text = str(value)
    if not is_database_url(text):
        return Path(text)
    store = DatabaseStore(working_directory(text))
    store.url = text
    return store


def store_url(store: Path) -> str | None:
    """The PostgreSQL URL ``--store`` gave, or None for a store directory."""
    return (store.url or None) if isinstance(store, DatabaseStore) else None


StoreOpt = Annotated[
    Path,
    typer.Option(
        "--store",
        "-s",
        envvar="WAYPOST_STORE",
        parser=_store_location,
        help="Store directory, or a postgresql://USER@HOST/DB[?schema=NAME] URL.",
    ),
]
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
CollectionsProfileOpt = Annotated[
    Path | None,
    typer.Option(
        "--collections-profile",
        help="With --collection auto: choose collections with this profile (`waypost router train-collections`).",
    ),
]


def collection_selector(profile: Path | None) -> str:
    """``EngineConfig.collection_selector`` for ``--collections-profile`` (the embedding selector without one)."""
    return "embedding" if profile is None else f"learned:{profile}"


ServerCollectionsProfileOpt = Annotated[
    Path | None,
    typer.Option(
        "--collections-profile",
        help="Choose collections for collection auto with this profile (`waypost router train-collections`).",
    ),
]


def checked_collection_selector(profile: Path | None) -> str:
    """``collection_selector`` for a server (``serve``, ``mcp``), whose every tenant's engine uses it: the profile
    is read and parsed now, so a bad one stops the command before it serves anything."""
    if profile is not None:
        from waypost.route.collections import check_profile_file

        check_profile_file(profile)  # a WaypostError: main prints it on one line
    return collection_selector(profile)


ServerRouterProfileOpt = Annotated[
    Path | None,
    typer.Option(
        "--router-profile",
        help="Route strategy auto with this profile (`waypost router train`, e.g. with --feedback); "
        "default: the shipped one.",
    ),
]


def checked_router_profile(profile: Path | None) -> Path | None:
    """``RouterConfig.profile`` for a server (``serve``, ``mcp``): the profile is read and parsed now, so a bad
    one stops the command before it serves anything."""
    if profile is not None:
        from waypost.route.router import load_profile

        load_profile(profile)  # a WaypostError: main prints it on one line
    return profile


LlmOpt = Annotated[str, typer.Option("--llm", help="none (extractive), smollm2, gguf:PATH or openai:MODEL@URL.")]
DEFAULT_STORE = Path(".waypost")
StrategyOpt = Annotated[str, typer.Option(help=f"auto (the router chooses) or one of: {', '.join(STRATEGIES)}.")]
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
    url = store_url(store)
    if not store_exists(store, url):
        where = store if url is None else database_label(url)
        reachable = "" if url is None else " or it cannot be reached"
        raise WaypostError(
            f"no waypost store at {where}{reachable} (create one with: waypost add PATH --store {where})"
        )
    return store


def _engine(
    store: Path, model: str | None = None, chunk_tokens: int = 200, fusion: FusionConfig | None = None
) -> Engine:
    return _open_engine(
        store, EngineConfig(embed_model=model, chunk_tokens=chunk_tokens, fusion=fusion or FusionConfig())
    )


def _open_engine(store: Path, config: EngineConfig) -> Engine:
    """An engine on the --store: a directory, or a PostgreSQL database worked on from a local directory."""
    url = store_url(store)
    return Engine(store, config if url is None else replace(config, store=url))


def _fail(message: str) -> None:
    err.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(2)


def _filters(where: list[str], where_json: str | None) -> Filter | None:
    parsed = parse_filter(where)
    if where_json:
        extra = parse_filter_json(where_json)
        from waypost.filters.extract import combine

        return combine(parsed, extra)
    return parsed


def _tree_config(shape: str) -> TreeConfig:
    if shape not in ("full", "lite"):
        _fail(f"the tree shape must be full or lite, not {shape!r}")
    return TreeConfig(lite=shape == "lite")
