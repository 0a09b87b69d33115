"""The HTTP client against the live server: every call it offers, and the server's refusals as typed errors."""

from __future__ import annotations

import pytest

from tests.adapter_corpus import CORPUS, QUERY
from tests.server_fixtures import LiveServer
from waypost.client import (
    AsyncWaypostClient,
    ConflictError,
    ForbiddenError,
    NotFoundError,
    ServerError,
    UnauthorizedError,
    WaypostClient,
)
from waypost.errors import WaypostError


def test_sync_client_round_trip(server: LiveServer) -> None:
    name = "test client sync"  # a space: the client quotes path segments
    with WaypostClient(server.url, server.keys["alpha:write"]) as client:
        assert client.whoami().tenant == "alpha"
        created = client.create_collection(name, description="client test")
        assert created.name == name and created.documents == 0
        # Documents as library objects and as plain mappings.
        job = client.upload_documents(name, [*CORPUS[:6], {"id": "extra", "text": "Cats purr when content."}])
        assert job.collection == name and job.state == "queued"
        done = client.wait_for_job(job.id)
        assert done.state == "succeeded" and done.counts["added"] == 7
        assert client.job(job.id).state == "succeeded"
        assert client.collection(name).documents == 7
        assert name in [c.name for c in client.collections()]

        result = client.retrieve(name, QUERY, k=3)
        assert result.collection == name and len(result.hits) == 3
        assert result.hits[0].document_id == "bees" and result.hits[0].span[1] > result.hits[0].span[0]
        filtered = client.retrieve(name, "animals", strategy="dense", k=5, filters={"topic": "nature"})
        assert filtered.strategy == "dense" and {h.metadata["topic"] for h in filtered.hits} == {"nature"}
        answer = client.answer(name, "How do bees show where flowers are?", k=2)
        assert answer.question.startswith("How do bees") and "bees" in {c.document_id for c in answer.citations}

        # The same Idempotency-Key: the same job back; another body under it: 409.
        first = client.upload_documents(name, [CORPUS[7]], idempotency_key="client-test-1")
        again = client.upload_documents(name, [CORPUS[7]], idempotency_key="client-test-1")
        assert again.id == first.id
        with pytest.raises(ConflictError, match="Idempotency-Key"):
            client.upload_documents(name, [CORPUS[8]], idempotency_key="client-test-1")
        client.wait_for_job(first.id)

        with pytest.raises(ConflictError, match="already exists") as conflict:
            client.create_collection(name)
        assert conflict.value.status == 409 and isinstance(conflict.value, WaypostError)
        client.delete_collection(name)
        with pytest.raises(NotFoundError):
            client.collection(name)


def test_sync_client_refusals(server: LiveServer) -> None:
    with WaypostClient(server.url, server.keys["alpha:write"]) as writer:
        writer.create_collection("test_client_refusals")
    with WaypostClient(server.url, "wp_0123456789abcdef_wrong") as bad:
        with pytest.raises(UnauthorizedError) as unauthorized:
            bad.collections()
        assert unauthorized.value.status == 401 and unauthorized.value.message
    with WaypostClient(server.url) as anonymous, pytest.raises(UnauthorizedError):
        anonymous.whoami()
    with WaypostClient(server.url, server.keys["alpha:read"]) as reader:
        with pytest.raises(ForbiddenError) as forbidden:
            reader.upload_documents("test_client_refusals", CORPUS[:1])
        assert forbidden.value.status == 403 and "write" in forbidden.value.message
        with pytest.raises(NotFoundError, match="nope"):
            reader.retrieve("nope", QUERY)
        with pytest.raises(NotFoundError):
            reader.job("job_does_not_exist")
    # Another tenant's collection is not found, never forbidden.
    with WaypostClient(server.url, server.keys["beta:admin"]) as other, pytest.raises(NotFoundError):
        other.collection("test_client_refusals")
    # A refusal that is none of the named ones is still a ServerError with the server's message.
    with WaypostClient(server.url, server.keys["alpha:read"]) as reader, pytest.raises(ServerError) as invalid:
        reader.retrieve("test_client_refusals", QUERY, strategy="no-such-strategy")
    assert invalid.value.status in (400, 422) and not isinstance(invalid.value, NotFoundError)


@pytest.mark.asyncio
async def test_async_client_round_trip_and_refusals(server: LiveServer) -> None:
    name = "test_client_async"
    async with AsyncWaypostClient(server.url, server.keys["alpha:write"]) as client:
        assert (await client.whoami()).scopes
        await client.create_collection(name)
        job = await client.upload_documents(name, CORPUS)
        done = await client.wait_for_job(job.id)
        assert done.state == "succeeded" and (await client.job(job.id)).counts["added"] == len(CORPUS)
        assert (await client.collection(name)).documents == len(CORPUS)
        assert name in [c.name for c in await client.collections()]
        result = await client.retrieve(name, QUERY, k=2)
        assert [h.rank for h in result.hits] == [1, 2] and result.hits[0].document_id == "bees"
        answer = await client.answer(name, "What did Apollo 11 do?", k=2)
        assert answer.citations[0].document_id == "moon"
        with pytest.raises(ConflictError):
            await client.create_collection(name)
        await client.delete_collection(name)
        with pytest.raises(NotFoundError):
            await client.retrieve(name, QUERY)
    async with AsyncWaypostClient(server.url, server.keys["alpha:read"]) as reader:
        with pytest.raises(ForbiddenError):
            await reader.create_collection("test_client_async_refused")
    async with AsyncWaypostClient(server.url, "not-a-key") as bad:
        with pytest.raises(UnauthorizedError):
            await bad.collections()
