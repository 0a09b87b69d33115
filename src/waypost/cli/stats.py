"""``waypost stats``: counts, model, metadata fields and index state of a collection."""

from __future__ import annotations

import json
from typing import Any

from rich.table import Table

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
