"""The knowledge graph persisted in the collection store's SQLite file: entities, mentions (per chunk
row, with the sentence that named the entity), relations, synonym edges and communities, each with the
chunk rows it came from. A build replaces the collection's graph in one transaction; an update writes
what it touched and moves the graph's generation in one transaction, so a kill leaves either state."""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from waypost.graph.graph import Community, Entity, GraphConfig, KnowledgeGraph, Relation, Touched
from waypost.store.protocols import GraphRecord
from waypost.store.tables import SideTables

SCHEMA = """
CREATE TABLE IF NOT EXISTS graphs (
    collection TEXT PRIMARY KEY,
    build TEXT NOT NULL,
    generation INTEGER NOT NULL,
    version TEXT NOT NULL,
    extractor TEXT NOT NULL,
    reporter TEXT NOT NULL,
    config TEXT NOT NULL,
    counters TEXT NOT NULL,
    stats TEXT NOT NULL,
    built_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS graph_entities (
    collection TEXT NOT NULL,
    id INTEGER NOT NULL,
    key TEXT NOT NULL,
    name TEXT NOT NULL,
    label TEXT NOT NULL,
    description TEXT NOT NULL,
    vector BLOB,
    PRIMARY KEY (collection, id)
);
CREATE TABLE IF NOT EXISTS graph_mentions (
    collection TEXT NOT NULL,
    chunk_row INTEGER NOT NULL,
    entity INTEGER NOT NULL,
    count INTEGER NOT NULL,
    sentence TEXT NOT NULL,
    title INTEGER NOT NULL,
    PRIMARY KEY (collection, chunk_row, entity)
);
CREATE TABLE IF NOT EXISTS graph_relations (
    collection TEXT NOT NULL,
    id INTEGER NOT NULL,
    source INTEGER NOT NULL,
    target INTEGER NOT NULL,
    label TEXT NOT NULL,
    chunk_row INTEGER NOT NULL,
    weight REAL NOT NULL,
    PRIMARY KEY (collection, id)
);
CREATE INDEX IF NOT EXISTS graph_relations_by_row ON graph_relations(collection, chunk_row);
CREATE TABLE IF NOT EXISTS graph_synonyms (
    collection TEXT NOT NULL,
    a INTEGER NOT NULL,
    b INTEGER NOT NULL,
    similarity REAL NOT NULL,
    PRIMARY KEY (collection, a, b)
);
CREATE TABLE IF NOT EXISTS graph_communities (
    collection TEXT NOT NULL,
    id INTEGER NOT NULL,
    level INTEGER NOT NULL,
    parent INTEGER NOT NULL,
    members BLOB NOT NULL,
    title TEXT NOT NULL,
    report TEXT NOT NULL,
    chunk_rows BLOB NOT NULL,
    vector BLOB,
    PRIMARY KEY (collection, id)
);
"""

_TABLES = ("graph_entities", "graph_mentions", "graph_relations", "graph_synonyms", "graph_communities")


def _ints(values: list[int]) -> bytes:
    return np.asarray(values, dtype=np.int64).tobytes()


def _half(vector: np.ndarray | None) -> bytes | None:
    return None if vector is None else np.asarray(vector, dtype=np.float16).tobytes()


def _vector(blob: bytes | None) -> np.ndarray | None:
    return None if blob is None else np.frombuffer(blob, dtype=np.float16).astype(np.float32)


class SQLiteGraphRepository(SideTables):
    """A ``GraphRepository`` in the SQLite file at ``path`` (the collection store's file)."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(path)
        conn = self._connect()
        try:
            if self._outdated(conn):  # derived data in an earlier layout: dropped, rebuilt on next use
                for table in ("graphs", *_TABLES):
                    conn.execute(f"DROP TABLE IF EXISTS {table}")
            conn.executescript(SCHEMA)
        finally:
            conn.close()

    @staticmethod
    def _outdated(conn: sqlite3.Connection) -> bool:
        wanted = {"graphs": "build", "graph_mentions": "title"}
        for table, column in wanted.items():
            columns = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
            if columns and column not in columns:
                return True
        return False

    def record(self, collection: str) -> GraphRecord | None:
        conn = self._connect()
        try:
            return self._record(conn, collection)
        finally:
            conn.close()

    @staticmethod
    def _record(conn: sqlite3.Connection, collection: str) -> GraphRecord | None:
        row = conn.execute(
            "SELECT collection, generation, version, extractor, reporter, config, stats, built_at, updated_at"
            " FROM graphs WHERE collection=?",
            (collection,),
        ).fetchone()
        if row is None:
            return None
        return GraphRecord(
            row[0], int(row[1]), row[2], row[3], row[4], GraphConfig.from_dict(json.loads(row[5])),
            json.loads(row[6]), float(row[7]), float(row[8]),
        )  # fmt: skip

    def load(self, collection: str) -> tuple[KnowledgeGraph, GraphRecord] | None:
        """The collection's graph, read in one transaction; ``None`` when it has none."""
        with self._transaction(write=False) as conn:
            record = self._record(conn, collection)
            if record is None:
                return None
            head = conn.execute("SELECT counters, build FROM graphs WHERE collection=?", (collection,)).fetchone()
            counters = json.loads(head[0])
            graph = KnowledgeGraph(record.config)
            graph.build_id = str(head[1])
            for i, key, name, label, description, vector in conn.execute(
                "SELECT id, key, name, label, description, vector FROM graph_entities WHERE collection=?",
                (collection,),
            ):
                graph.entities[int(i)] = Entity(int(i), key, name, label, _vector(vector), description)
                graph.by_key[key] = int(i)
            for row, entity, count, sentence, title in conn.execute(
                "SELECT chunk_row, entity, count, sentence, title FROM graph_mentions WHERE collection=?"
                " ORDER BY rowid",
                (collection,),
            ):
                e = graph.entities[int(entity)]
                if title:
                    graph.row_title[int(row)] = int(entity)
                e.rows[int(row)] = int(count)
                if sentence:
                    e.sentences[int(row)] = sentence
                graph.row_entities.setdefault(int(row), []).append(int(entity))
            for i, source, target, label, row, weight in conn.execute(
                "SELECT id, source, target, label, chunk_row, weight FROM graph_relations WHERE collection=?"
                " ORDER BY id",
                (collection,),
            ):
                graph.relations[int(i)] = Relation(int(i), int(source), int(target), label, int(row), float(weight))
                graph.row_relations.setdefault(int(row), []).append(int(i))
            for a, b, sim in conn.execute(
                "SELECT a, b, similarity FROM graph_synonyms WHERE collection=?", (collection,)
            ):
                graph.synonyms.setdefault(int(a), {})[int(b)] = float(sim)
                graph.synonyms.setdefault(int(b), {})[int(a)] = float(sim)
            for i, level, parent, members, title, report, rows, vector in conn.execute(
                "SELECT id, level, parent, members, title, report, chunk_rows, vector FROM graph_communities"
                " WHERE collection=? ORDER BY level, id",
                (collection,),
            ):
                c = Community(
                    int(i), int(level), int(parent), np.frombuffer(members, dtype=np.int64).tolist(), title,
                    report, np.frombuffer(rows, dtype=np.int64).tolist(), _vector(vector),
                )  # fmt: skip
                graph.communities[c.id] = c
                for m in c.members:
                    graph.member_of.setdefault(m, []).append(c.id)
        for row in graph.row_relations:
            graph.row_relations.setdefault(row, [])
        for row in list(graph.row_entities):
            graph.row_relations.setdefault(row, [])
        graph.reindex_words()
        graph.generation = record.generation
        graph.next_entity = int(counters["next_entity"])
        graph.next_relation = int(counters["next_relation"])
        graph.next_community = int(counters["next_community"])
        graph.entities_at_leiden = int(counters["entities_at_leiden"])
        graph.changed_since_leiden = int(counters["changed_since_leiden"])
        return graph, record

    @staticmethod
    def _counters(graph: KnowledgeGraph) -> str:
        return json.dumps(
            {
                "next_entity": graph.next_entity,
                "next_relation": graph.next_relation,
                "next_community": graph.next_community,
                "entities_at_leiden": graph.entities_at_leiden,
                "changed_since_leiden": graph.changed_since_leiden,
            }
        )

    @staticmethod
    def _entity_row(collection: str, e: Entity) -> tuple[Any, ...]:
        return (collection, e.id, e.key, e.name, e.label, e.description, _half(e.vector))

    @staticmethod
    def _community_row(collection: str, c: Community) -> tuple[Any, ...]:
        return (
            collection, c.id, c.level, c.parent, _ints(c.members), c.title, c.report, _ints(c.rows), _half(c.vector),
        )  # fmt: skip

    def _write_rows(self, conn: sqlite3.Connection, collection: str, graph: KnowledgeGraph, rows: set[int]) -> None:
        mentions: list[tuple[Any, ...]] = []
        relations: list[tuple[Any, ...]] = []
        for row in sorted(rows):
            for eid in graph.row_entities.get(row, []):
                e = graph.entities[eid]
                is_title = int(graph.row_title.get(row) == eid)
                mentions.append((collection, row, eid, e.rows.get(row, 1), e.sentences.get(row, ""), is_title))
            for rid in graph.row_relations.get(row, []):
                r = graph.relations[rid]
                relations.append((collection, r.id, r.source, r.target, r.label, r.row, r.weight))
        conn.executemany("INSERT OR REPLACE INTO graph_mentions VALUES (?,?,?,?,?,?)", mentions)
        conn.executemany("INSERT OR REPLACE INTO graph_relations VALUES (?,?,?,?,?,?,?)", relations)

    def save_new(
        self, collection: str, graph: KnowledgeGraph, version: str, extractor: str, reporter: str, stats: dict[str, Any]
    ) -> None:
        """Replace the collection's graph with ``graph``, whole, in one transaction (a new build id: an update
        made from an earlier build is refused from then on)."""
        now = time.time()
        graph.build_id = uuid.uuid4().hex[:16]
        with self._transaction(write=True) as conn:
            for table in _TABLES:
                conn.execute(f"DELETE FROM {table} WHERE collection=?", (collection,))
            conn.execute("DELETE FROM graphs WHERE collection=?", (collection,))
            conn.executemany(
                "INSERT INTO graph_entities VALUES (?,?,?,?,?,?,?)",
                [self._entity_row(collection, e) for e in graph.entities.values()],
            )
            self._write_rows(conn, collection, graph, set(graph.row_entities))
            conn.executemany(
                "INSERT INTO graph_synonyms VALUES (?,?,?,?)",
                [(collection, a, b, s) for a, others in graph.synonyms.items() for b, s in others.items() if a < b],
            )
            conn.executemany(
                "INSERT INTO graph_communities VALUES (?,?,?,?,?,?,?,?,?)",
                [self._community_row(collection, c) for c in graph.communities.values()],
            )
            conn.execute(
                "INSERT INTO graphs VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (
                    collection, graph.build_id, graph.generation, version, extractor, reporter,
                    json.dumps(graph.config.to_dict()), self._counters(graph), json.dumps(stats), now, now,
                ),
            )  # fmt: skip

    def save_changes(
        self,
        collection: str,
        graph: KnowledgeGraph,
        base_generation: int,
        touched: Touched,
        communities: set[int],
        dropped_communities: set[int],
        rewrote_communities: bool,
    ) -> bool:
        """Write what one update touched. ``False`` (nothing written) when the stored graph is no longer at
        ``base_generation``: another process moved it; reload instead."""
        with self._transaction(write=True) as conn:
            row = conn.execute("SELECT generation, build FROM graphs WHERE collection=?", (collection,)).fetchone()
            if row is None or int(row[0]) != base_generation or str(row[1]) != graph.build_id:
                return False  # another process updated or rebuilt it: its ids are not ours
            gone_rows = [(collection, r) for r in sorted(touched.removed_rows | touched.added_rows)]
            conn.executemany("DELETE FROM graph_mentions WHERE collection=? AND chunk_row=?", gone_rows)
            conn.executemany("DELETE FROM graph_relations WHERE collection=? AND chunk_row=?", gone_rows)
            dropped = [(collection, e) for e in sorted(touched.dropped_entities)]
            conn.executemany("DELETE FROM graph_entities WHERE collection=? AND id=?", dropped)
            conn.executemany("DELETE FROM graph_synonyms WHERE collection=?1 AND (a=?2 OR b=?2)", dropped)
            conn.executemany(
                "INSERT OR REPLACE INTO graph_entities VALUES (?,?,?,?,?,?,?)",
                [self._entity_row(collection, graph.entities[e]) for e in sorted(touched.entities)],
            )
            # the mentions of a touched entity's other rows keep their counts: only its rows here changed
            self._write_rows(conn, collection, graph, touched.added_rows)
            conn.executemany(
                "INSERT OR REPLACE INTO graph_synonyms VALUES (?,?,?,?)",
                [(collection, a, b, s) for a, b, s in touched.synonyms_added],
            )
            if rewrote_communities:
                conn.execute("DELETE FROM graph_communities WHERE collection=?", (collection,))
                communities = set(graph.communities)
            conn.executemany(
                "DELETE FROM graph_communities WHERE collection=? AND id=?",
                [(collection, c) for c in sorted(dropped_communities)],
            )
            conn.executemany(
                "INSERT OR REPLACE INTO graph_communities VALUES (?,?,?,?,?,?,?,?,?)",
                [self._community_row(collection, graph.communities[c]) for c in sorted(communities)],
            )
            conn.execute(
                "UPDATE graphs SET generation=?, counters=?, updated_at=? WHERE collection=?",
                (graph.generation, self._counters(graph), time.time(), collection),
            )
        return True

    def set_stats(self, collection: str, stats: dict[str, Any]) -> None:
        with self._transaction(write=True) as conn:
            conn.execute("UPDATE graphs SET stats=? WHERE collection=?", (json.dumps(stats), collection))

    def drop(self, collection: str) -> None:
        with self._transaction(write=True) as conn:
            for table in _TABLES:
                conn.execute(f"DELETE FROM {table} WHERE collection=?", (collection,))
            conn.execute("DELETE FROM graphs WHERE collection=?", (collection,))

    def counts(self, collection: str) -> dict[str, int]:
        conn = self._connect()
        try:
            return {
                table.removeprefix("graph_"): int(
                    conn.execute(f"SELECT COUNT(*) FROM {table} WHERE collection=?", (collection,)).fetchone()[0]
                )
                for table in _TABLES
            }
        finally:
            conn.close()

    def size_bytes(self, collection: str) -> int:
        """Bytes of graph data (names, sentences, labels, vectors and id lists) the collection holds."""
        conn = self._connect()
        try:
            total = 0
            for sql in (
                "SELECT COALESCE(SUM(LENGTH(CAST(name AS BLOB))+LENGTH(CAST(key AS BLOB))"
                "+LENGTH(CAST(description AS BLOB))+COALESCE(LENGTH(vector),0)+32),0) FROM graph_entities"
                " WHERE collection=?",
                "SELECT COALESCE(SUM(LENGTH(CAST(sentence AS BLOB))+24),0) FROM graph_mentions WHERE collection=?",
                "SELECT COALESCE(SUM(LENGTH(CAST(label AS BLOB))+40),0) FROM graph_relations WHERE collection=?",
                "SELECT COUNT(*)*24 FROM graph_synonyms WHERE collection=?",
                "SELECT COALESCE(SUM(LENGTH(members)+LENGTH(CAST(report AS BLOB))+LENGTH(chunk_rows)"
                "+COALESCE(LENGTH(vector),0)+32),0) FROM graph_communities WHERE collection=?",
            ):
                total += int(conn.execute(sql, (collection,)).fetchone()[0])
            return total
        finally:
            conn.close()
