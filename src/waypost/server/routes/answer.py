"""Cited answers, whole or streamed as server-sent events: ``retrieval`` (hits and their source numbers)
first, then ``token`` events, then ``done`` (citations, usage and cost) or ``error``. A client that goes
away stops the generation."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import anyio
from fastapi import APIRouter

from waypost.answer.model import Answer
from waypost.collection import check_request
from waypost.errors import WaypostError
from waypost.server.auto import choose, is_auto
from waypost.server.deps import Reader, State, TenantEngine, open_collection
from waypost.server.models import AnswerIn, AnswerOut, CitationOut, CollectionChoiceOut, ErrorOut
from waypost.server.sse import sse_event, sse_response
from waypost.server.views import hits_out

log = logging.getLogger(__name__)
router = APIRouter(prefix="/v1", tags=["answers"], responses={401: {"model": ErrorOut}, 404: {"model": ErrorOut}})


def answer_out(answer: Answer, collection: str, choice: CollectionChoiceOut | None = None) -> AnswerOut:
    data = answer.to_dict()
    return AnswerOut(
        collection=collection,
        collection_choice=choice,
        question=answer.question,
        answer=answer.text,
        mode=answer.mode,
        supported=answer.supported,
        citations=[CitationOut(**c) for c in data["citations"]],
        hits=hits_out(answer.hits),
        usage=data["metadata"],
    )


@router.post(
    "/answer",
    response_model=AnswerOut,
    responses={200: {"content": {"text/event-stream": {}}}, 400: {"model": ErrorOut}},
)
async def answer(body: AnswerIn, _: Reader, engine: TenantEngine, state: State) -> Any:
    """Answer a question from a collection with citations (an LLM if configured, else extractive); collection
    ``auto``: from the collection waypost chooses (``collection_choice`` says which and why)."""
    check_request(body.question, body.strategy, body.k, body.params)  # a 400 before any work (or stream)
    choice = await choose(engine, body.question) if is_auto(body.collection) else None
    coll = await open_collection(engine, choice.collections[0] if choice else body.collection)
    if not body.stream:
        return answer_out(await coll.answer(body.question, body.strategy, body.k, body.params), coll.name, choice)

    async def events() -> AsyncIterator[str]:
        try:
            stream = await coll.stream_answer(body.question, body.strategy, body.k, body.params)
        except WaypostError as exc:
            yield sse_event("error", {"error": str(exc)})
            return
        try:
            hits = hits_out(stream.hits)
            sources = [  # what a citation [n] will point at
                {"n": h.rank, "document_id": h.document_id, "title": h.title, "span": h.span} for h in hits
            ]
            yield sse_event("retrieval", {"hits": [h.model_dump() for h in hits], "sources": len(hits),
                                          "citations": sources, "collection": coll.name,
                                          "collection_choice": choice and choice.model_dump()})  # fmt: skip
            while (token := await coll.next_token(stream)) is not None:
                yield sse_event("token", {"text": token})
            final = stream.answer
            if final is None:
                yield sse_event("error", {"error": "the answer stream ended without an answer"})
                return
            done = answer_out(final, coll.name, choice).model_dump()
            done.pop("hits")
            yield sse_event("done", done)
        except WaypostError as exc:
            yield sse_event("error", {"error": str(exc)})
        except Exception as exc:  # the stream still ends with an event saying so; details go to the log
            log.exception("answer stream failed")
            yield sse_event("error", {"error": f"internal error ({type(exc).__name__})"})
        finally:  # finished, failed or the client left: the LLM lets go now
            with anyio.CancelScope(shield=True):
                await engine.run(stream.close)
            log.debug("answer stream closed")

    return sse_response(events(), state.config.heartbeat_s)
