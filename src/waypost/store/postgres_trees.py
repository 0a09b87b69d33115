"""Trees persisted in PostgreSQL beside the documents: one row per node, one row per tree (as
``sqlite_trees``: vectors float16 and id lists int64 in ``bytea``).

A build writes every node of a new tree and switches the collection's active tree in one transaction; an
update writes the nodes it changed and moves the tree's generation in one transaction, only while the tree
row (locked ``FOR UPDATE``) is still at the caller's generation. Writers of one collection's trees are
serialized by a transaction-scoped advisory lock, so two builds never leave two active trees."""

from __future__ import annotations

import time
import uuid
from typing import Any

import numpy as np
import psycopg
from psycopg.types.json import Jsonb

from waypost.hierarchy.tree import Tree, TreeConfig, TreeNode
from waypost.store.pg_base import PgDatabase
from waypost.store.protocols import TreeRecord

MIGRATIONS = [
    """
    CREATE TABLE trees (
        collection TEXT NOT NULL,
        tree TEXT NOT NULL,
        active INTEGER NOT NULL,
        generation BIGINT NOT NULL,
        version TEXT NOT NULL,
        summarizer TEXT NOT NULL,
        config JSONB NOT NULL,
        next_id BIGINT NOT NULL,
        nodes_at_build BIGINT NOT NULL,
        changed_nodes BIGINT NOT NULL,
        leaf_tokens BYTEA NOT NULL,
        stats JSONB NOT NULL,
        built_at DOUBLE PRECISION NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (collection, tree)
    );
    CREATE UNIQUE INDEX trees_one_active ON trees(collection) WHERE active = 1;
    CREATE TABLE tree_nodes (
        collection TEXT NOT NULL,
        tree TEXT NOT NULL,
        id BIGINT NOT NULL,
        layer INTEGER NOT NULL,
        kind TEXT NOT NULL,
        document_id TEXT NOT NULL,
        children BYTEA NOT NULL,
        leaves BYTEA NOT NULL,
        weight DOUBLE PRECISION NOT NULL,
        centroid BYTEA NOT NULL,
        summary_vector BYTEA,
        text TEXT NOT NULL,
        cluster INTEGER NOT NULL,
        PRIMARY KEY (collection, tree, id)
    );
    """
]

_NODE_COLUMNS = (
    "collection, tree, id, layer, kind, document_id, children, leaves, weight, centroid, summary_vector, text, cluster"
)
_RECORD_COLUMNS = (
    "collection, tree, generation, version, summarizer, config, next_id, nodes_at_build, changed_nodes, stats,"
    " built_at, updated_at"
)

# advisory lock classes (the first key of the two-key form); the second is a hash of schema and collection
TREE_LOCK = 0x57505401
GRAPH_LOCK = 0x57505402


def lock_collection(conn: psycopg.Connection[Any], kind: int, collection: str) -> None:
    """Serialize this transaction with every other writer of ``collection``'s ``kind`` (held until it ends)."""
    conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(current_schema() || ':' || %s))", (kind, collection))


def repeatable_read(conn: psycopg.Connection[Any]) -> None:
    """Make the transaction one snapshot (first statement of the transaction): a consistent multi-query read."""
    conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")


def ints(values: list[int]) -> bytes:
    return np.asarray(values, dtype=np.int64).tobytes()


def half(vector: np.ndarray | None) -> bytes | None:
    return None if vector is None else np.asarray(vector, dtype=np.float16).tobytes()


def unhalf(blob: bytes | None) -> np.ndarray | None:
    return None if blob is None else np.frombuffer(blob, dtype=np.float16).astype(np.float32)


def _record(conn: psycopg.Connection[Any], collection: str) -> TreeRecord | None:
    row = conn.execute(
        f"SELECT {_RECORD_COLUMNS} FROM trees WHERE collection=%s AND active=1", (collection,)
    ).fetchone()
    if row is None:
        return None
    return TreeRecord(
        row[0], row[1], int(row[2]), row[3], row[4], TreeConfig.from_dict(row[5]), int(row[6]), int(row[7]),
        int(row[8]), row[9], float(row[10]), float(row[11]),
    )  # fmt: skip


def _node_row(collection: str, name: str, n: TreeNode) -> tuple[Any, ...]:
    return (
        collection, name, n.id, n.layer, n.kind, n.document_id, ints(n.children), ints(n.leaves), n.weight,
        half(n.centroid), half(n.summary_vector), n.text, n.cluster,
    )  # fmt: skip


def _leaf_tokens(tree: Tree) -> bytes:
    return np.array(sorted(tree.leaf_tokens.items()), dtype=np.int64).reshape(-1, 2).tobytes()


class PostgresTreeRepository:
    """A ``TreeRepository`` in one schema of a PostgreSQL database (the documents' schema)."""

    def __init__(self, db: PgDatabase) -> None:
        self.db = db
        db.migrate("trees", MIGRATIONS)

    def record(self, collection: str) -> TreeRecord | None:
        return self.db.run(lambda conn: _record(conn, collection))

    def load(self, collection: str, tree: Tree) -> TreeRecord | None:
        """Fill ``tree`` with the collection's active tree, read in one snapshot; ``None`` when it has none."""

        def read(conn: psycopg.Connection[Any]) -> tuple[Any, list[Any], TreeRecord | None] | None:
            repeatable_read(conn)
            head = conn.execute(
                "SELECT tree, generation, next_id, nodes_at_build, changed_nodes, leaf_tokens FROM trees"
                " WHERE collection=%s AND active=1",
                (collection,),
            ).fetchone()
            if head is None:
                return None
            rows = conn.execute(
                "SELECT id, layer, kind, document_id, children, leaves, weight, centroid, summary_vector, text,"
                " cluster FROM tree_nodes WHERE collection=%s AND tree=%s ORDER BY id",
                (collection, head[0]),
            ).fetchall()
            return head, rows, _record(conn, collection)

        found = self.db.run(read)
        if found is None:
            return None
        head, rows, record = found
        tree.nodes = {
            int(r[0]): TreeNode(
                id=int(r[0]),
                layer=int(r[1]),
                kind=r[2],
                document_id=r[3],
                children=np.frombuffer(r[4], dtype=np.int64).tolist(),
                leaves=np.frombuffer(r[5], dtype=np.int64).tolist(),
                weight=float(r[6]),
                centroid=np.frombuffer(r[7], dtype=np.float16).astype(np.float32),
                summary_vector=unhalf(r[8]),
                text=r[9],
                cluster=int(r[10]),
            )
            for r in rows
        }
        tree.generation, tree.next_id = int(head[1]), int(head[2])
        tree.nodes_at_build, tree.changed_since_build = int(head[3]), int(head[4])
        pairs = np.frombuffer(head[5], dtype=np.int64).reshape(-1, 2)
        tree.leaf_tokens = dict(zip(pairs[:, 0].tolist(), pairs[:, 1].tolist(), strict=True))
        tree.dirty.clear()
        tree.dropped.clear()
        return record

    def save_new(self, collection: str, tree: Tree, version: str) -> str:
        """Write ``tree`` whole as the collection's new active tree, replacing the old one atomically."""
        name = uuid.uuid4().hex[:16]
        now = time.time()
        head = (
            collection, name, tree.generation, version, tree.summarizer.name, Jsonb(tree.config.to_dict()),
            tree.next_id, tree.nodes_at_build, tree.changed_since_build, _leaf_tokens(tree),
            Jsonb({"seconds": tree.stats.seconds, "layers": tree.layers()}), now, now,
        )  # fmt: skip

        def write(conn: psycopg.Connection[Any]) -> None:
            lock_collection(conn, TREE_LOCK, collection)
            with conn.cursor() as cur, cur.copy(f"COPY tree_nodes ({_NODE_COLUMNS}) FROM STDIN") as copy:
                for n in tree.nodes.values():
                    copy.write_row(_node_row(collection, name, n))
            old = [r[0] for r in conn.execute("SELECT tree FROM trees WHERE collection=%s", (collection,))]
            for other in old:
                conn.execute("DELETE FROM tree_nodes WHERE collection=%s AND tree=%s", (collection, other))
                conn.execute("DELETE FROM trees WHERE collection=%s AND tree=%s", (collection, other))
            conn.execute("INSERT INTO trees VALUES (%s,%s,1,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)", head)

        self.db.run(write, retry=False)
        tree.dirty.clear()
        tree.dropped.clear()
        return name

    def save_changes(self, collection: str, name: str, tree: Tree, base_generation: int) -> bool:
        """Write the nodes ``tree`` changed since it was at ``base_generation``. ``False`` (nothing written)
        when the stored tree is no longer at that generation: another process moved it; reload instead."""

        def write(conn: psycopg.Connection[Any]) -> bool:
            row = conn.execute(
                "SELECT generation FROM trees WHERE collection=%s AND tree=%s AND active=1 FOR UPDATE",
                (collection, name),
            ).fetchone()
            if row is None or int(row[0]) != base_generation:
                return False
            with conn.cursor() as cur:
                cur.executemany(
                    "DELETE FROM tree_nodes WHERE collection=%s AND tree=%s AND id=%s",
                    [(collection, name, i) for i in sorted(tree.dropped)],
                )
                cur.executemany(
                    f"INSERT INTO tree_nodes ({_NODE_COLUMNS}) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)"
                    " ON CONFLICT (collection, tree, id) DO UPDATE SET layer=EXCLUDED.layer, kind=EXCLUDED.kind,"
                    " document_id=EXCLUDED.document_id, children=EXCLUDED.children, leaves=EXCLUDED.leaves,"
                    " weight=EXCLUDED.weight, centroid=EXCLUDED.centroid, summary_vector=EXCLUDED.summary_vector,"
                    " text=EXCLUDED.text, cluster=EXCLUDED.cluster",
                    [_node_row(collection, name, tree.nodes[i]) for i in sorted(tree.dirty) if i in tree.nodes],
                )
            conn.execute(
                "UPDATE trees SET generation=%s, next_id=%s, changed_nodes=%s, leaf_tokens=%s, updated_at=%s"
                " WHERE collection=%s AND tree=%s",
                (
                    tree.generation, tree.next_id, tree.changed_since_build, _leaf_tokens(tree), time.time(),
                    collection, name,
                ),
            )  # fmt: skip
            return True

        if not self.db.run(write, retry=False):
            return False
        tree.dirty.clear()
        tree.dropped.clear()
        return True

    def drop(self, collection: str) -> None:
        def write(conn: psycopg.Connection[Any]) -> None:
            lock_collection(conn, TREE_LOCK, collection)
            conn.execute("DELETE FROM tree_nodes WHERE collection=%s", (collection,))
            conn.execute("DELETE FROM trees WHERE collection=%s", (collection,))

        self.db.run(write, retry=False)

    def size_bytes(self, collection: str) -> int:
        """Bytes of node data (vectors, texts and id lists) the collection's trees hold."""
        row = self.db.run(
            lambda conn: conn.execute(
                "SELECT COALESCE(SUM(octet_length(children)+octet_length(leaves)+octet_length(centroid)"
                "+COALESCE(octet_length(summary_vector),0)+octet_length(text)+64),0) FROM tree_nodes"
                " WHERE collection=%s",
                (collection,),
            ).fetchone()
        )
        return int(row[0]) if row else 0
