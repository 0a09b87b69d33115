"""Any OpenAI-compatible ``/embeddings`` endpoint (OpenAI, Ollama, vLLM, llama.cpp, LM Studio)."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Sequence

import numpy as np

from waypost.base import FloatMatrix
from waypost.errors import WaypostError


class OpenAICompatibleEmbedder:
    def __init__(
        self, model: str, base_url: str, api_key: str | None = None, batch_size: int = 64, timeout: float = 60.0
    ) -> None:
        if not model:
            raise WaypostError("an OpenAI-compatible embedder needs a model name: openai:MODEL@URL")
        self._model = model
        self._url = base_url.rstrip("/") + "/embeddings"
        self._api_key = api_key
        self._batch_size = batch_size
        self._timeout = timeout
        self._dim: int | None = None

    @property
    def model_id(self) -> str:
        return f"openai:{self._model}"

    @property
    def dimension(self) -> int:
        if self._dim is None:
            self._dim = int(self.embed_documents(["dimension probe"]).shape[1])
        return self._dim

    def _post(self, texts: list[str]) -> FloatMatrix:
        key = self._api_key or os.environ.get("OPENAI_API_KEY", "")
        body = json.dumps({"model": self._model, "input": texts}).encode()
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        request = urllib.request.Request(self._url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                payload = json.loads(response.read())
        except (urllib.error.URLError, TimeoutError, json.JSONDecodeError) as exc:
            raise WaypostError(f"embedding request to {self._url} failed: {exc}") from exc
        try:
            rows = sorted(payload["data"], key=lambda d: d["index"])
            vecs = np.asarray([r["embedding"] for r in rows], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise WaypostError(f"unexpected embeddings response from {self._url}: {str(payload)[:200]}") from exc
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        return np.asarray(vecs / np.maximum(norms, 1e-12), dtype=np.float32)

    def embed_documents(self, texts: Sequence[str]) -> FloatMatrix:
        parts = [self._post(list(texts[i : i + self._batch_size])) for i in range(0, len(texts), self._batch_size)]
        if not parts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        out = np.vstack(parts)
        self._dim = int(out.shape[1])
        return out

    def embed_query(self, text: str) -> FloatMatrix:
        vec: FloatMatrix = self.embed_documents([text])[0]
        return vec
