"""Trees persisted in the store's own SQLite file: one row per node, one row per tree.

A build writes every node of a new tree and switches the collection's active tree in one transaction,
so a crash mid-build leaves the old tree as it was. An incremental update writes the nodes it changed,
removes the ones it dropped and moves the tree's generation, also in one transaction."""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from waypost.hierarchy.tree import Tree, TreeConfig, TreeNode
from waypost.store.protocols import TreeRecord
from waypost.store.tables import SideTables

SCHEMA = """
CREATE TABLE IF NOT EXISTS trees (
    collection TEXT NOT NULL,
    tree TEXT NOT NULL,
    active INTEGER NOT NULL,
    generation INTEGER NOT NULL,
    version TEXT NOT NULL,
    summarizer TEXT NOT NULL,
    config TEXT NOT NULL,
    next_id INTEGER NOT NULL,
    nodes_at_build INTEGER NOT NULL,
    changed_nodes INTEGER NOT NULL,
    leaf_tokens BLOB NOT NULL,
    stats TEXT NOT NULL,
    built_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (collection, tree)
);
CREATE TABLE IF NOT EXISTS tree_nodes (
    collection TEXT NOT NULL,
    tree TEXT NOT NULL,
    id INTEGER NOT NULL,
    layer INTEGER NOT NULL,
    kind TEXT NOT NULL,
    document_id TEXT NOT NULL,
    children BLOB NOT NULL,
    leaves BLOB NOT NULL,
    weight REAL NOT NULL,
    centroid BLOB NOT NULL,
    summary_vector BLOB,
    text TEXT NOT NULL,
    cluster INTEGER NOT NULL,
    PRIMARY KEY (collection, tree, id)
);
"""


def _ints(values: list[int]) -> bytes:
    return np.asarray(values, dtype=np.int64).tobytes()


def _half(vector: np.ndarray | None) -> bytes | None:
    return None if vector is None else np.asarray(vector, dtype=np.float16).tobytes()


class SQLiteTreeRepository(SideTables):
    """A ``TreeRepository`` in the SQLite file at ``path`` (the collection store's file)."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(path)
        conn = self._connect()
        try:
            conn.executescript(SCHEMA)
        finally:
            conn.close()

    def record(self, collection: str) -> TreeRecord | None:
        conn = self._connect()
        try:
            return self._record(conn, collection)
        finally:
            conn.close()

    @staticmethod
    def _record(conn: sqlite3.Connection, collection: str) -> TreeRecord | None:
        row = conn.execute(
            "SELECT collection, tree, generation, version, summarizer, config, next_id, nodes_at_build,"
            " changed_nodes, stats, built_at, updated_at FROM trees WHERE collection=? AND active=1",
            (collection,),
        ).fetchone()
        if row is None:
            return None
        return TreeRecord(
            row[0], row[1], int(row[2]), row[3], row[4], TreeConfig.from_dict(json.loads(row[5])),
            int(row[6]), int(row[7]), int(row[8]), json.loads(row[9]), float(row[10]), float(row[11]),
        )  # fmt: skip

    def load(self, collection: str, tree: Tree) -> TreeRecord | None:
        """Fill ``tree`` with the collection's active tree; ``None`` when it has none."""
        with self._transaction(write=False) as conn:
            head = conn.execute(
                "SELECT tree, generation, next_id, nodes_at_build, changed_nodes, leaf_tokens FROM trees"
                " WHERE collection=? AND active=1",
                (collection,),
            ).fetchone()
            if head is None:
                return None
            rows = conn.execute(
                "SELECT id, layer, kind, document_id, children, leaves, weight, centroid, summary_vector, text,"
                " cluster FROM tree_nodes WHERE collection=? AND tree=?",
                (collection, head[0]),
            ).fetchall()
            record = self._record(conn, collection)  # in the same read transaction as the nodes
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
                summary_vector=None if r[8] is None else np.frombuffer(r[8], dtype=np.float16).astype(np.float32),
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

    @staticmethod
    def _node_row(collection: str, name: str, n: TreeNode) -> tuple[Any, ...]:
        return (
            collection, name, n.id, n.layer, n.kind, n.document_id, _ints(n.children), _ints(n.leaves), n.weight,
            _half(n.centroid), _half(n.summary_vector), n.text, n.cluster,
        )  # fmt: skip

    @staticmethod
    def _leaf_tokens(tree: Tree) -> bytes:
        pairs = np.array(sorted(tree.leaf_tokens.items()), dtype=np.int64).reshape(-1, 2)
        return pairs.tobytes()

    def save_new(self, collection: str, tree: Tree, version: str) -> str:
        """Write ``tree`` whole as the collection's new active tree, replacing the old one atomically."""
        name = uuid.uuid4().hex[:16]
        now = time.time()
        with self._transaction(write=True) as conn:
            conn.executemany(
                "INSERT INTO tree_nodes VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [self._node_row(collection, name, n) for n in tree.nodes.values()],
            )
            old = [r[0] for r in conn.execute("SELECT tree FROM trees WHERE collection=?", (collection,))]
            conn.execute(
                "INSERT INTO trees VALUES (?,?,1,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    collection, name, tree.generation, version, tree.summarizer.name,
                    json.dumps(tree.config.to_dict()), tree.next_id, tree.nodes_at_build,
                    tree.changed_since_build, self._leaf_tokens(tree),
                    json.dumps({"seconds": tree.stats.seconds, "layers": tree.layers()}), now, now,
                ),
            )  # fmt: skip
            for other in old:
                conn.execute("DELETE FROM tree_nodes WHERE collection=? AND tree=?", (collection, other))
                conn.execute("DELETE FROM trees WHERE collection=? AND tree=?", (collection, other))
        tree.dirty.clear()
        tree.dropped.clear()
        return name

    def save_changes(self, collection: str, name: str, tree: Tree, base_generation: int) -> bool:
        """Write the nodes ``tree`` changed since it was at ``base_generation``. ``False`` (nothing written)
        when the stored tree is no longer at that generation: another process moved it; reload instead."""
        with self._transaction(write=True) as conn:
            row = conn.execute(
                "SELECT generation FROM trees WHERE collection=? AND tree=? AND active=1", (collection, name)
            ).fetchone()
            if row is None or int(row[0]) != base_generation:
                return False  # nothing written: the empty transaction commits
            conn.executemany(
                "DELETE FROM tree_nodes WHERE collection=? AND tree=? AND id=?",
                [(collection, name, i) for i in tree.dropped],
            )
            conn.executemany(
                "INSERT OR REPLACE INTO tree_nodes VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [self._node_row(collection, name, tree.nodes[i]) for i in tree.dirty if i in tree.nodes],
            )
            conn.execute(
                "UPDATE trees SET generation=?, next_id=?, changed_nodes=?, leaf_tokens=?, updated_at=?"
                " WHERE collection=? AND tree=?",
                (
                    tree.generation, tree.next_id, tree.changed_since_build, self._leaf_tokens(tree),
                    time.time(), collection, name,
                ),
            )  # fmt: skip
        tree.dirty.clear()
        tree.dropped.clear()
        return True

    def drop(self, collection: str) -> None:
        with self._transaction(write=True) as conn:
            conn.execute("DELETE FROM tree_nodes WHERE collection=?", (collection,))
            conn.execute("DELETE FROM trees WHERE collection=?", (collection,))

    def size_bytes(self, collection: str) -> int:
        """Bytes of node data (vectors, texts and id lists) the collection's trees hold."""
        conn = self._connect()
        try:
            row = conn.execute(
                "SELECT COALESCE(SUM(LENGTH(children)+LENGTH(leaves)+LENGTH(centroid)+"
                "COALESCE(LENGTH(summary_vector),0)+LENGTH(CAST(text AS BLOB))+64),0) FROM tree_nodes"
                " WHERE collection=?",
                (collection,),
            ).fetchone()
        finally:
            conn.close()
        return int(row[0])
