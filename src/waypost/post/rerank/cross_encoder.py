"""A sentence-transformers cross-encoder as a reranker, loaded from a local folder only.

The model reads each (query, hit text) pair of the best ``depth`` hits together and scores it; those hits are
sorted by that score, the rest keep their order behind them. Nothing is downloaded: the path must exist when
the reranker is made, and the model is loaded with ``local_files_only`` on first use. If loading or scoring
fails, the ``fallback`` reranker's result is returned with a note saying why.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from waypost.base import Reranker
from waypost.errors import WaypostError
from waypost.types import Hit, RetrievalResult

_MODELS: dict[tuple[str, str, int, float], Any] = {}  # loaded models, by folder, device, length and mtime
_MODELS_LOCK = threading.Lock()
MAX_SHARED_MODELS = 4  # loaded models kept for later rerankers; the oldest loaded goes first

logger = logging.getLogger("waypost.rerank")


def _share(key: tuple[str, str, int, float], model: Any) -> None:
    """Keep a loaded model for later rerankers: a retrained folder (new mtime) replaces its old model, and
    at most ``MAX_SHARED_MODELS`` stay loaded."""
    with _MODELS_LOCK:
        for old in [k for k in _MODELS if k[:3] == key[:3] and k != key]:
            del _MODELS[old]
        _MODELS[key] = model
        while len(_MODELS) > MAX_SHARED_MODELS:
            del _MODELS[next(iter(_MODELS))]


def _folder_stamp(path: str) -> float:
    """The newest modification time in the model folder, so a replaced model is loaded afresh."""
    try:
        return max((f.stat().st_mtime for f in Path(path).iterdir()), default=0.0)
    except OSError:  # the folder is unreadable or gone: loading it next says so, with the path
        return 0.0


class CrossEncoderReranker:
    name = "cross-encoder"

    def __init__(
        self,
        path: str,
        fallback: Reranker,
        depth: int = 30,
        batch_size: int = 16,
        *,
        device: str = "cpu",
        max_length: int = 512,
    ) -> None:
        folder = Path(path).expanduser()
        if not folder.exists():
            raise WaypostError(f"cross-encoder model not found: {path} (rerank models load from a local folder only)")
        if not folder.is_dir():
            raise WaypostError(f"cross-encoder model must be a folder saved by sentence-transformers, got file {path}")
        if depth < 1 or batch_size < 1:
            raise WaypostError(f"cross-encoder depth and batch size must be at least 1, got {depth} and {batch_size}")
        self.path = str(folder)
        self.fallback = fallback
        self.depth = depth
        self.batch_size = batch_size
        self.device = device
        self.max_length = max_length
        self._model: Any = None
        self._load_error: str | None = None  # a failed load is not retried on every query
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is not None:
                return self._model
            if self._load_error is not None:
                raise WaypostError(self._load_error)
            key = (self.path, self.device, self.max_length, _folder_stamp(self.path))
            with _MODELS_LOCK:
                shared = _MODELS.get(key)
            if shared is not None:  # loaded by an earlier reranker (the engine makes one per query)
                self._model = shared
                return shared
            try:
                if not Path(self.path).is_dir():
                    raise WaypostError(f"model folder {self.path} is gone")
                from sentence_transformers import CrossEncoder
                from transformers.utils import logging as hf_logging

                from waypost.embeddings.sentence_transformer import limit_blas_threads

                limit_blas_threads()
                hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
                self._model = CrossEncoder(
                    self.path,
                    device=self.device,
                    local_files_only=True,  # never reach for the hub, whatever the environment says
                    token=False,
                    trust_remote_code=False,
                    max_length=self.max_length,
                )
            except Exception as exc:
                self._load_error = f"cannot load {self.path}: {short_reason(exc)}"
                raise WaypostError(self._load_error) from exc
            _share(key, self._model)
            return self._model

    def scores(self, query: str, texts: list[str]) -> list[float]:
        """The model's score of each (query, text) pair; higher is more relevant."""
        model = self._load()
        raw = model.predict(
            [(query, text) for text in texts],
            batch_size=self.batch_size,
            show_progress_bar=False,
            convert_to_numpy=True,
        )
        values = np.asarray(raw, dtype=np.float64)
        if values.ndim == 2 and values.shape[1] == 1:
            values = values[:, 0]
        if values.shape != (len(texts),):
            raise WaypostError(f"the model gives {values.shape[-1]} scores a pair; a reranker needs one")
        if not np.all(np.isfinite(values)):
            raise WaypostError("the model gave a non-finite score")
        return [float(v) for v in values]

    def rerank(self, query: str, result: RetrievalResult) -> RetrievalResult:
        if not result.hits:
            return result
        t0 = time.perf_counter()
        head = result.hits[: self.depth]
        try:
            values = self.scores(query, [hit.chunk.text for hit in head])
        except Exception as exc:  # any model failure: the fallback answers, the note and log say why
            logger.warning("cross-encoder %s failed, fell back to %s: %s", self.path, self.fallback.name, exc)
            out = copy_result(self.fallback.rerank(query, result))
            out.explanation.notes.append(
                f"rerank: cross-encoder failed ({short_reason(exc)}); fell back to {self.fallback.name}"
            )
            out.explanation.timings_ms["rerank"] = (time.perf_counter() - t0) * 1000.0
            return out
        order = sorted(range(len(head)), key=lambda i: -values[i])  # stable: ties keep the retrieval order
        ranked = [rescored(head[i], "cross_encoder", values[i]) for i in order]
        out = copy_result(result)
        out.hits = [*ranked, *result.hits[self.depth :]]
        out.explanation.timings_ms["rerank"] = (time.perf_counter() - t0) * 1000.0
        out.explanation.notes.append(f"rerank: cross-encoder {self.path}, {len(head)} candidates")
        return out


# -- shared by the model rerankers -----------------------------------------------------------------


def copy_result(result: RetrievalResult) -> RetrievalResult:
    """A result whose hit list, notes, timings and LLM accounting can change without touching ``result``."""
    expl = result.explanation
    llm = expl.llm
    if llm is not None:
        llm = replace(llm, timings_ms=dict(llm.timings_ms), fallbacks=list(llm.fallbacks))
    return RetrievalResult(
        list(result.hits), replace(expl, timings_ms=dict(expl.timings_ms), notes=list(expl.notes), llm=llm)
    )


def rescored(hit: Hit, stage: str, score: float) -> Hit:
    """``hit`` with the reranker's score as its score and under ``stage`` in its provenance."""
    stage_scores = {**hit.provenance.stage_scores, stage: round(score, 6)}
    return replace(hit, score=score, provenance=replace(hit.provenance, stage_scores=stage_scores))


def short_reason(exc: BaseException) -> str:
    """One line saying what went wrong, short enough for a note."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."
