"""The knowledge graph persisted in PostgreSQL beside the documents (as ``sqlite_graphs``): entities,
mentions (per chunk row, with the sentence that named the entity), relations, synonym edges and
communities, each with the chunk rows it came from.

A build replaces the collection's graph in one transaction under the collection's graph lock (an advisory
lock: two builds never interleave their rows); an update locks the graph row ``FOR UPDATE``, checks build
and generation, writes what it touched and moves the generation in the same transaction."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable
from typing import Any

import numpy as np
import psycopg
from psycopg.types.json import Jsonb

from waypost.graph.graph import Community, Entity, GraphConfig, KnowledgeGraph, Relation, Touched
from waypost.store.pg_base import PgDatabase
from waypost.store.postgres_trees import GRAPH_LOCK, half, ints, lock_collection, repeatable_read, unhalf
from waypost.store.protocols import GraphRecord

MIGRATIONS = [
    """
    CREATE TABLE graphs (
        collection TEXT PRIMARY KEY,
        build TEXT NOT NULL,
        generation BIGINT NOT NULL,
        version TEXT NOT NULL,
        extractor TEXT NOT NULL,
        reporter TEXT NOT NULL,
        config JSONB NOT NULL,
        counters JSONB NOT NULL,
        stats JSONB NOT NULL,
        built_at DOUBLE PRECISION NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL
    );
    CREATE TABLE graph_entities (
        collection TEXT NOT NULL,
        id BIGINT NOT NULL,
        key TEXT NOT NULL,
        name TEXT NOT NULL,
        label TEXT NOT NULL,
        description TEXT NOT NULL,
        vector BYTEA,
        PRIMARY KEY (collection, id)
    );
    CREATE TABLE graph_mentions (
        collection TEXT NOT NULL,
        chunk_row BIGINT NOT NULL,
        entity BIGINT NOT NULL,
        count INTEGER NOT NULL,
        sentence TEXT NOT NULL,
        title INTEGER NOT NULL,
        seq BIGSERIAL NOT NULL,
        PRIMARY KEY (collection, chunk_row, entity)
    );
    CREATE TABLE graph_relations (
        collection TEXT NOT NULL,
        id BIGINT NOT NULL,
        source BIGINT NOT NULL,
        target BIGINT NOT NULL,
        label TEXT NOT NULL,
        chunk_row BIGINT NOT NULL,
        weight DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (collection, id)
    );
    CREATE INDEX graph_relations_by_row ON graph_relations(collection, chunk_row);
    CREATE TABLE graph_synonyms (
        collection TEXT NOT NULL,
        a BIGINT NOT NULL,
        b BIGINT NOT NULL,
        similarity DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (collection, a, b)
    );
    CREATE TABLE graph_communities (
        collection TEXT NOT NULL,
        id BIGINT NOT NULL,
        level INTEGER NOT NULL,
        parent BIGINT NOT NULL,
        members BYTEA NOT NULL,
        title TEXT NOT NULL,
        report TEXT NOT NULL,
        chunk_rows BYTEA NOT NULL,
        vector BYTEA,
        PRIMARY KEY (collection, id)
    );
    """
]

_TABLES = ("graph_entities", "graph_mentions", "graph_relations", "graph_synonyms", "graph_communities")
_RECORD_COLUMNS = "collection, generation, version, extractor, reporter, config, stats, built_at, updated_at"
_ENTITY = "collection, id, key, name, label, description, vector"
_MENTION = "collection, chunk_row, entity, count, sentence, title"
_RELATION = "collection, id, source, target, label, chunk_row, weight"
_SYNONYM = "collection, a, b, similarity"
_COMMUNITY = "collection, id, level, parent, members, title, report, chunk_rows, vector"
# upserts: the row named by the key is replaced (a replaced mention moves to the end, as SQLite's REPLACE)
_UPSERT_ENTITY = (
    f"INSERT INTO graph_entities ({_ENTITY}) VALUES (%s,%s,%s,%s,%s,%s,%s) ON CONFLICT (collection, id) DO UPDATE"
    " SET key=EXCLUDED.key, name=EXCLUDED.name, label=EXCLUDED.label, description=EXCLUDED.description,"
    " vector=EXCLUDED.vector"
)
_UPSERT_MENTION = (
    f"INSERT INTO graph_mentions ({_MENTION}) VALUES (%s,%s,%s,%s,%s,%s) ON CONFLICT (collection, chunk_row, entity)"
    " DO UPDATE SET count=EXCLUDED.count, sentence=EXCLUDED.sentence, title=EXCLUDED.title, seq=EXCLUDED.seq"
)
_UPSERT_RELATION = (
    f"INSERT INTO graph_relations ({_RELATION}) VALUES (%s,%s,%s,%s,%s,%s,%s) ON CONFLICT (collection, id) DO UPDATE"
    " SET source=EXCLUDED.source, target=EXCLUDED.target, label=EXCLUDED.label, chunk_row=EXCLUDED.chunk_row,"
    " weight=EXCLUDED.weight"
)
_UPSERT_SYNONYM = (
    f"INSERT INTO graph_synonyms ({_SYNONYM}) VALUES (%s,%s,%s,%s) ON CONFLICT (collection, a, b) DO UPDATE"
    " SET similarity=EXCLUDED.similarity"
)
_UPSERT_COMMUNITY = (
    f"INSERT INTO graph_communities ({_COMMUNITY}) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s) ON CONFLICT (collection, id)"
    " DO UPDATE SET level=EXCLUDED.level, parent=EXCLUDED.parent, members=EXCLUDED.members, title=EXCLUDED.title,"
    " report=EXCLUDED.report, chunk_rows=EXCLUDED.chunk_rows, vector=EXCLUDED.vector"
)


def _record(conn: psycopg.Connection[Any], collection: str) -> GraphRecord | None:
    row = conn.execute(f"SELECT {_RECORD_COLUMNS} FROM graphs WHERE collection=%s", (collection,)).fetchone()
    if row is None:
        return None
    return GraphRecord(
        row[0], int(row[1]), row[2], row[3], row[4], GraphConfig.from_dict(row[5]), row[6], float(row[7]),
        float(row[8]),
    )  # fmt: skip


def _counters(graph: KnowledgeGraph) -> Jsonb:
    return Jsonb(
        {
            "next_entity": graph.next_entity,
            "next_relation": graph.next_relation,
            "next_community": graph.next_community,
            "entities_at_leiden": graph.entities_at_leiden,
            "changed_since_leiden": graph.changed_since_leiden,
        }
    )


def _entity_row(collection: str, e: Entity) -> tuple[Any, ...]:
    return (collection, e.id, e.key, e.name, e.label, e.description, half(e.vector))


def _community_row(collection: str, c: Community) -> tuple[Any, ...]:
    return (collection, c.id, c.level, c.parent, ints(c.members), c.title, c.report, ints(c.rows), half(c.vector))


def _row_data(collection: str, graph: KnowledgeGraph, rows: set[int]) -> tuple[list[Any], list[Any]]:
    """The mention and relation rows of the chunk ``rows``, one per key (the last one written wins)."""
    mentions: dict[tuple[int, int], tuple[Any, ...]] = {}
    relations: dict[int, tuple[Any, ...]] = {}
    for row in sorted(rows):
        for eid in graph.row_entities.get(row, []):
            e = graph.entities[eid]
            is_title = int(graph.row_title.get(row) == eid)
            mentions.pop((row, eid), None)
            mentions[(row, eid)] = (collection, row, eid, e.rows.get(row, 1), e.sentences.get(row, ""), is_title)
        for rid in graph.row_relations.get(row, []):
            r = graph.relations[rid]
            relations.pop(rid, None)
            relations[rid] = (collection, r.id, r.source, r.target, r.label, r.row, r.weight)
    return list(mentions.values()), list(relations.values())


def _copy(conn: psycopg.Connection[Any], table: str, columns: str, rows: Iterable[tuple[Any, ...]]) -> None:
    with conn.cursor() as cur, cur.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


class PostgresGraphRepository:
    """A ``GraphRepository`` in one schema of a PostgreSQL database (the documents' schema)."""

    def __init__(self, db: PgDatabase) -> None:
        self.db = db
        db.migrate("graphs", MIGRATIONS)

    def record(self, collection: str) -> GraphRecord | None:
        return self.db.run(lambda conn: _record(conn, collection))

    def load(self, collection: str) -> tuple[KnowledgeGraph, GraphRecord] | None:
        """The collection's graph, read in one snapshot; ``None`` when it has none."""

        def read(conn: psycopg.Connection[Any]) -> tuple[GraphRecord, dict[str, Any]] | None:
            repeatable_read(conn)
            record = _record(conn, collection)
            if record is None:
                return None
            head = conn.execute("SELECT counters, build FROM graphs WHERE collection=%s", (collection,)).fetchone()
            assert head is not None  # the same snapshot as the record
            queries = {
                "entities": "SELECT id, key, name, label, description, vector FROM graph_entities"
                " WHERE collection=%s ORDER BY id",
                "mentions": "SELECT chunk_row, entity, count, sentence, title FROM graph_mentions"
                " WHERE collection=%s ORDER BY seq",
                "relations": "SELECT id, source, target, label, chunk_row, weight FROM graph_relations"
                " WHERE collection=%s ORDER BY id",
                "synonyms": "SELECT a, b, similarity FROM graph_synonyms WHERE collection=%s ORDER BY a, b",
                "communities": "SELECT id, level, parent, members, title, report, chunk_rows, vector"
                " FROM graph_communities WHERE collection=%s ORDER BY level, id",
            }
            rows = {name: conn.execute(sql, (collection,)).fetchall() for name, sql in queries.items()}
            rows["head"] = [head]
            return record, rows

        found = self.db.run(read)
        if found is None:
            return None
        record, rows = found
        counters, build = rows["head"][0]
        graph = KnowledgeGraph(record.config)
        graph.build_id = str(build)
        for i, key, name, label, description, vector in rows["entities"]:
            graph.entities[int(i)] = Entity(int(i), key, name, label, unhalf(vector), description)
            graph.by_key[key] = int(i)
        for row, entity, count, sentence, title in rows["mentions"]:
            e = graph.entities[int(entity)]
            if title:
                graph.row_title[int(row)] = int(entity)
            e.rows[int(row)] = int(count)
            if sentence:
                e.sentences[int(row)] = sentence
            graph.row_entities.setdefault(int(row), []).append(int(entity))
        for i, source, target, label, row, weight in rows["relations"]:
            graph.relations[int(i)] = Relation(int(i), int(source), int(target), label, int(row), float(weight))
            graph.row_relations.setdefault(int(row), []).append(int(i))
        for a, b, sim in rows["synonyms"]:
            graph.synonyms.setdefault(int(a), {})[int(b)] = float(sim)
            graph.synonyms.setdefault(int(b), {})[int(a)] = float(sim)
        for i, level, parent, members, title, report, chunk_rows, vector in rows["communities"]:
            c = Community(
                int(i), int(level), int(parent), np.frombuffer(members, dtype=np.int64).tolist(), title, report,
                np.frombuffer(chunk_rows, dtype=np.int64).tolist(), unhalf(vector),
            )  # fmt: skip
            graph.communities[c.id] = c
            for m in c.members:
                graph.member_of.setdefault(m, []).append(c.id)
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

    def save_new(
        self, collection: str, graph: KnowledgeGraph, version: str, extractor: str, reporter: str, stats: dict[str, Any]
    ) -> None:
        """Replace the collection's graph with ``graph``, whole, in one transaction (a new build id: an update
        made from an earlier build is refused from then on)."""
        now = time.time()
        build = uuid.uuid4().hex[:16]
        mentions, relations = _row_data(collection, graph, set(graph.row_entities))
        synonyms = [(collection, a, b, s) for a, others in graph.synonyms.items() for b, s in others.items() if a < b]

        def write(conn: psycopg.Connection[Any]) -> None:
            lock_collection(conn, GRAPH_LOCK, collection)
            for table in _TABLES:
                conn.execute(f"DELETE FROM {table} WHERE collection=%s", (collection,))
            conn.execute("DELETE FROM graphs WHERE collection=%s", (collection,))
            _copy(conn, "graph_entities", _ENTITY, (_entity_row(collection, e) for e in graph.entities.values()))
            _copy(conn, "graph_mentions", _MENTION, mentions)
            _copy(conn, "graph_relations", _RELATION, relations)
            _copy(conn, "graph_synonyms", _SYNONYM, synonyms)
            _copy(
                conn,
                "graph_communities",
                _COMMUNITY,
                (_community_row(collection, c) for c in graph.communities.values()),
            )
            conn.execute(
                "INSERT INTO graphs VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                (
                    collection, build, graph.generation, version, extractor, reporter,
                    Jsonb(graph.config.to_dict()), _counters(graph), Jsonb(stats), now, now,
                ),
            )  # fmt: skip

        self.db.run(write, retry=False)
        graph.build_id = build

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
        """Write what one update touched. ``False`` (nothing written) when the stored graph is another build
        or no longer at ``base_generation``: another process moved it; reload instead."""
        mentions, relations = _row_data(collection, graph, touched.added_rows)
        if rewrote_communities:
            communities = set(graph.communities)

        def write(conn: psycopg.Connection[Any]) -> bool:
            row = conn.execute(
                "SELECT generation, build FROM graphs WHERE collection=%s FOR UPDATE", (collection,)
            ).fetchone()
            if row is None or int(row[0]) != base_generation or str(row[1]) != graph.build_id:
                return False  # another process updated or rebuilt it: its ids are not ours
            gone_rows = [(collection, r) for r in sorted(touched.removed_rows | touched.added_rows)]
            dropped = [(collection, e, e) for e in sorted(touched.dropped_entities)]
            with conn.cursor() as cur:
                cur.executemany("DELETE FROM graph_mentions WHERE collection=%s AND chunk_row=%s", gone_rows)
                cur.executemany("DELETE FROM graph_relations WHERE collection=%s AND chunk_row=%s", gone_rows)
                cur.executemany("DELETE FROM graph_entities WHERE collection=%s AND id=%s", [d[:2] for d in dropped])
                cur.executemany("DELETE FROM graph_synonyms WHERE collection=%s AND (a=%s OR b=%s)", dropped)
                cur.executemany(
                    _UPSERT_ENTITY, [_entity_row(collection, graph.entities[e]) for e in sorted(touched.entities)]
                )
                # the mentions of a touched entity's other rows keep their counts: only its rows here changed
                cur.executemany(_UPSERT_MENTION, mentions)
                cur.executemany(_UPSERT_RELATION, relations)
                cur.executemany(_UPSERT_SYNONYM, [(collection, a, b, s) for a, b, s in touched.synonyms_added])
                if rewrote_communities:
                    cur.execute("DELETE FROM graph_communities WHERE collection=%s", (collection,))
                cur.executemany(
                    "DELETE FROM graph_communities WHERE collection=%s AND id=%s",
                    [(collection, c) for c in sorted(dropped_communities)],
                )
                cur.executemany(
                    _UPSERT_COMMUNITY, [_community_row(collection, graph.communities[c]) for c in sorted(communities)]
                )
            conn.execute(
                "UPDATE graphs SET generation=%s, counters=%s, updated_at=%s WHERE collection=%s",
                (graph.generation, _counters(graph), time.time(), collection),
            )
            return True

        return self.db.run(write, retry=False)

    def set_stats(self, collection: str, stats: dict[str, Any]) -> None:
        self.db.run(
            lambda conn: conn.execute("UPDATE graphs SET stats=%s WHERE collection=%s", (Jsonb(stats), collection)),
            retry=False,
        )

    def drop(self, collection: str) -> None:
        def write(conn: psycopg.Connection[Any]) -> None:
            lock_collection(conn, GRAPH_LOCK, collection)
            for table in _TABLES:
                conn.execute(f"DELETE FROM {table} WHERE collection=%s", (collection,))
            conn.execute("DELETE FROM graphs WHERE collection=%s", (collection,))

        self.db.run(write, retry=False)

    def counts(self, collection: str) -> dict[str, int]:
        def read(conn: psycopg.Connection[Any]) -> dict[str, int]:
            repeatable_read(conn)
            out = {}
            for table in _TABLES:
                row = conn.execute(f"SELECT COUNT(*) FROM {table} WHERE collection=%s", (collection,)).fetchone()
                out[table.removeprefix("graph_")] = int(row[0]) if row else 0
            return out

        return self.db.run(read)

    def size_bytes(self, collection: str) -> int:
        """Bytes of graph data (names, sentences, labels, vectors and id lists) the collection holds."""
        sql = (
            "SELECT (SELECT COALESCE(SUM(octet_length(name)+octet_length(key)+octet_length(description)"
            "+COALESCE(octet_length(vector),0)+32),0) FROM graph_entities WHERE collection=%(c)s)"
            " + (SELECT COALESCE(SUM(octet_length(sentence)+24),0) FROM graph_mentions WHERE collection=%(c)s)"
            " + (SELECT COALESCE(SUM(octet_length(label)+40),0) FROM graph_relations WHERE collection=%(c)s)"
            " + (SELECT COUNT(*)*24 FROM graph_synonyms WHERE collection=%(c)s)"
            " + (SELECT COALESCE(SUM(octet_length(members)+octet_length(report)+octet_length(chunk_rows)"
            "+COALESCE(octet_length(vector),0)+32),0) FROM graph_communities WHERE collection=%(c)s)"
        )
        row = self.db.run(lambda conn: conn.execute(sql, {"c": collection}).fetchone())
        return int(row[0]) if row else 0
