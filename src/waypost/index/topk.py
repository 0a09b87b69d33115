"""Top-k selection over score arrays, honouring an optional boolean pre-filter mask."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Scores = npt.NDArray[np.float32]
Positions = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]


def top_k(scores: Scores, k: int, mask: Mask | None = None) -> tuple[Positions, Scores]:
    """Positions of the ``k`` best scores (descending); masked-out positions never appear."""
    if mask is not None:
        candidates = np.flatnonzero(mask)
        sub = scores[candidates]
    else:
        candidates = None
        sub = scores
    k = min(k, sub.shape[0])
    if k <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    part = np.argpartition(-sub, k - 1)[:k] if k < sub.shape[0] else np.arange(sub.shape[0])
    order = part[np.argsort(-sub[part], kind="stable")]
    positions = order if candidates is None else candidates[order]
    return positions.astype(np.int64), scores[positions].astype(np.float32)
