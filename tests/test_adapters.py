"""The LangChain and LlamaIndex adapters over a local store and over the live server: LangChain's standard
retriever suite, and what each hit carries (text, score, span, ids, metadata), sync against async."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document as LCDocument
from langchain_tests.integration_tests import RetrieversIntegrationTests
from llama_index.core.schema import NodeWithScore, TextNode

from tests.adapter_corpus import CORPUS, QUERY, TEXTS
from tests.server_fixtures import LiveServer
from waypost.adapters.langchain import WaypostRetriever
from waypost.adapters.llamaindex import WaypostLlamaRetriever
from waypost.adapters.source import LocalSource, RemoteSource
from waypost.aio import AsyncEngine
from waypost.base import Embedder
from waypost.client import AsyncWaypostClient, NotFoundError, UnauthorizedError, WaypostClient
from waypost.engine import Engine, EngineConfig
from waypost.errors import WaypostError
from waypost.filters.model import Condition, Op

COLLECTION = "adapters"
REMOTE = "test_adapters_corpus"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """The standard suite's one async test runs under anyio's marker (it ignores the suite's sync tests)."""
    return "asyncio"


@pytest.fixture(scope="module")
def local_engine(tmp_path_factory: pytest.TempPathFactory, minilm: Embedder) -> Iterator[Engine]:
    engine = Engine(tmp_path_factory.mktemp("adapters") / "store", EngineConfig(chunk_tokens=64))
    engine.register_embedder(minilm)
    engine.collection(COLLECTION, create=True).add(CORPUS)
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def remote(server: LiveServer) -> LiveServer:
    """The corpus uploaded as JSON to the live server (tenant alpha), its job waited for."""
    with WaypostClient(server.url, server.keys["alpha:write"]) as client:
        client.create_collection(REMOTE, description="adapter tests")
        job = client.upload_documents(REMOTE, CORPUS)
        done = client.wait_for_job(job.id, timeout=120)
        assert done.state == "succeeded" and done.counts["added"] == len(CORPUS), done
    return server


@pytest.fixture
def read_client(remote: LiveServer) -> Iterator[WaypostClient]:
    with WaypostClient(remote.url, remote.keys["alpha:read"]) as client:
        yield client


@pytest.fixture(params=["local", "server"])
def where(request: pytest.FixtureRequest) -> tuple[Any, str]:
    """(source, collection) for each mode: an ``Engine``, or a ``WaypostClient`` with a read key."""
    if request.param == "local":
        return request.getfixturevalue("local_engine"), COLLECTION
    return request.getfixturevalue("read_client"), REMOTE


# LangChain's standard suite, once per mode.


@pytest.mark.anyio
class TestLangChainLocalStandard(RetrieversIntegrationTests):
    @pytest.fixture(autouse=True)
    def _store(self, local_engine: Engine) -> None:
        self.engine = local_engine

    @property
    def retriever_constructor(self) -> type[WaypostRetriever]:
        return WaypostRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"source": self.engine, "collection": COLLECTION}

    @property
    def retriever_query_example(self) -> str:
        return QUERY


@pytest.mark.anyio
class TestLangChainServerStandard(RetrieversIntegrationTests):
    @pytest.fixture(autouse=True)
    def _server(self, read_client: WaypostClient) -> None:
        self.client = read_client

    @property
    def retriever_constructor(self) -> type[WaypostRetriever]:
        return WaypostRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"source": self.client, "collection": REMOTE}

    @property
    def retriever_query_example(self) -> str:
        return QUERY


# What the LangChain documents carry.


def check_documents(docs: list[LCDocument], k: int) -> None:
    assert len(docs) == k
    assert docs[0].metadata["document_id"] == "bees"
    scores = [d.metadata["score"] for d in docs]
    assert scores == sorted(scores, reverse=True) and all(isinstance(s, float) for s in scores)
    for doc in docs:
        meta = doc.metadata
        start, end = meta["span"]
        assert doc.page_content == TEXTS[meta["document_id"]][start:end]
        assert doc.id == meta["chunk_id"] and meta["chunk_id"].startswith(meta["document_id"] + "#")
        source = next(d for d in CORPUS if d.id == meta["document_id"])
        assert meta["title"] == source.title
        assert meta["topic"] == source.metadata["topic"] and meta["year"] == source.metadata["year"]


@pytest.mark.asyncio
async def test_langchain_documents_sync_and_async(where: tuple[Any, str]) -> None:
    source, collection = where
    retriever = WaypostRetriever(source=source, collection=collection, k=5)
    docs = retriever.invoke(QUERY)
    check_documents(docs, 5)
    adocs = await retriever.ainvoke(QUERY)
    assert [(d.id, d.metadata["span"]) for d in adocs] == [(d.id, d.metadata["span"]) for d in docs]
    assert [d.metadata["score"] for d in adocs] == pytest.approx([d.metadata["score"] for d in docs])
    check_documents(await retriever.ainvoke(QUERY, k=2), 2)


@pytest.mark.asyncio
async def test_langchain_filters_and_strategy(where: tuple[Any, str]) -> None:
    source, collection = where
    space = WaypostRetriever(source=source, collection=collection, k=5, filters={"topic": "space"})
    docs = space.invoke("pictures of the surface")
    assert docs and {d.metadata["topic"] for d in docs} == {"space"}
    # A filter object works in both modes (it travels as its JSON form to the server), per call too.
    plain = WaypostRetriever(source=source, collection=collection, k=5, strategy="bm25")
    old = await plain.ainvoke("coffee tea bread", filters=Condition("year", Op.LT, 2018))
    assert old and all(d.metadata["year"] < 2018 for d in old)
    assert {d.metadata["strategy"] for d in old} == {"bm25"}
    with pytest.raises(Exception, match="top_k"):
        plain.invoke(QUERY, top_k=3)


def test_langchain_local_and_server_agree(local_engine: Engine, read_client: WaypostClient) -> None:
    local = WaypostRetriever(source=local_engine, collection=COLLECTION, k=6).invoke(QUERY)
    served = WaypostRetriever(source=read_client, collection=REMOTE, k=6).invoke(QUERY)
    assert [d.id for d in served] == [d.id for d in local]
    assert [d.metadata["score"] for d in served] == pytest.approx([d.metadata["score"] for d in local], abs=1e-5)


def test_langchain_server_errors(remote: LiveServer) -> None:
    with pytest.raises(NotFoundError, match="no_such_collection"):
        WaypostRetriever.from_url(remote.url, remote.keys["alpha:read"], "no_such_collection").invoke(QUERY)
    # The other tenant's key does not see alpha's collection.
    with pytest.raises(NotFoundError):
        WaypostRetriever.from_url(remote.url, remote.keys["beta:read"], REMOTE).invoke(QUERY)
    with pytest.raises(UnauthorizedError):
        WaypostRetriever.from_url(remote.url, "wp_0000000000000000_nope", REMOTE).invoke(QUERY)


# LlamaIndex.


def node_rows(nodes: list[NodeWithScore]) -> list[tuple[str, float, int | None, int | None]]:
    rows = []
    for n in nodes:
        assert isinstance(n.node, TextNode) and n.score is not None
        rows.append((n.node.node_id, n.score, n.node.start_char_idx, n.node.end_char_idx))
    return rows


def check_nodes(nodes: list[NodeWithScore], k: int) -> None:
    assert len(nodes) == k
    assert nodes[0].node.metadata["document_id"] == "bees"
    for n in nodes:
        node = n.node
        assert isinstance(node, TextNode)
        meta = node.metadata
        assert [node.start_char_idx, node.end_char_idx] == meta["span"]
        assert node.text == TEXTS[meta["document_id"]][meta["span"][0] : meta["span"][1]]
        assert node.node_id == meta["chunk_id"] and node.ref_doc_id == meta["document_id"]
        assert meta["title"] and meta["topic"]
        assert "span" not in node.get_content(metadata_mode="llm") and meta["title"] in node.get_content("llm")


@pytest.mark.asyncio
async def test_llamaindex_sync_and_async_return_the_same_nodes(where: tuple[Any, str]) -> None:
    source, collection = where
    retriever = WaypostLlamaRetriever(source, collection, k=4)
    nodes = retriever.retrieve(QUERY)
    check_nodes(nodes, 4)
    anodes = await retriever.aretrieve(QUERY)
    check_nodes(anodes, 4)
    rows, arows = node_rows(nodes), node_rows(anodes)
    assert [(i, s, e) for i, _, s, e in arows] == [(i, s, e) for i, _, s, e in rows]
    assert [sc for _, sc, _, _ in arows] == pytest.approx([sc for _, sc, _, _ in rows])


@pytest.mark.asyncio
async def test_llamaindex_async_clients(local_engine: Engine, read_client: WaypostClient, remote: LiveServer) -> None:
    """An ``AsyncEngine`` or an ``AsyncWaypostClient`` given directly: the same nodes as the sync sources."""
    want_local = node_rows(WaypostLlamaRetriever(local_engine, COLLECTION, k=3).retrieve(QUERY))
    got_local = node_rows(await WaypostLlamaRetriever(AsyncEngine(local_engine), COLLECTION, k=3).aretrieve(QUERY))
    assert [r[0] for r in got_local] == [r[0] for r in want_local]
    want_remote = node_rows(WaypostLlamaRetriever(read_client, REMOTE, k=3).retrieve(QUERY))
    async with AsyncWaypostClient(remote.url, remote.keys["alpha:read"]) as aclient:
        retriever = WaypostLlamaRetriever(aclient, REMOTE, k=3)
        got_remote = node_rows(await retriever.aretrieve(QUERY))
        assert node_rows(retriever.retrieve(QUERY)) == got_remote  # the sync path makes its own client
    assert [r[0] for r in got_remote] == [r[0] for r in want_remote] == [r[0] for r in want_local]
    assert [r[1] for r in got_remote] == pytest.approx([r[1] for r in want_local], abs=1e-5)


# The async path never blocks the event loop.


async def ticks_during(call: Callable[[], Awaitable[object]]) -> int:
    """How often another task ran while ``call`` was awaited (0: the call held the loop throughout)."""
    ticks = 0
    stop = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not stop.is_set():
            await asyncio.sleep(0)
            ticks += 1

    task = asyncio.create_task(ticker())
    try:
        await call()
        return ticks
    finally:
        stop.set()
        await task


@pytest.mark.asyncio
async def test_async_retrieval_yields_to_the_event_loop(where: tuple[Any, str]) -> None:
    source, collection = where
    llama = WaypostLlamaRetriever(source, collection, k=3)
    chain = WaypostRetriever(source=source, collection=collection, k=3)
    assert await ticks_during(lambda: llama.aretrieve(QUERY)) > 0
    assert await ticks_during(lambda: chain.ainvoke(QUERY)) > 0
    # The check itself can fail: a source that answers on the loop's own thread never lets the ticker run.
    blocking = LocalSource(source) if isinstance(source, Engine) else RemoteSource(client=source)
    assert await ticks_during(lambda: asyncio.sleep(0, blocking.retrieve(collection, QUERY, 3))) <= 1


def test_frameworks_are_imported_lazily_with_a_clear_error(tmp_path: Path) -> None:
    script = (
        "import sys, waypost.adapters as a\n"
        "assert 'langchain_core' not in sys.modules and 'llama_index' not in sys.modules\n"
        "sys.modules['langchain_core'] = None; sys.modules['llama_index'] = None\n"
        "for name in ('WaypostRetriever', 'WaypostLlamaRetriever'):\n"
        "    try:\n"
        "        getattr(a, name)\n"
        "    except ImportError as exc:\n"
        "        print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "pip install 'waypost[langchain]'" in out.stdout
    assert "pip install 'waypost[llamaindex]'" in out.stdout


def test_a_source_of_the_wrong_kind_is_refused_clearly() -> None:
    with pytest.raises(WaypostError, match="source must be a waypost Engine"):
        WaypostRetriever(source="store/path", collection=COLLECTION)
    with pytest.raises(WaypostError, match="source must be a waypost Engine"):
        WaypostLlamaRetriever(object(), COLLECTION)  # type: ignore[arg-type]
    with pytest.raises(WaypostError, match="k must be a positive integer"):
        WaypostLlamaRetriever(RemoteSource(url="http://127.0.0.1:9"), COLLECTION, k=0)
