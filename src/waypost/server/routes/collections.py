"""Collections and their documents (uploads are in ``uploads``: they start jobs)."""

from __future__ import annotations

import threading
from itertools import islice
from typing import Any

from fastapi import APIRouter, HTTPException, Query, Response

from waypost.errors import CollectionNotFoundError
from waypost.server.deps import Reader, State, TenantEngine, Writer, open_collection
from waypost.server.models import CollectionIn, CollectionList, CollectionOut, DocumentOut, DocumentPage, ErrorOut
from waypost.server.views import collection_out, document_out, document_summary

router = APIRouter(prefix="/v1/collections", tags=["collections"], responses={401: {"model": ErrorOut}})
_creating = threading.Lock()  # creates are rare: one lock for every tenant is enough
NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"model": ErrorOut}}


@router.get("", response_model=CollectionList)
async def list_collections(_: Reader, engine: TenantEngine) -> CollectionList:
    def read() -> CollectionList:
        infos = engine.sync.collections()
        language = engine.sync.store.collection_language
        return CollectionList(collections=[collection_out(i, language(i.name)) for i in infos])

    return await engine.run(read)


@router.post("", status_code=201, response_model=CollectionOut, responses={409: {"model": ErrorOut}})
async def create_collection(body: CollectionIn, _: Writer, engine: TenantEngine) -> CollectionOut:
    def create() -> CollectionOut:
        with _creating:  # two creates of one name: one 201, one 409
            try:
                engine.sync.store.collection(body.name)
            except CollectionNotFoundError:
                pass
            else:
                raise HTTPException(409, f"collection {body.name!r} already exists")
            coll = engine.sync.collection(body.name, create=True, language=body.language or None)
        if body.description:
            coll.describe(body.description)
        return collection_out(coll.info, engine.sync.store.collection_language(coll.name))

    return await engine.run(create)


@router.get("/{name}", response_model=CollectionOut, responses=NOT_FOUND)
async def get_collection(name: str, _: Reader, engine: TenantEngine) -> CollectionOut:
    coll = await open_collection(engine, name)
    info = await coll.info()
    return collection_out(info, await engine.run(lambda: engine.sync.store.collection_language(name)))


@router.delete("/{name}", status_code=204, responses=NOT_FOUND)
async def delete_collection(name: str, _: Writer, engine: TenantEngine, state: State) -> Response:
    await open_collection(engine, name)
    await engine.run(lambda: engine.sync.drop(name))
    return Response(status_code=204)


@router.get("/{name}/documents", response_model=DocumentPage, responses=NOT_FOUND)
async def list_documents(
    name: str,
    _: Reader,
    engine: TenantEngine,
    limit: int = Query(50, ge=1, le=500),
    offset: int = Query(0, ge=0, le=10_000_000),
) -> DocumentPage:
    coll = await open_collection(engine, name)

    def page() -> DocumentPage:
        docs = list(islice(coll.sync.documents(), offset, offset + limit))
        return DocumentPage(
            documents=[document_summary(d) for d in docs], total=coll.sync.info.documents, limit=limit, offset=offset
        )

    return await engine.run(page)


@router.get("/{name}/documents/{doc_id:path}", response_model=DocumentOut, responses=NOT_FOUND)
async def get_document(name: str, doc_id: str, _: Reader, engine: TenantEngine) -> DocumentOut:
    coll = await open_collection(engine, name)
    doc = await coll.get(doc_id)
    if doc is None:
        raise HTTPException(404, f"no document {doc_id!r} in collection {name!r}")
    return document_out(doc)


@router.delete("/{name}/documents/{doc_id:path}", status_code=204, responses=NOT_FOUND)
async def delete_document(name: str, doc_id: str, _: Writer, engine: TenantEngine) -> Response:
    coll = await open_collection(engine, name)
    if await coll.delete([doc_id]) == 0:
        raise HTTPException(404, f"no document {doc_id!r} in collection {name!r}")
    return Response(status_code=204)
