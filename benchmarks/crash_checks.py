"""The corpus, the acknowledged state and the consistency checks of ``bench_crash.py``'s kill -9 trials."""

from __future__ import annotations

import hashlib
import json
import logging
import random
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from waypost.base import Embedder
from waypost.engine import Collection, Engine
from waypost.index.set import IndexSet
from waypost.ingest.chunker import Chunker
from waypost.types import Document

COLLECTION = "c"
CHUNK_TOKENS = 64


# -- the corpus --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Source:
    id: str
    title: str
    text: str
    origin: str


def load_pool(data: Path, sets: list[str], per_set: int = 30) -> list[Source]:
    """The first ``per_set`` documents of 250 to 1,600 characters of each BEIR set, read in place."""
    pool: list[Source] = []
    for name in sets:
        taken = 0
        with (data / name / "corpus.jsonl").open(encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                if 250 <= len(row["text"]) <= 1600:
                    pool.append(Source(f"{name}:{row['_id']}", row.get("title") or "", row["text"], name))
                    taken += 1
                    if taken == per_set:
                        break
    return pool


def marker(doc_id: str, version: int) -> str:
    """A word only this version of this document contains (letters only: analyzers keep it whole)."""
    digest = hashlib.sha1(f"{doc_id}/{version}".encode()).hexdigest()[:10]
    return "zq" + "".join(chr(ord("a") + int(c, 16)) for c in digest)


def document(source: Source, version: int) -> Document:
    text = f"{source.text} Crash trial marker {marker(source.id, version)}."
    return Document(source.id, text, source.title, {"origin": source.origin, "version": version})


# -- what the store must hold ------------------------------------------------------------------------------------
@dataclass
class Model:
    """The acknowledged state: live documents with their versions, and every version that is gone."""

    versions: dict[str, int] = field(default_factory=dict)
    last_version: dict[str, int] = field(default_factory=dict)  # never reuse a version number
    gone: dict[str, set[int]] = field(default_factory=dict)  # doc id -> replaced or deleted versions
    built: set[str] = field(default_factory=set)  # "tree", "graph": built on this store

    def apply(self, op: dict[str, Any]) -> None:
        if op["kind"] in ("tree", "graph"):
            self.built.add(op["kind"])
        if op["kind"] == "ingest":
            for doc_id, version in op["docs"]:
                if doc_id in self.versions and self.versions[doc_id] != version:
                    self.gone.setdefault(doc_id, set()).add(self.versions[doc_id])
                self.versions[doc_id] = version
                self.last_version[doc_id] = max(version, self.last_version.get(doc_id, -1))
        elif op["kind"] == "delete":
            for doc_id in op["ids"]:
                if doc_id in self.versions:
                    self.gone.setdefault(doc_id, set()).add(self.versions.pop(doc_id))

    def copy(self) -> Model:
        gone = {k: set(v) for k, v in self.gone.items()}
        return Model(dict(self.versions), dict(self.last_version), gone, set(self.built))


# -- the checks ----------------------------------------------------------------------------------------------
class Failure(Exception):
    """An inconsistency found by a check."""


class Lost(Exception):
    """A committed write the store no longer holds."""


@contextmanager
def captured_warnings() -> Iterator[list[str]]:
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(f"{record.name}: {record.getMessage()}")

    handler = Keep(logging.WARNING)
    logger = logging.getLogger("waypost")
    logger.addHandler(handler)
    try:
        yield records
    finally:
        logger.removeHandler(handler)


def check_sqlite(store: Path) -> None:
    path = store / "store.sqlite"
    if not path.exists():
        return
    conn = sqlite3.connect(path)
    try:
        result = conn.execute("PRAGMA integrity_check").fetchone()[0]
        if result != "ok":
            raise Failure(f"SQLite integrity check: {result}")
    finally:
        conn.close()


def allowed_versions(model: Model, inflight: dict[str, Any] | None) -> dict[str, set[int | None]]:
    """Per document: the versions it may be at (``None``: absent). An interrupted operation may or may not
    have taken effect, document by document."""
    allowed: dict[str, set[int | None]] = {d: {v} for d, v in model.versions.items()}
    if inflight is not None and inflight["kind"] == "ingest":
        for doc_id, version in inflight["docs"]:
            allowed.setdefault(doc_id, {None}).add(version)
    if inflight is not None and inflight["kind"] == "delete":
        for doc_id in inflight["ids"]:
            allowed.setdefault(doc_id, {None}).add(None)
    return allowed


def check_documents(
    engine: Engine, coll: Collection | None, model: Model, inflight: dict[str, Any] | None, pool: dict[str, Source],
    embedder: Embedder, rng: random.Random,
) -> dict[str, int]:  # fmt: skip
    """Every document whole and where the journal allows it; returns the version each one is at."""
    allowed = allowed_versions(model, inflight)
    stored = {d.id: d for d in coll.documents()} if coll is not None else {}
    lost = [d for d, versions in allowed.items() if None not in versions and d not in stored]
    if lost:
        raise Lost(f"committed documents missing: {sorted(lost)}")
    at: dict[str, int] = {}
    for doc_id, doc in stored.items():
        versions = allowed.get(doc_id, {None})
        if versions == {None}:
            gone = model.gone.get(doc_id, set())
            if gone and int(doc.metadata.get("version", -1)) in gone:
                raise Lost(f"document {doc_id} was deleted (committed) and is back")
            raise Failure(f"document {doc_id} is stored but was never written")
        version = int(doc.metadata.get("version", -1))
        if version > max(v for v in versions if v is not None):
            raise Failure(f"document {doc_id} is at version {version}, which was never written")
        if version not in versions:
            raise Lost(f"document {doc_id} is at version {version}; the journal allows {sorted(map(str, versions))}")
        want = document(pool[doc_id], version)
        if (doc.text, doc.title) != (want.text, want.title):
            raise Failure(f"document {doc_id} v{version}: text or title differs from what was written")
        at[doc_id] = version
    if coll is None:
        return at
    snapshot = engine.store.snapshot(COLLECTION)
    rows: dict[str, list[int]] = {}
    for position, doc_id in enumerate(snapshot.document_ids):
        rows.setdefault(doc_id, []).append(position)
    if set(rows) != set(stored):
        raise Failure(f"documents without chunks or chunks without documents: {sorted(set(rows) ^ set(stored))}")
    chunker = Chunker(CHUNK_TOKENS)
    stored_chunks = engine.store.chunks_by_row(COLLECTION, snapshot.row_ids.tolist())
    by_doc: dict[str, list[tuple[int, str, int, int]]] = {}
    for s in stored_chunks:
        by_doc.setdefault(s.chunk.document_id, []).append((s.chunk.index, s.chunk.text, s.chunk.start, s.chunk.end))
    touched = set() if inflight is None else {d for d, _v in inflight.get("docs", [])} | set(inflight.get("ids", []))
    for doc_id, doc in stored.items():
        want = [(c.index, c.text, c.start, c.end) for c in chunker.chunk(doc_id, doc.text)]
        got = sorted(by_doc.get(doc_id, []))
        if got != want:
            raise Failure(f"document {doc_id}: chunks {[(g[0], g[2], g[3]) for g in got]} instead of "
                          f"{[(w[0], w[2], w[3]) for w in want]}")  # fmt: skip
        if any(doc.text[start:end] != text for _i, text, start, end in got):
            raise Failure(f"document {doc_id}: a chunk's span does not match its text")
        positions = rows[doc_id]
        norms = np.linalg.norm(snapshot.embeddings[positions], axis=1)
        if not np.all(np.abs(norms - 1.0) < 1e-3):
            raise Failure(f"document {doc_id}: chunk vectors are not unit vectors: {norms}")
        if doc_id in touched:  # the vector of one chunk of each interrupted document, embedded again
            position = rng.choice(positions)
            fresh = embedder.embed_documents([snapshot.index_texts[position]])[0]
            if float(np.max(np.abs(fresh - snapshot.embeddings[position]))) > 1e-4:
                raise Failure(f"document {doc_id}: a stored vector is not its chunk's embedding")
    return at


def live_scores(indexes: IndexSet, scores: np.ndarray) -> dict[int, float]:
    live = np.ones(len(indexes), np.bool_) if indexes.live is None else indexes.live
    return {int(r): float(s) for r, s, ok in zip(indexes.row_ids, scores, live, strict=True) if ok}


def check_indexes(engine: Engine, embedder: Embedder, queries: list[str]) -> str:
    """The live indexes (saved state + catch-up) equal a rebuild from the store; returns where they came from."""
    live = engine.indexes.live(COLLECTION)
    current = live.get()
    loaded_from = str(getattr(live, "loaded_from", ""))
    rebuilt = IndexSet.build(COLLECTION, engine.store.snapshot(COLLECTION))
    rows = set(live_scores(current, np.zeros(len(current))))
    if rows != set(rebuilt.row_ids.tolist()):
        raise Failure(f"index rows differ from the store's: extra {sorted(rows - set(rebuilt.row_ids.tolist()))[:10]}, "
                      f"missing {sorted(set(rebuilt.row_ids.tolist()) - rows)[:10]}")  # fmt: skip
    for query in queries:
        a, b = live_scores(current, current.bm25.scores(query)), live_scores(rebuilt, rebuilt.bm25.scores(query))
        worst = max((abs(a[r] - b[r]) for r in b), default=0.0)
        if worst > 1e-6:
            raise Failure(f"BM25 scores for {query!r} drift by {worst} from a rebuild")
        vector = embedder.embed_query(query)
        a, b = live_scores(current, current.dense.scores(vector)), live_scores(rebuilt, rebuilt.dense.scores(vector))
        worst = max((abs(a[r] - b[r]) for r in b), default=0.0)
        if worst > 1e-6:
            raise Failure(f"dense scores for {query!r} drift by {worst} from a rebuild")
    if current.metadata.fields != rebuilt.metadata.fields:
        raise Failure(f"metadata fields {current.metadata.fields} instead of {rebuilt.metadata.fields}")
    for name in rebuilt.metadata.fields:
        if current.metadata.values(name) != rebuilt.metadata.values(name):
            raise Failure(f"metadata values of {name!r} differ from a rebuild")
    return loaded_from


def check_tree(engine: Engine, coll: Collection, gone_markers: set[str]) -> bool:
    """The stored tree, caught up, covers exactly the live chunks; returns whether there is one."""
    tree = coll.tree().get(build=False)
    if tree is None:
        return False
    snapshot = engine.store.snapshot(COLLECTION)
    live = set(snapshot.row_ids.tolist())
    docs: dict[str, list[int]] = {}
    for row, doc in zip(snapshot.row_ids.tolist(), snapshot.document_ids, strict=True):
        docs.setdefault(doc, []).append(int(row))
    problems = tree.check()
    if tree.generation != engine.store.generation(COLLECTION):
        problems.append(f"the tree is at generation {tree.generation}, the store at {engine.store.generation('c')}")
    covered = {r for i in tree.roots() for r in tree.nodes[i].leaves}
    if covered != live:
        problems.append(f"tree covers {len(covered)} rows, {len(live)} live: missing {sorted(live - covered)[:8]}, "
                        f"dead {sorted(covered - live)[:8]}")  # fmt: skip
    for node in tree.nodes.values():
        if set(node.leaves) - live:
            problems.append(f"node {node.id} covers dead rows")
        if node.kind == "document" and node.leaves != docs.get(node.document_id):
            problems.append(f"document node of {node.document_id} covers {node.leaves}")
        quoted = [m for m in gone_markers if m in node.text]
        if quoted:
            problems.append(f"node {node.id}'s summary quotes deleted text {quoted}")
    if sorted(n.document_id for n in tree.nodes.values() if n.kind == "document") != sorted(docs):
        problems.append("not one document node per document")
    if problems:
        raise Failure("tree: " + "; ".join(problems[:5]))
    return True


def check_graph(engine: Engine, coll: Collection, gone_markers: set[str]) -> bool:
    """The stored graph, caught up, cites only live chunks; returns whether there is one."""
    graph = coll.graph().get(build=False)
    if graph is None:
        return False
    live = set(engine.store.snapshot(COLLECTION).row_ids.tolist())
    problems = []
    if graph.generation != engine.store.generation(COLLECTION):
        problems.append(f"the graph is at generation {graph.generation}, the store at {engine.store.generation('c')}")
    cited = {r for r, ids in graph.row_entities.items() if ids}
    if cited - live:
        problems.append(f"mentions of dead rows {sorted(cited - live)[:8]}")
    for e in graph.entities.values():
        if not e.rows or set(e.rows) - live:
            problems.append(f"entity {e.name!r} cites dead rows or none")
        quoted = [m for m in gone_markers if m in e.name.lower() or m in e.description.lower()]
        if quoted:
            problems.append(f"entity {e.name!r} quotes deleted text {quoted}")
    for r in graph.relations.values():
        if r.row not in live or r.source not in graph.entities or r.target not in graph.entities:
            problems.append(f"relation {r.id} cites a dead row or entity")
    for c in graph.communities.values():
        if not c.rows or set(c.rows) - live or any(m not in graph.entities for m in c.members):
            problems.append(f"community {c.id} cites dead rows or entities")
        quoted = [m for m in gone_markers if m in c.report.lower() or m in c.title.lower()]
        if quoted:
            problems.append(f"community {c.id}'s report quotes deleted text {quoted}")
    if problems:
        raise Failure("graph: " + "; ".join(problems[:5]))
    return True


def check_not_served(coll: Collection, gone: dict[str, set[int]], at: dict[str, int], tree: bool, graph: bool) -> None:
    """A deleted or replaced version's marker word finds none of its text, in any strategy."""
    strategies = ["bm25", "hybrid", *(["raptor-collapsed"] if tree else []), *(["hipporag"] if graph else [])]
    for doc_id, versions in gone.items():
        for version in versions:
            if at.get(doc_id) == version:
                continue
            word = marker(doc_id, version)
            for strategy in strategies:
                for hit in coll.retrieve(f"crash trial marker {word}", strategy, k=10).hits:
                    text = hit.chunk.text + (hit.node.summary if hit.node is not None else "")
                    if word in text:
                        raise Failure(f"{strategy} serves deleted text of {doc_id} v{version} ({word})")
                    if doc_id not in at and hit.document_id == doc_id:
                        raise Failure(f"{strategy} serves deleted document {doc_id}")
