"""The async API: the same engine, with every blocking call run on a bounded thread pool so that one slow
query never blocks an event loop (the server, the MCP server and the framework adapters use it).

    engine = AsyncEngine(Engine("store"))
    docs = await engine.collection("docs")
    result = await docs.retrieve("what is x?", strategy="auto", k=5)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from waypost.answer.model import Answer, AnswerStream
from waypost.base import CollectionInfo
from waypost.collection import Collection
from waypost.engine import Engine
from waypost.filters.model import Filter
from waypost.ingest.pipeline import IngestReport
from waypost.post.passages import PassageConfig
from waypost.types import Document, RetrievalResult

T = TypeVar("T")
DEFAULT_THREADS = 8


class AsyncCollection:
    def __init__(self, collection: Collection, run: Callable[..., Any]) -> None:
        self.sync = collection
        self._run = run

    @property
    def name(self) -> str:
        return self.sync.name

    async def info(self) -> CollectionInfo:
        info: CollectionInfo = await self._run(lambda: self.sync.info)
        return info

    async def retrieve(
        self,
        query: str,
        strategy: str = "auto",
        k: int = 10,
        filters: Filter | None = None,
        params: Mapping[str, object] | None = None,
        passages: PassageConfig | None = None,
        rerank: str | None = None,
    ) -> RetrievalResult:
        call = partial(
            self.sync.retrieve, query, strategy, k, filters=filters, params=params, passages=passages, rerank=rerank
        )
        result: RetrievalResult = await self._run(call)
        return result

    async def answer(
        self, question: str, strategy: str = "auto", k: int = 5, params: Mapping[str, object] | None = None
    ) -> Answer:
        answer: Answer = await self._run(partial(self.sync.answer, question, strategy, k, params))
        return answer

    async def stream_answer(
        self, question: str, strategy: str = "auto", k: int = 5, params: Mapping[str, object] | None = None
    ) -> AnswerStream:
        """Retrieval has run when this returns (``stream.hits``); pull tokens with ``next_token``."""
        stream: AnswerStream = await self._run(partial(self.sync.stream_answer, question, strategy, k, params))
        return stream

    async def next_token(self, stream: AnswerStream) -> str | None:
        """The stream's next token, or None when it is spent."""
        token: str | None = await self._run(partial(next, iter(stream.tokens), None))
        return token

    async def add(self, documents: Iterable[Document]) -> IngestReport:
        report: IngestReport = await self._run(partial(self.sync.add, list(documents)))
        return report

    async def delete(self, ids: Iterable[str]) -> int:
        removed: int = await self._run(partial(self.sync.delete, list(ids)))
        return removed

    async def get(self, doc_id: str) -> Document | None:
        doc: Document | None = await self._run(partial(self.sync.get, doc_id))
        return doc


class AsyncEngine:
    """An ``Engine`` for async code. ``threads`` bounds how many of its calls run at once."""

    def __init__(self, engine: Engine, threads: int = DEFAULT_THREADS) -> None:
        self.sync = engine
        self._threads = threads
        self._limiter: anyio.CapacityLimiter | None = None

    async def run(self, call: Callable[[], T]) -> T:
        """Run one blocking call of the engine on the pool."""
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self._threads)
        return await anyio.to_thread.run_sync(call, limiter=self._limiter)

    async def collections(self) -> list[CollectionInfo]:
        return await self.run(self.sync.collections)

    async def collection(self, name: str, create: bool = False, language: str | None = None) -> AsyncCollection:
        coll = await self.run(partial(self.sync.collection, name, create, language))
        return AsyncCollection(coll, self.run)

    async def search(self, query: str, k: int = 10, collections: list[str] | None = None) -> RetrievalResult:
        return await self.run(partial(self.sync.search, query, k, collections))

    async def aclose(self) -> None:
        await self.run(self.sync.close)

    async def __aenter__(self) -> AsyncEngine:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def open_async(path: str, threads: int = DEFAULT_THREADS, **config: Any) -> AsyncEngine:
    """``AsyncEngine`` over the store at ``path`` (``config``: ``EngineConfig`` fields)."""
    from waypost.engine import EngineConfig

    return AsyncEngine(Engine(path, EngineConfig(**config)), threads)
