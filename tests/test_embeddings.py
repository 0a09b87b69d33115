"""Embedding providers against real models and a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from waypost.base import Embedder
from waypost.embeddings.cache import CachedEmbedder
from waypost.embeddings.openai_compat import OpenAICompatibleEmbedder
from waypost.errors import WaypostError


def test_minilm_vectors_are_normalised_and_meaningful(minilm: Embedder) -> None:
    vecs = minilm.embed_documents(["A cat sits on the mat.", "A kitten rests on a rug.", "Stock markets fell."])
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, rtol=1e-5)
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2] + 0.3
    np.testing.assert_allclose(minilm.embed_query("A cat sits on the mat."), vecs[0], atol=1e-5)


def test_cache_embeds_each_text_once(minilm: Embedder, tmp_path: Path) -> None:
    cache = CachedEmbedder(minilm, tmp_path / "cache.sqlite")
    first = cache.embed_documents(["alpha text", "beta text", "alpha text"])
    assert (cache.hits, cache.misses) == (1, 2)  # the repeat inside one batch is not embedded again
    cache.close()
    reopened = CachedEmbedder(minilm, tmp_path / "cache.sqlite")
    again = reopened.embed_documents(["beta text", "alpha text"])
    assert (reopened.hits, reopened.misses) == (2, 0)
    np.testing.assert_array_equal(again, first[[1, 0]])


class _Server(ThreadingHTTPServer):
    model: Embedder
    fail: bool = False


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.server.fail or self.path != "/v1/embeddings":
            self.send_response(500)
            self.end_headers()
            self.wfile.write(b"boom")
            return
        vecs = self.server.model.embed_documents(body["input"]) * 3.0  # un-normalised on purpose
        data = [{"index": i, "embedding": v.tolist()} for i, v in enumerate(vecs)][::-1]  # out of order
        payload = json.dumps({"data": data, "model": body["model"]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server(minilm: Embedder) -> Iterator[_Server]:
    srv = _Server(("127.0.0.1", 0), _Handler)
    srv.model = minilm
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def test_openai_compatible_endpoint(server: _Server, minilm: Embedder) -> None:
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    remote = OpenAICompatibleEmbedder("minilm", url, batch_size=2)
    texts = ["first text", "second text", "third text"]
    got = remote.embed_documents(texts)
    np.testing.assert_allclose(got, minilm.embed_documents(texts), atol=1e-5)
    assert remote.dimension == 384 and remote.model_id == "openai:minilm"
    server.fail = True
    with pytest.raises(WaypostError, match="embedding request"):
        remote.embed_documents(["x"])


def test_unreachable_endpoint_is_a_clear_error() -> None:
    with pytest.raises(WaypostError, match="embedding request"):
        OpenAICompatibleEmbedder("m", "http://127.0.0.1:9/v1", timeout=2).embed_documents(["x"])


def test_approximate_dense_index_agrees_with_exact(minilm: Embedder) -> None:
    from waypost.index.dense import DenseIndex

    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(2000, 384)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    exact, approx = DenseIndex(vecs), DenseIndex(vecs, approximate=True)
    overlap = [len(set(exact.search(vecs[i], 10)[0]) & set(approx.search(vecs[i], 10)[0])) for i in range(50)]
    assert np.mean(overlap) >= 9.0
    mask = np.zeros(2000, dtype=np.bool_)
    mask[:100] = True
    assert set(approx.search(vecs[5], 10, mask)[0]) <= set(range(100))


def test_an_unknown_model_name_fails_fast_without_the_network() -> None:
    """A mistyped model is not looked for online (it used to retry the hub for about 80 s)."""
    import time

    from waypost.embeddings.sentence_transformer import SentenceTransformerEmbedder

    started = time.monotonic()
    with pytest.raises(WaypostError, match="no local sentence-transformers model 'all-MiniLM-L6-v3'"):
        SentenceTransformerEmbedder("all-MiniLM-L6-v3")
    assert time.monotonic() - started < 45  # the model libraries load in here too; the hub retries took 80 s
