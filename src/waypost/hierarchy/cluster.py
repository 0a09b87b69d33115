"""RAPTOR's clustering: UMAP to a few dimensions (a global pass, then local passes inside each global
cluster), Gaussian mixtures with the number of components chosen by BIC, and soft membership."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatMatrix = npt.NDArray[np.float32]


@dataclass(frozen=True)
class ClusterConfig:
    dimensions: int = 10  # UMAP output dimensions
    threshold: float = 0.1  # a node joins every cluster whose membership probability exceeds this
    max_clusters: int = 50  # BIC is evaluated for 1..max_clusters components (on a geometric grid past 16)
    clusters: int | None = None  # manual override of the BIC choice (global pass)
    seed: int = 224


def _reduce(vectors: FloatMatrix, neighbors: int, config: ClusterConfig) -> FloatMatrix:
    n = len(vectors)
    if n <= config.dimensions + 2:
        return vectors
    import umap  # imported on use: numba compiles on first import

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reducer = umap.UMAP(
            n_neighbors=max(2, min(neighbors, n - 1)),
            n_components=config.dimensions,
            metric="cosine",
            random_state=config.seed,
            n_jobs=1,
            init="random" if n < 4 * config.dimensions else "spectral",
        )
        return np.asarray(reducer.fit_transform(vectors), dtype=np.float32)


def _candidate_counts(n: int, cap: int) -> list[int]:
    top = max(1, min(cap, n - 1))
    counts = list(range(1, min(top, 16) + 1))
    k = 16
    while k < top:
        k = min(top, int(k * 1.3) + 1)
        counts.append(k)
    return counts


def _mixture(points: FloatMatrix, config: ClusterConfig, fixed: int | None) -> npt.NDArray[np.float64]:
    """Membership probabilities (points × components) of the BIC-best Gaussian mixture."""
    from sklearn.mixture import GaussianMixture

    n = len(points)
    if n < 3:
        return np.ones((n, 1))
    counts = [min(fixed, n)] if fixed else _candidate_counts(n, config.max_clusters)
    best: tuple[float, GaussianMixture] | None = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in counts:
            model = GaussianMixture(k, random_state=config.seed, reg_covar=1e-5).fit(points)
            bic = float(model.bic(points))
            if best is None or bic < best[0]:
                best = (bic, model)
            elif k > 16 and bic > best[0] * 1.0 + abs(best[0]) * 0.05:
                break  # the curve is rising: stop early on the coarse grid
    assert best is not None
    return np.asarray(best[1].predict_proba(points))


def _members(probabilities: npt.NDArray[np.float64], threshold: float) -> list[list[int]]:
    clusters = [np.flatnonzero(probabilities[:, c] > threshold).tolist() for c in range(probabilities.shape[1])]
    best = probabilities.argmax(axis=1)
    for i, c in enumerate(best):  # every point belongs somewhere even when no probability passes
        if i not in clusters[c]:
            clusters[c].append(i)
    return [sorted(c) for c in clusters if c]


def soft_clusters(
    vectors: FloatMatrix,
    costs: Sequence[int],
    budget: int,
    config: ClusterConfig,
    progress: Callable[[str], None] | None = None,
) -> list[list[int]]:
    """Clusters of ``vectors`` (indices; a point may be in several). Any cluster whose text (``costs``,
    tokens per point) exceeds ``budget`` is clustered again on its own, as RAPTOR does."""
    n = len(vectors)
    if n == 0:
        return []
    if n < 3:
        return [list(range(n))]
    global_points = _reduce(vectors, max(2, int((n - 1) ** 0.5)), config)
    global_clusters = _members(_mixture(global_points, config, config.clusters), config.threshold)
    out: list[list[int]] = []
    for members in global_clusters:
        if len(members) <= config.dimensions + 1 or (len(global_clusters) == 1 and n < 4 * config.dimensions):
            local = [list(range(len(members)))]
        else:
            points = _reduce(vectors[members], 10, config)
            local = _members(_mixture(points, config, None), config.threshold)
        for cluster in local:
            out.extend(_fit_budget([members[i] for i in cluster], vectors, costs, budget, config, depth=0))
    if progress is not None:
        progress(f"{len(out)} clusters over {n} nodes")
    return _unique(out)


def _fit_budget(
    members: list[int], vectors: FloatMatrix, costs: Sequence[int], budget: int, config: ClusterConfig, depth: int
) -> list[list[int]]:
    if sum(costs[i] for i in members) <= budget or len(members) <= 1:
        return [members]
    if depth < 4 and len(members) > 3:
        points = _reduce(vectors[members], 10, config) if len(members) > 4 * config.dimensions else vectors[members]
        parts = _members(_mixture(points, config, None), config.threshold)
        if len(parts) > 1:
            out: list[list[int]] = []
            for part in parts:
                out.extend(_fit_budget([members[i] for i in part], vectors, costs, budget, config, depth + 1))
            return out
    # no useful split: cut into consecutive pieces that fit
    pieces: list[list[int]] = [[]]
    used = 0
    for i in members:
        if pieces[-1] and used + costs[i] > budget:
            pieces.append([])
            used = 0
        pieces[-1].append(i)
        used += costs[i]
    return pieces


def _unique(clusters: list[list[int]]) -> list[list[int]]:
    seen: set[tuple[int, ...]] = set()
    out = []
    for c in clusters:
        key = tuple(sorted(set(c)))
        if key and key not in seen:
            seen.add(key)
            out.append(list(key))
    return out


def runs(count: int, width: int = 3, stride: int = 2) -> list[list[int]]:
    """Overlapping runs of consecutive positions: a long document's discussions are runs of turns."""
    if count <= width:
        return [list(range(count))]
    starts = list(range(0, count - width + 1, stride))
    if starts[-1] + width < count:
        starts.append(count - width)
    return [list(range(s, s + width)) for s in starts]
