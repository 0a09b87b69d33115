"""``waypost graph``: build, status and show the knowledge graph."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from waypost.cli.app import app, err
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
    store_url,
)
from waypost.cli.graph_views import (
    NO_GRAPH,
    _community_view,
    _entity_view,
    _print_community,
    _print_entity,
    _print_graph_status,
    _suggest,
)
from waypost.engine import DEFAULT_COLLECTION, Engine, EngineConfig
from waypost.graph.extract import DEFAULT_SPACY_MODEL
from waypost.graph.live import LiveGraph
from waypost.store.backend import open_backend

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


def _stored_extractor(store: Path, collection: str) -> tuple[str | None, str | None, str | None]:
    """(extractor kind, spaCy model, reports kind) of the collection's stored graph: ("spacy", MODEL, ...) or
    ("llm", None, ...) with "extractive" or "llm" reports; (None, None, None) without a graph."""
    with open_backend(_existing(store), store_url(store)) as backend:
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
    return _open_engine(_existing(store), config), can_extract


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
