"""What graph strategies share: the collection's knowledge graph current with the store, its search
arrays, where its chunk nodes sit in the index set, and query seeds."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from waypost.context import SearchContext, Timer
from waypost.errors import WaypostError
from waypost.graph.graph import KnowledgeGraph
from waypost.graph.search import GraphArrays, IntArray, Seed, graph_arrays, link_query
from waypost.index.topk import Mask


@dataclass
class GraphView:
    graph: KnowledgeGraph
    arrays: GraphArrays
    chunk_positions: IntArray  # per chunk node (j), its position in the index set (-1: not live there)

    def position_of_row(self, row: int) -> int:
        node = self.arrays.node_of_row.get(row)
        return -1 if node is None else int(self.chunk_positions[node - self.arrays.entities])


def _positions(ctx: SearchContext, arrays: GraphArrays) -> IntArray:
    found = ctx.indexes.positions_of(arrays.chunk_rows.tolist())
    return np.asarray([found.get(int(r), -1) for r in arrays.chunk_rows.tolist()], dtype=np.int64)


def graph_view(ctx: SearchContext, timer: Timer, relation_weight: float = 1.0, title_weight: float = 1.0) -> GraphView:
    """The graph over this context's indexes, current with the store (built on first use)."""
    if ctx.graph is None:
        raise WaypostError("this search context has no graph: graph strategies need an engine's collection")
    live = ctx.graph
    with timer.stage("graph"):
        graph = live.get()
        assert graph is not None
        arrays: GraphArrays = live.derived(
            "arrays", lambda g: graph_arrays(g, relation_weight, title_weight), key=(relation_weight, title_weight)
        )
        positions: IntArray = live.derived(
            "positions", lambda _g: _positions(ctx, arrays), key=(id(arrays), id(ctx.indexes), ctx.indexes.version)
        )
    return GraphView(graph, arrays, positions)


def allowed_chunks(view: GraphView, mask: Mask | None) -> np.ndarray:
    """Per chunk node: may it be returned (live in the index set and inside the filter)?"""
    ok = view.chunk_positions >= 0
    if mask is not None:
        ok &= mask[np.maximum(view.chunk_positions, 0)]
    return ok


def describe_seeds(view: GraphView, seeds: list[Seed], limit: int = 8) -> str:
    names = []
    for s in sorted(seeds, key=lambda s: -s.weight)[:limit]:
        e = view.graph.entities[int(view.arrays.entity_ids[s.node])]
        names.append(f"{e.name} ({s.how} {s.weight:.2f})")
    return ", ".join(names) if names else "none"


__all__ = ["GraphView", "allowed_chunks", "describe_seeds", "graph_view", "link_query"]
