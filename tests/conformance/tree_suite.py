"""The ``TreeRepository`` contract. A backend's test module subclasses ``TreeRepositoryConformance`` and
provides a ``trees`` fixture; every test here then runs against that backend."""

from __future__ import annotations

import numpy as np
import pytest

from waypost.base import TreeRepository
from waypost.hierarchy.summarize import ExtractiveSummarizer
from waypost.hierarchy.tree import Tree, TreeConfig, TreeNode

DIM = 4


def node(node_id: int, layer: int, kind: str, doc: str, children: list[int], leaves: list[int]) -> TreeNode:
    rng = np.random.default_rng(node_id)
    centroid = rng.normal(size=DIM).astype(np.float16).astype(np.float32)  # stored as float16
    summary = None if kind == "run" else rng.normal(size=DIM).astype(np.float16).astype(np.float32)
    return TreeNode(node_id, layer, kind, doc, children, leaves, float(len(leaves)), centroid, f"text {node_id}",
                    summary, cluster=-1 if kind != "cluster" else 0)  # fmt: skip


def make_tree(generation: int = 3, config: TreeConfig | None = None) -> Tree:
    """Two documents of runs under one cluster: every node kind a repository stores."""
    tree = Tree(config or TreeConfig(), ExtractiveSummarizer(), embedder=None)  # type: ignore[arg-type]
    nodes = [
        node(1, 0, "run", "a", [], [10, 11]),
        node(2, 0, "run", "a", [], [11, 12]),
        node(3, 1, "document", "a", [1, 2], [10, 11, 12]),
        node(4, 0, "run", "b", [], [20]),
        node(5, 1, "document", "b", [4], [20]),
        node(6, 2, "cluster", "", [3, 5], [10, 11, 12, 20]),
    ]
    tree.nodes = {n.id: n for n in nodes}
    tree.next_id, tree.generation = 7, generation
    tree.nodes_at_build, tree.changed_since_build = 6, 0
    tree.leaf_tokens = {10: 5, 11: 7, 12: 3, 20: 9}
    return tree


def same_nodes(a: Tree, b: Tree) -> None:
    assert a.nodes.keys() == b.nodes.keys()
    for i, x in a.nodes.items():
        y = b.nodes[i]
        assert (x.id, x.layer, x.kind, x.document_id, x.children, x.leaves, x.weight, x.text, x.cluster) == (
            y.id, y.layer, y.kind, y.document_id, y.children, y.leaves, y.weight, y.text, y.cluster,
        )  # fmt: skip
        np.testing.assert_allclose(x.centroid, y.centroid, rtol=1e-3)
        assert (x.summary_vector is None) == (y.summary_vector is None)
        if x.summary_vector is not None:
            np.testing.assert_allclose(x.summary_vector, y.summary_vector, rtol=1e-3)


def loaded(trees: TreeRepository, collection: str) -> Tree:
    tree = Tree(TreeConfig(), ExtractiveSummarizer(), embedder=None)  # type: ignore[arg-type]
    assert trees.load(collection, tree) is not None
    return tree


class TreeRepositoryConformance:
    @pytest.fixture
    def trees(self) -> TreeRepository:  # pragma: no cover - overridden
        raise NotImplementedError

    def test_a_new_tree_reads_back_whole(self, trees: TreeRepository) -> None:
        assert trees.record("c") is None
        empty = Tree(TreeConfig(), ExtractiveSummarizer(), embedder=None)  # type: ignore[arg-type]
        assert trees.load("c", empty) is None
        config = TreeConfig(summary_tokens=80, lite=True)
        tree = make_tree(config=config)
        tree.dirty.add(1)
        name = trees.save_new("c", tree, "uid-g3-abc")
        assert not tree.dirty and not tree.dropped
        record = trees.record("c")
        assert record is not None
        assert (record.collection, record.tree, record.generation, record.version) == ("c", name, 3, "uid-g3-abc")
        assert (record.config, record.next_id, record.nodes_at_build, record.changed_nodes) == (config, 7, 6, 0)
        assert record.summarizer == ExtractiveSummarizer().name
        back = loaded(trees, "c")
        same_nodes(tree, back)
        assert (back.generation, back.next_id, back.leaf_tokens) == (3, 7, tree.leaf_tokens)
        assert trees.size_bytes("c") > 0

    def test_a_new_tree_replaces_the_old_one_whole(self, trees: TreeRepository) -> None:
        first = trees.save_new("c", make_tree(), "v1")
        smaller = make_tree(generation=5)
        for i in (1, 2, 3, 6):
            del smaller.nodes[i]
        second = trees.save_new("c", smaller, "v2")
        assert first != second
        record = trees.record("c")
        assert record is not None and (record.tree, record.generation, record.version) == (second, 5, "v2")
        same_nodes(smaller, loaded(trees, "c"))
        assert not trees.save_changes("c", first, smaller, 5), "an update of the replaced tree must be refused"

    def test_changes_write_what_changed_and_move_the_generation(self, trees: TreeRepository) -> None:
        tree = make_tree()
        name = trees.save_new("c", tree, "v")
        tree.nodes[7] = node(7, 0, "run", "b", [], [21])
        tree.nodes[5].children = [4, 7]
        tree.nodes[5].text = "document b, longer"
        del tree.nodes[1]
        tree.nodes[3].children = [2]
        tree.dirty |= {3, 5, 7}
        tree.dropped.add(1)
        tree.generation, tree.next_id, tree.changed_since_build = 4, 8, 4
        tree.leaf_tokens[21] = 2
        assert trees.save_changes("c", name, tree, base_generation=3)
        assert not tree.dirty and not tree.dropped
        back = loaded(trees, "c")
        same_nodes(tree, back)
        assert (back.generation, back.next_id, back.changed_since_build, back.leaf_tokens[21]) == (4, 8, 4, 2)
        record = trees.record("c")
        assert record is not None and (record.generation, record.changed_nodes) == (4, 4)

    def test_a_stale_update_writes_nothing(self, trees: TreeRepository) -> None:
        tree = make_tree()
        name = trees.save_new("c", tree, "v")
        tree.nodes[2].text = "changed"
        tree.dirty.add(2)
        tree.generation = 9
        assert not trees.save_changes("c", name, tree, base_generation=2)  # the stored tree is at 3
        assert not trees.save_changes("c", "another-tree", tree, base_generation=3)
        assert not trees.save_changes("missing", name, tree, base_generation=3)
        back = loaded(trees, "c")
        assert back.generation == 3 and back.nodes[2].text == "text 2"

    def test_collections_are_isolated_and_drop_is_exact(self, trees: TreeRepository) -> None:
        names = ["c", "c1", "c%", "c_", "C", "xc"]
        for i, collection in enumerate(names):
            trees.save_new(collection, make_tree(generation=i + 1), f"v{i}")
        trees.drop("c")
        assert trees.record("c") is None and trees.size_bytes("c") == 0
        for i, collection in enumerate(names[1:], start=1):
            record = trees.record(collection)
            assert record is not None and record.generation == i + 1
            same_nodes(make_tree(), loaded(trees, collection))
        trees.drop("never-there")
