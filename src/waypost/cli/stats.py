"""``waypost stats``: counts, model, metadata fields and index state of a collection."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from waypost.cli.app import app, console
from waypost.cli.common import (
    DEFAULT_STORE,
    CollOpt,
    JsonOpt,
    StoreOpt,
    _engine,
    _existing,
)
from waypost.engine import DEFAULT_COLLECTION

RoutesOpt = Annotated[
    bool, typer.Option("--routes", help="Routed queries instead: pipelines' share and latency, cache hits, retries.")
]


@app.command()
def stats(
    store: StoreOpt = DEFAULT_STORE,
    collection: CollOpt = DEFAULT_COLLECTION,
    as_json: JsonOpt = False,
    routes: RoutesOpt = False,
) -> None:
    """Counts, model, metadata fields and index state of a collection; with --routes, the routes taken."""
    if routes:
        _route_report(store, as_json)
        return
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
            table.add_row(Text(name), f["kind"], str(f["list"]), str(f["distinct"] or ""), Text(str(f["range"] or "")))
        console.print(table)


def _route_report(store: Path, as_json: bool) -> None:
    """Every collection's recorded routes (``waypost.route.telemetry.route_stats``)."""
    from waypost.route.telemetry import route_stats

    with _engine(_existing(store)) as engine:
        data = route_stats(engine)
    if as_json:
        print(json.dumps(data))
        return
    if not data["routes"]:
        console.print("no routed queries recorded yet (queries with --strategy auto are recorded)")
        return
    table = Table(title=f"{data['routes']} routed queries")
    for col in ("pipeline", "share", "confidence", "p50 ms", "p95 ms", "cache hits"):
        table.add_column(col)
    for label, row in data["pipelines"].items():
        table.add_row(
            label,
            f"{row['share']:.1%}",
            f"{row['confidence_mean']:.2f}",
            f"{row['latency_ms']['p50']:.1f}",
            f"{row['latency_ms']['p95']:.1f}",
            f"{row['cache_hit_rate']:.1%}",
        )
    console.print(table)
    retries = data["retries"]
    console.print(
        f"cache hit rate {data['cache_hit_rate']:.1%}; retried {retries['retried_share']:.1%} of queries "
        f"({retries['total']} retries); latency p50 {data['latency_ms']['p50']:.1f} ms, "
        f"p95 {data['latency_ms']['p95']:.1f} ms; per collection {data['collections']}"
    )
