"""Dense vector search: exact inner product (vectors are normalised), or HNSW for large collections.

Below ``exact_below`` chunks every query reads the exact score of every chunk. From there on a view
whose main segment carries an HNSW graph answers "top candidates" from the graph (deleted rows are
marked in it), small segments by exact scan, and every candidate's score is then read exactly from
the vectors; scores of other positions are computed on demand (``QueryScores.at``). A filter is pushed
down: a selective one (at most ``FILTER_EXACT_ROWS`` rows or ``FILTER_EXACT_SHARE`` of a segment) is an exact
scan over just those rows, a broad one filters inside the graph search (hnswlib's filter, as pgvector's
iterative scans)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from waypost.base import FloatMatrix
from waypost.index.topk import Mask, Positions, Scores, top_k

BoolArray = npt.NDArray[np.bool_]

EXACT_DENSE_BELOW = 200_000  # chunks: exact scores below this, graph candidates from here on (docs/scaling.md)
# A filter keeping at most this many rows, or this share, of a graph segment's live rows is an exact scan over
# them; a broader one filters inside the graph search (at 1M chunks a 10% filter costs about 40 ms either way).
FILTER_EXACT_ROWS = 20_000
FILTER_EXACT_SHARE = 0.08
_WIDE_SEARCH = threading.Lock()  # a graph search wider than the resting beam (see ``DenseIndex._knn``)
GRAPH_ROWS = 250_000  # rows per HNSW graph: a larger segment has one graph per range of this many positions
HNSW_M = 32  # graph degree
HNSW_EF_CONSTRUCTION = 200
HNSW_EF = 200  # search beam; a search for k candidates uses at least 2k


class GraphBuildStopped(Exception):
    """A background graph build was asked to stop (its index closed, or the segment replaced)."""


ADD_BATCH = 25_000  # rows added to a graph between two looks at ``stop``


def build_hnsw(vectors: FloatMatrix, ef: int = HNSW_EF, start: int = 0, stop: Callable[[], bool] | None = None) -> Any:
    """One graph over ``vectors``, labelled with their positions from ``start`` on; ``stop`` is asked between
    batches of rows and ends the build with ``GraphBuildStopped``."""
    import hnswlib

    if stop is not None and stop():
        raise GraphBuildStopped
    index = hnswlib.Index(space="ip", dim=vectors.shape[1])
    index.init_index(
        max_elements=max(1, len(vectors)), ef_construction=HNSW_EF_CONSTRUCTION, M=HNSW_M, allow_replace_deleted=False
    )
    step = len(vectors) if stop is None else ADD_BATCH
    for at in range(0, len(vectors), max(1, step)):
        if stop is not None and stop():
            raise GraphBuildStopped
        part = np.asarray(vectors[at : at + step], dtype=np.float32)
        index.add_items(part, np.arange(start + at, start + at + len(part)))
    index.set_ef(ef)
    return index


def build_graphs(vectors: FloatMatrix, ef: int = HNSW_EF, stop: Callable[[], bool] | None = None) -> list[Any]:
    """Graphs over ``vectors`` in ranges of ``GRAPH_ROWS`` positions (Lucene-style: several bounded graphs
    searched together keep recall and build time per graph where one graph of the whole would lose them)."""
    return [build_hnsw(vectors[at : at + GRAPH_ROWS], ef, at, stop) for at in range(0, len(vectors), GRAPH_ROWS)]


def extend_graphs(graphs: Sequence[Any], vectors: FloatMatrix, start: int, ef: int = HNSW_EF) -> list[Any]:
    """Graphs over ``vectors`` when ``graphs`` cover ``vectors[:start]`` already: full graphs are shared, the
    last partial one is copied and filled, new ranges get new graphs. What a merge that keeps the old main
    segment's positions costs, instead of graphs of the whole."""
    import hnswlib

    out = list(graphs)
    if out and start % GRAPH_ROWS:
        last = hnswlib.Index(out[-1])  # a copy: the old segment's views keep searching the original
        end = min(len(vectors), start - start % GRAPH_ROWS + GRAPH_ROWS)
        last.resize_index(end - (start - start % GRAPH_ROWS))
        if end > start:
            last.add_items(np.asarray(vectors[start:end], dtype=np.float32), np.arange(start, end))
        last.set_ef(ef)
        out[-1] = last
        start = end
    for at in range(start, len(vectors), GRAPH_ROWS):
        out.append(build_hnsw(vectors[at : at + GRAPH_ROWS], ef, at))
    return out


def graph_files(rows: int) -> list[str]:
    """The saved graphs of a segment of ``rows`` rows: ``hnsw.bin`` for the first range, ``hnsw-<i>.bin`` after."""
    return ["hnsw.bin" if i == 0 else f"hnsw-{i}.bin" for i in range((rows + GRAPH_ROWS - 1) // GRAPH_ROWS)]


def load_hnsw(path: Path, dim: int, size: int) -> Any:
    import hnswlib

    index = hnswlib.Index(space="ip", dim=dim)
    index.load_index(str(path), max_elements=max(1, size))
    if index.get_current_count() != size:
        raise ValueError(f"HNSW graph in {path} holds {index.get_current_count()} items, expected {size}")
    index.set_ef(HNSW_EF)
    return index


def load_graphs(directory: Path, dim: int, rows: int) -> list[Any] | None:
    """A segment's saved graphs, or ``None`` when any is missing (saved without, or by an older version)."""
    files = graph_files(rows)
    if not all((directory / f).exists() for f in files):
        return None
    return [load_hnsw(directory / f, dim, min(GRAPH_ROWS, rows - i * GRAPH_ROWS)) for i, f in enumerate(files)]


class DenseIndex:
    """One matrix of vectors (a segment's, or a whole small collection's), with optional HNSW graphs, one per
    range of ``GRAPH_ROWS`` positions (labels are positions)."""

    def __init__(
        self, vectors: FloatMatrix, approximate: bool = False, ef: int = HNSW_EF, graphs: Sequence[Any] | None = None
    ) -> None:
        self.vectors = vectors if isinstance(vectors, np.memmap) else np.ascontiguousarray(vectors, dtype=np.float32)
        self._ef = ef
        self.graphs: list[Any] = list(graphs or [])
        for graph in self.graphs:
            if graph.ef != ef:
                graph.set_ef(ef)
        if not self.graphs and approximate and len(self.vectors) > 0:
            self.graphs = build_graphs(self.vectors, ef)

    @property
    def hnsw(self) -> Any:
        """The first graph, ``None`` without graphs."""
        return self.graphs[0] if self.graphs else None

    def __len__(self) -> int:
        return int(self.vectors.shape[0])

    def scores(self, query: FloatMatrix) -> Scores:
        """Cosine similarity of every vector to the query."""
        return np.asarray(self.vectors @ np.asarray(query, dtype=np.float32), dtype=np.float32)

    def scores_at(self, query: FloatMatrix, positions: Positions) -> Scores:
        """Exact cosine of the vectors at ``positions`` (reads only those rows)."""
        if not len(positions):
            return np.zeros(0, dtype=np.float32)
        rows = np.asarray(self.vectors[np.asarray(positions, dtype=np.int64)], dtype=np.float32)
        return np.asarray(rows @ np.asarray(query, dtype=np.float32), dtype=np.float32)

    def mark_deleted(self, positions: npt.NDArray[np.int64]) -> None:
        """Tell the HNSW graphs (if any) never to return these positions again."""
        if not self.graphs:
            return
        for p in positions.tolist():
            try:
                self.graphs[int(p) // GRAPH_ROWS].mark_deleted(int(p))
            except (RuntimeError, IndexError) as exc:
                # hnswlib says "... already deleted" for a graph saved after deletes and loaded again: what
                # we wanted. Anything else ("Label not found": a position the graph never held) is a bug.
                if "already deleted" not in str(exc):
                    raise RuntimeError(f"Label not found: position {p} is in no graph ({exc})") from exc

    def approximate_search(
        self, query: FloatMatrix, k: int, live: BoolArray | None = None, allowed: BoolArray | None = None
    ) -> tuple[Positions, Scores]:
        """HNSW neighbours from every graph, with exact scores. ``live``: the positions not deleted (the graphs
        have the others marked deleted and never return them); ``allowed``: only these (a subset of
        ``live``), filtered during the graph search."""
        q = np.asarray(query, dtype=np.float32)[None, :]
        keep = allowed if allowed is not None else live
        accept = None if allowed is None else _accept(allowed)
        found: list[Positions] = []
        for i, graph in enumerate(self.graphs):
            lo, hi = i * GRAPH_ROWS, min(len(self), (i + 1) * GRAPH_ROWS)
            want = min(k, hi - lo if keep is None else int(keep[lo:hi].sum()))
            if want <= 0:
                continue
            try:
                labels = self._knn(graph, q, want, accept)
                found.append(labels[0].astype(np.int64))
            except RuntimeError:  # the graph reached fewer than ``want`` (most of it deleted or filtered): scan
                part = top_k(self.scores_at(query, np.arange(lo, hi)), want, None if keep is None else keep[lo:hi])
                found.append(part[0] + lo)
        positions = np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
        scores = self.scores_at(query, positions)
        order = np.argsort(-scores, kind="stable")[:k]
        return positions[order], scores[order]

    def _knn(self, graph: Any, q: FloatMatrix, want: int, accept: Any) -> Any:
        """``want`` labels from ``graph``. Its beam width stays ``self._ef`` at rest, so concurrent queries
        never narrow each other's; a query wanting a wider beam widens it under a lock and restores it."""
        need = 2 * want
        if need <= self._ef:
            return graph.knn_query(q, k=want, num_threads=1, filter=accept)[0]
        with _WIDE_SEARCH:
            graph.set_ef(need)
            try:
                return graph.knn_query(q, k=want, num_threads=1, filter=accept)[0]
            finally:
                graph.set_ef(self._ef)

    def search(self, query: FloatMatrix, k: int, mask: Mask | None = None) -> tuple[Positions, Scores]:
        if self.graphs and mask is None and k < len(self):
            return self.approximate_search(query, k)
        return top_k(self.scores(query), k, mask)


def _accept(allowed: BoolArray) -> Callable[[int], bool]:
    """hnswlib's filter: called with each label (position) the search meets."""

    def accept(label: int) -> bool:
        return bool(allowed[label])

    return accept


class DenseView:
    """The dense indexes of several segments as one, positions laid end to end. With ``size`` at least
    ``exact_below`` and a graph on some segment, ``search`` answers from graphs (``approximate``)."""

    def __init__(
        self, parts: Sequence[tuple[DenseIndex, int, BoolArray | None]], size: int, exact_below: int = EXACT_DENSE_BELOW
    ) -> None:
        self._parts = list(parts)
        self.size = size
        self.exact_below = exact_below
        self.offsets = np.asarray([offset for _i, offset, _l in self._parts], dtype=np.int64)

    def __len__(self) -> int:
        return self.size

    @property
    def approximate(self) -> bool:
        return self.size >= self.exact_below and any(index.graphs for index, _o, _l in self._parts)

    def scores(self, query: FloatMatrix) -> Scores:
        """Every position's exact score (a full scan)."""
        if not self._parts:
            return np.zeros(0, dtype=np.float32)
        q = np.asarray(query, dtype=np.float32)
        return np.concatenate([index.scores(q) for index, _offset, _live in self._parts])

    def scores_at(self, query: FloatMatrix, positions: Positions) -> Scores:
        """Exact scores of ``positions`` only (any order, repeats allowed)."""
        positions = np.asarray(positions, dtype=np.int64)
        out = np.zeros(positions.shape, dtype=np.float32)
        if not positions.size or not self._parts:
            return out
        part = np.searchsorted(self.offsets, positions, side="right") - 1
        for i in np.unique(part).tolist():
            index, offset, _live = self._parts[i]
            at = part == i
            out[at] = index.scores_at(query, positions[at] - offset)
        return out

    def search(self, query: FloatMatrix, k: int, mask: Mask | None = None) -> tuple[Positions, Scores]:
        """The top ``k`` positions ``mask`` allows (``None``: every position) with exact scores: by a full scan
        below ``exact_below``, else from each segment's graph (or exact scan where it has none)."""
        if not self.approximate:
            return top_k(self.scores(query), k, mask)
        positions: list[Positions] = []
        scores: list[Scores] = []
        for index, offset, live in self._parts:
            allowed = live if mask is None else mask[offset : offset + len(index)]
            pos, val = self._search_part(index, query, k, live, allowed)
            positions.append(pos + offset)
            scores.append(val)
        all_pos, all_val = np.concatenate(positions), np.concatenate(scores)
        order = np.argsort(-all_val, kind="stable")[:k]
        return all_pos[order], all_val[order]

    @staticmethod
    def _search_part(
        index: DenseIndex, query: FloatMatrix, k: int, live: BoolArray | None, allowed: BoolArray | None
    ) -> tuple[Positions, Scores]:
        n = len(index)
        if not index.graphs or k >= n:
            return top_k(index.scores(query), k, allowed)
        if allowed is None or allowed is live:
            return index.approximate_search(query, k, live)
        if live is not None:
            allowed = allowed & live  # the graph knows deletes; the mask must not bring them back
        count = int(allowed.sum())
        alive = n if live is None else int(live.sum())
        if count == alive:  # every live row allowed: the graph alone
            return index.approximate_search(query, k, live)
        if count <= max(FILTER_EXACT_ROWS, FILTER_EXACT_SHARE * alive):  # selective: exact over its rows only
            rows = np.flatnonzero(allowed).astype(np.int64)
            pos, val = top_k(index.scores_at(query, rows), k)
            return rows[pos], val
        return index.approximate_search(query, k, live, allowed)


class QueryScores:
    """One query's dense scores, as strategies read them: ``top`` candidates, scores ``at`` positions, and the
    ``full`` array for those that need every position. Exact view: all three read one full scan (what every
    strategy did before); approximate view: candidates from the graphs, scores read for just the positions."""

    def __init__(self, view: DenseView, query: FloatMatrix) -> None:
        self.view = view
        self.query = np.asarray(query, dtype=np.float32)
        self.exact = not view.approximate
        self._full: Scores | None = None
        self._top: tuple[int, Mask | None, tuple[Positions, Scores]] | None = None  # the last (k, mask, result)
        self._max: float | None = None

    def __len__(self) -> int:
        return len(self.view)

    def full(self) -> Scores:
        """Every position's score (a full scan, once)."""
        if self._full is None:
            self._full = self.view.scores(self.query)
        return self._full

    def top(self, k: int, mask: Mask | None = None) -> tuple[Positions, Scores]:
        """The best ``k`` positions ``mask`` allows, best first, with exact scores."""
        if self.exact:
            return top_k(self.full(), k, mask)
        if self._top is not None and self._top[0] >= k and self._top[1] is mask:
            pos, val = self._top[2]
            return pos[:k], val[:k]
        found = self.view.search(self.query, k, mask)
        self._top = (k, mask, found)
        return found

    def at(self, positions: Positions) -> Scores:
        """Exact scores of ``positions``."""
        positions = np.asarray(positions, dtype=np.int64)
        if self.exact or self._full is not None:
            return self.full()[positions]
        return self.view.scores_at(self.query, positions)

    def max(self) -> float:
        """The best score of any position (0 when there is none)."""
        if self._max is None:
            if self.exact:
                full = self.full()
                self._max = float(full.max()) if full.size else 0.0
            else:
                _pos, val = self.top(1)
                self._max = float(val[0]) if val.size else 0.0
        return self._max

    @overload
    def __getitem__(self, positions: int) -> np.float32: ...

    @overload
    def __getitem__(self, positions: Positions) -> Scores: ...

    def __getitem__(self, positions: int | Positions) -> np.float32 | Scores:
        if isinstance(positions, (int, np.integer)):
            return np.float32(self.at(np.asarray([positions], dtype=np.int64))[0])
        return self.at(positions)
