"""The async API returns what the sync one does, and runs calls concurrently on its pool."""

from __future__ import annotations

import asyncio
import time

import pytest

from waypost.aio import AsyncEngine
from waypost.engine import Engine
from waypost.types import Document

DOCS = [
    Document("paris", "Paris is the capital of France and home of the Louvre."),
    Document("berlin", "Berlin is the capital of Germany; the Brandenburg Gate stands there."),
    Document("rome", "Rome is the capital of Italy, with the Colosseum."),
]


def test_async_matches_sync_and_overlaps_calls(engine: Engine) -> None:
    sync = engine.collection("aio", create=True)
    sync.add(DOCS)
    expected = [(h.chunk.id, h.score) for h in sync.retrieve("capital of Germany", "hybrid", 3).hits]

    async def main() -> None:
        aengine = AsyncEngine(engine, threads=4)
        coll = await aengine.collection("aio")
        result = await coll.retrieve("capital of Germany", "hybrid", 3)
        assert [(h.chunk.id, h.score) for h in result.hits] == expected
        answer = await coll.answer("What is the capital of Italy?", "hybrid", 2)
        assert answer.citations and answer.citations[0].document_id == "rome"
        # a slow call on the pool does not hold the event loop: a quick one finishes first
        order: list[str] = []

        async def slow() -> None:
            await aengine.run(lambda: time.sleep(0.5))
            order.append("slow")

        async def quick() -> None:
            await coll.retrieve("Colosseum", "bm25", 1)
            order.append("quick")

        await asyncio.gather(slow(), quick())
        assert order == ["quick", "slow"]
        assert [c.name for c in await aengine.collections()] == ["aio"]

    asyncio.run(main())


def test_no_auth_only_on_loopback(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from waypost.server.config import ServerConfig

    ServerConfig(root=tmp_path, auth=False, host="127.0.0.1")
    with pytest.raises(ValueError, match="loopback"):
        ServerConfig(root=tmp_path, auth=False, host="0.0.0.0")
