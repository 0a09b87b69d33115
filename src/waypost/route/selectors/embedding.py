"""The embedding selector: example queries per pipeline (a JSON file: a small generic set ships with the
package, a trained profile may bring its own), embedded once with the collection's embedder; a query
goes to the pipeline whose examples it is closest to."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from waypost.base import Embedder
from waypost.embeddings.query_vectors import query_vector
from waypost.errors import WaypostError
from waypost.route.base import Choice, Features, Pipeline
from waypost.route.selectors.common import by_preference, fallback

EXEMPLARS = Path(__file__).with_name("exemplars.json")
FORMAT = "waypost-exemplars/1"
TOP = 3  # a pipeline's score: the mean cosine of its 3 closest examples
MARGIN_SCALE = 10.0  # cosine margin to confidence: 0.05 ahead of the next gives about 0.62


def load_exemplars(path: str | Path | None = None) -> dict[Pipeline, list[str]]:
    """Pipeline -> example queries, from ``path`` or the shipped file."""
    where = Path(path) if path is not None else EXEMPLARS
    try:
        raw = json.loads(where.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise WaypostError(f"cannot read router exemplars {where}: {exc}") from None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT or not isinstance(raw.get("exemplars"), list):
        raise WaypostError(f"{where} is not a waypost exemplar file (format {FORMAT!r})")
    out: dict[Pipeline, list[str]] = {}
    for entry in raw["exemplars"]:
        queries = entry.get("queries") if isinstance(entry, dict) else None
        if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
            raise WaypostError(f"{where}: each exemplar entry is {{'pipeline': ..., 'queries': [text, ...]}}")
        out.setdefault(Pipeline.from_dict(entry.get("pipeline")), []).extend(queries)
    return out


class EmbeddingSelector:
    name = "embedding"

    def __init__(self, embedder: Embedder, exemplars: dict[Pipeline, list[str]] | None = None) -> None:
        self.embedder = embedder
        self.exemplars = exemplars if exemplars is not None else load_exemplars()
        self._vectors: dict[Pipeline, npt.NDArray[np.float32]] | None = None
        self._lock = threading.Lock()

    def vectors(self) -> dict[Pipeline, npt.NDArray[np.float32]]:
        """The examples' embeddings, computed once."""
        with self._lock:
            if self._vectors is None:
                items = [(p, q) for p, qs in self.exemplars.items() for q in qs]
                matrix = np.asarray(self.embedder.embed_documents([q for _, q in items]), dtype=np.float32)
                matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-9)
                out: dict[Pipeline, list[npt.NDArray[np.float32]]] = {}
                for (pipeline, _q), row in zip(items, matrix, strict=True):
                    out.setdefault(pipeline, []).append(row)
                self._vectors = {p: np.stack(rows) for p, rows in out.items()}
            return self._vectors

    def select(self, query: str, features: Features, candidates: Sequence[Pipeline]) -> Choice:
        vectors = self.vectors()
        known = [p for p in candidates if p in vectors]
        if not known:
            chosen = fallback(candidates)
            return Choice(chosen, 0.0, "no examples for any runnable pipeline: the default", self.name)
        q = np.asarray(query_vector(self.embedder, query), dtype=np.float32).reshape(-1)
        q = q / max(float(np.linalg.norm(q)), 1e-9)
        scores: dict[Pipeline, float] = {}
        for p in known:
            sims = vectors[p] @ q
            scores[p] = float(np.sort(sims)[-TOP:].mean())
        ranked = sorted(scores.items(), key=lambda item: -item[1])
        best, score = ranked[0]
        margin = score - ranked[1][1] if len(ranked) > 1 else score
        confidence = float(1.0 / (1.0 + np.exp(-MARGIN_SCALE * margin)))
        reason = f"closest to the examples of {best.label} (cosine {score:.2f}"
        reason += f", next {ranked[1][0].label} {ranked[1][1]:.2f})" if len(ranked) > 1 else ")"
        order = ranked + [(p, 0.0) for p in by_preference(best, candidates) if p not in scores]
        return Choice(best, confidence, reason, self.name, order)
