"""Where an adapter's hits come from: a local store (``Engine`` / ``AsyncEngine``) or a server
(``WaypostClient`` / ``AsyncWaypostClient``), behind one small interface with a sync and a truly async call."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Protocol, runtime_checkable

from waypost.aio import AsyncEngine
from waypost.client import AsyncWaypostClient, WaypostClient
from waypost.engine import Engine
from waypost.errors import InvalidInputError
from waypost.filters.model import And, Condition, Filter, Or, from_obj
from waypost.server.models import HitOut
from waypost.types import Hit

FilterLike = Filter | Mapping[str, Any]


@dataclass(frozen=True)
class SourceHit:
    """One hit, the same whether it came from a local store or over HTTP."""

    chunk_id: str
    document_id: str
    title: str
    text: str
    start: int
    end: int
    score: float
    strategy: str
    section: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def span(self) -> list[int]:
        """``[start, end)``: characters of the stored document's text."""
        return [self.start, self.end]


def local_hit(hit: Hit) -> SourceHit:
    return SourceHit(
        chunk_id=hit.chunk.id,
        document_id=hit.chunk.document_id,
        title=hit.provenance.document_title,
        text=hit.chunk.text,
        start=hit.chunk.start,
        end=hit.chunk.end,
        score=float(hit.score),
        strategy=hit.strategy,
        section=tuple(hit.chunk.section),
        metadata=dict(hit.metadata),
    )


def remote_hit(hit: HitOut) -> SourceHit:
    start, end = hit.span
    return SourceHit(
        chunk_id=hit.chunk_id,
        document_id=hit.document_id,
        title=hit.title,
        text=hit.text,
        start=start,
        end=end,
        score=hit.score,
        strategy=hit.strategy,
        section=tuple(hit.section),
        metadata=dict(hit.metadata),
    )


def filter_obj(flt: FilterLike) -> dict[str, Any]:
    """A filter as the JSON object the server takes (``from_obj`` reads it back)."""
    if isinstance(flt, Mapping):
        return dict(flt)
    if isinstance(flt, Condition):
        value = flt.value.isoformat() if isinstance(flt.value, date) else flt.value
        return {"field": flt.field, "op": flt.op.value, "value": value}
    if isinstance(flt, And | Or):
        return {"and" if isinstance(flt, And) else "or": [filter_obj(i) for i in flt.items]}
    raise InvalidInputError(f"filters must be a filter object or a JSON filter mapping, got {type(flt).__name__}")


def local_filter(flt: FilterLike | None) -> Filter | None:
    if flt is None or isinstance(flt, Condition | And | Or):
        return flt
    return from_obj(dict(flt))


@runtime_checkable
class Source(Protocol):
    def retrieve(
        self, collection: str, query: str, k: int, strategy: str = "auto", filters: FilterLike | None = None
    ) -> list[SourceHit]: ...

    async def aretrieve(
        self, collection: str, query: str, k: int, strategy: str = "auto", filters: FilterLike | None = None
    ) -> list[SourceHit]: ...


class LocalSource:
    """A store opened in this process. The async call goes through ``AsyncCollection.retrieve`` (the engine's
    bounded thread pool), so it never blocks the event loop."""

    def __init__(self, engine: Engine | AsyncEngine) -> None:
        if isinstance(engine, AsyncEngine):
            self.engine, self.async_engine = engine.sync, engine
        else:
            self.engine, self.async_engine = engine, AsyncEngine(engine)

    def retrieve(
        self, collection: str, query: str, k: int, strategy: str = "auto", filters: FilterLike | None = None
    ) -> list[SourceHit]:
        result = self.engine.collection(collection).retrieve(query, strategy, k, filters=local_filter(filters))
        return [local_hit(h) for h in result.hits]

    async def aretrieve(
        self, collection: str, query: str, k: int, strategy: str = "auto", filters: FilterLike | None = None
    ) -> list[SourceHit]:
        coll = await self.async_engine.collection(collection)
        result = await coll.retrieve(query, strategy, k, filters=local_filter(filters))
        return [local_hit(h) for h in result.hits]


class RemoteSource:
    """A waypost server. Give it clients, or a URL and key. Without an ``AsyncWaypostClient`` each async call
    opens a short-lived one on the running loop (an httpx pool cannot move between event loops)."""

    def __init__(
        self,
        client: WaypostClient | None = None,
        async_client: AsyncWaypostClient | None = None,
        *,
        url: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
    ) -> None:
        known = client or async_client
        self.url = url or (known.url if known else "")
        if not self.url:
            raise InvalidInputError("a RemoteSource needs a server URL or a client")
        self.api_key = api_key if api_key is not None else (known.api_key if known else None)
        self.timeout = timeout if timeout is not None else (known.timeout if known else 60.0)
        self.client = client or WaypostClient(self.url, self.api_key, self.timeout)
        self.async_client = async_client

    def retrieve(
        self, collection: str, query: str, k: int, strategy: str = "auto", filters: FilterLike | None = None
    ) -> list[SourceHit]:
        body_filter = None if filters is None else filter_obj(filters)
        out = self.client.retrieve(collection, query, strategy=strategy, k=k, filters=body_filter)
        return [remote_hit(h) for h in out.hits]

    async def aretrieve(
        self, collection: str, query: str, k: int, strategy: str = "auto", filters: FilterLike | None = None
    ) -> list[SourceHit]:
        body_filter = None if filters is None else filter_obj(filters)
        if self.async_client is not None:
            out = await self.async_client.retrieve(collection, query, strategy=strategy, k=k, filters=body_filter)
        else:
            async with AsyncWaypostClient(self.url, self.api_key, self.timeout) as client:
                out = await client.retrieve(collection, query, strategy=strategy, k=k, filters=body_filter)
        return [remote_hit(h) for h in out.hits]

    def close(self) -> None:
        self.client.close()


SourceLike = Source | Engine | AsyncEngine | WaypostClient | AsyncWaypostClient


def as_source(obj: object) -> Source:
    """A ``Source`` for an engine, an async engine, a client or an async client (a ``Source`` passes through)."""
    if isinstance(obj, Engine | AsyncEngine):
        return LocalSource(obj)
    if isinstance(obj, WaypostClient):
        return RemoteSource(client=obj)
    if isinstance(obj, AsyncWaypostClient):
        return RemoteSource(async_client=obj)
    if isinstance(obj, Source):
        return obj
    raise InvalidInputError(
        "source must be a waypost Engine or AsyncEngine (a local store), a WaypostClient or AsyncWaypostClient "
        f"(a server), or a Source; got {type(obj).__name__}"
    )
