"""A long-lived waypost process on a PostgreSQL store, driven over a pipe (one JSON object a line each way):

    python tests/pg_worker.py URL WORKDIR

It opens ``Engine(WORKDIR, EngineConfig(store=URL))`` with the real default model (loaded once, here), says
``{"ready": ...}`` and then answers each request on stdin with one line on stdout:
- ``{"op": "add", "docs": [{"id", "text", "title"}]}`` -> ``{"added": n, "generation": g}``
- ``{"op": "delete", "ids": [...]}`` -> ``{"deleted": n, "generation": g}``
- ``{"op": "query", "text", "strategy", "k"}`` -> ``{"ids": [...], "texts": [...], "cache_hit": bool}``
- ``{"op": "state"}`` -> this process's live indexes against the database (generations, rows, where they came from)
A request that fails answers ``{"error": "..."}``; end of input closes the engine."""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

COLLECTION = "c"


def answer(engine: Any, request: dict[str, Any]) -> dict[str, Any]:
    from waypost.types import Document

    coll = engine.collection(COLLECTION, create=True)
    op = request["op"]
    if op == "add":
        docs = [Document(d["id"], d["text"], d.get("title", "")) for d in request["docs"]]
        report = coll.add(docs)
        return {"added": report.added, "generation": engine.store.generation(COLLECTION)}
    if op == "delete":
        deleted = coll.delete(list(request["ids"]))
        return {"deleted": deleted, "generation": engine.store.generation(COLLECTION)}
    if op == "query":
        result = coll.retrieve(request["text"], request.get("strategy", "hybrid"), k=int(request.get("k", 5)))
        route = result.explanation.route or {}
        return {
            "ids": [h.document_id for h in result.hits],
            "texts": [h.chunk.text for h in result.hits],
            "cache_hit": bool(route.get("cache_hit", False)),
        }
    if op == "state":
        live = engine.indexes.live(COLLECTION)
        current = live.get()
        snapshot = engine.store.snapshot(COLLECTION)
        alive = current.row_ids if current.live is None else current.row_ids[current.live]
        return {
            "store_generation": engine.store.generation(COLLECTION),
            "index_generation": current.generation,
            "index_rows": sorted(int(r) for r in alive),
            "store_rows": sorted(int(r) for r in snapshot.row_ids),
            "loaded_from": str(getattr(live, "loaded_from", "")),
        }
    raise ValueError(f"unknown op {op!r}")


def main(url: str, workdir: str) -> None:
    started = time.perf_counter()
    from waypost.embeddings.factory import DEFAULT_MODEL
    from waypost.engine import Engine, EngineConfig

    engine = Engine(workdir, EngineConfig(store=url, chunk_tokens=64))
    embedder = engine.embedder(DEFAULT_MODEL)
    embedder.embed_query("warm up")  # the model loads here, not inside the first timed request
    print(
        json.dumps({"ready": True, "pid": os.getpid(), "load_s": round(time.perf_counter() - started, 2)}), flush=True
    )
    try:
        for line in sys.stdin:
            try:
                reply = answer(engine, json.loads(line))
            except Exception as exc:
                reply = {"error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc(limit=5)}
            print(json.dumps(reply), flush=True)
    finally:
        engine.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
