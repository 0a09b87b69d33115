"""Server-sent events that arrive as they are made: no proxy buffering, heartbeats while nothing else is
sent, and the producer cancelled (its ``finally`` run) as soon as the client goes away."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from starlette.responses import StreamingResponse

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no", "Connection": "keep-alive"}


def sse_event(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


async def with_heartbeats(events: AsyncIterator[str], every_s: float) -> AsyncIterator[str]:
    """``events``, with a comment line every ``every_s`` seconds of silence; closing this closes ``events``."""
    pending: asyncio.Task[str] | None = None
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(anext(events))
            done, _ = await asyncio.wait({pending}, timeout=every_s)
            if not done:
                yield ": heartbeat\n\n"
                continue
            try:
                item = pending.result()
            except StopAsyncIteration:
                return
            pending = None
            yield item
    finally:
        if pending is not None and not pending.done():
            pending.cancel()
            with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration, Exception):
                await pending
        with contextlib.suppress(Exception):
            await events.aclose()  # type: ignore[attr-defined]


def sse_response(events: AsyncIterator[str], heartbeat_s: float) -> StreamingResponse:
    return StreamingResponse(with_heartbeats(events, heartbeat_s), media_type="text/event-stream", headers=SSE_HEADERS)
