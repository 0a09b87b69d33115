from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli_runner import Cli
from tests.filter_corpora import extractor_of, movies, products
from tests.llama_server import LlamaServer
from tests.server_fixtures import LiveServer, live_server
from waypost.base import Embedder
from waypost.engine import Engine, EngineConfig
from waypost.filters.extract import FilterExtractor
from waypost.store.pg_cluster import ThrowawayCluster, postgres_available, throwaway_cluster


@pytest.fixture(scope="session")
def minilm() -> Embedder:
    """The real default model, loaded once for the whole session."""
    from waypost.embeddings.sentence_transformer import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder("all-MiniLM-L6-v2")


@pytest.fixture
def engine(tmp_path: Path, minilm: Embedder) -> Iterator[Engine]:
    eng = Engine(tmp_path / "store", EngineConfig(chunk_tokens=64))
    eng.register_embedder(minilm)
    yield eng
    eng.close()


@pytest.fixture(scope="module")
def movie_extractor() -> FilterExtractor:
    """The filter extractor of the invented movie catalogue (``tests/filter_corpora.py``)."""
    return extractor_of(movies())


@pytest.fixture(scope="module")
def product_extractor() -> FilterExtractor:
    """The filter extractor of the invented product catalogue."""
    return extractor_of(products())


@pytest.fixture(scope="session")
def cli(minilm: Embedder) -> Cli:
    """Run the ``waypost`` command in-process: ``cli("query", "x", "--store", path)``."""
    return Cli(minilm)


@pytest.fixture(scope="session")
def llama_server() -> Iterator[LlamaServer]:
    """One SmolLM2 llama.cpp server for the whole session, started when a test first asks for it."""
    srv = LlamaServer()
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory, minilm: Embedder) -> Iterator[LiveServer]:
    """One real waypost server on 127.0.0.1 for the session (tenants alpha and beta; keys of every scope).
    Tests make their own collections, named after themselves, so they never step on each other."""
    with live_server(tmp_path_factory.mktemp("server"), minilm) as srv:
        yield srv


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[ThrowawayCluster]:
    """One throwaway PostgreSQL cluster (with pgvector) on 127.0.0.1 for the session."""
    if not postgres_available():
        message = "PostgreSQL 15 with pgvector is not installed (make install-dev runs scripts/install_postgres.sh)"
        if os.environ.get("CI") == "true":  # CI must run the PostgreSQL conformance, never skip it
            pytest.fail(message)
        pytest.skip(message)
    with throwaway_cluster() as cluster:
        yield cluster


@pytest.fixture
def pg_url(pg_cluster: ThrowawayCluster) -> Iterator[str]:
    """A fresh, empty database of the session's cluster for one test; dropped afterwards."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    url = pg_cluster.create_database(name)
    yield url
    pg_cluster.drop_database(name)
