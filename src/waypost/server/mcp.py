"""The MCP server: waypost's search, cited answers, collections and ingestion jobs as MCP tools, and documents
as resources (``waypost://COLLECTION/DOCUMENT``), for one principal resolver.

The same server runs over stdio (``waypost mcp``: one fixed principal) and over streamable HTTP at ``/mcp``
(``waypost.server.mcp_http``: the principal of each request's API key). Every call acts for the tenant of
its principal alone: another tenant's collections, documents and jobs answer "not found", exactly as an
unknown name does. A key without the ``write`` scope is not even shown ``waypost_add_document``."""

from __future__ import annotations

import json
import logging
import shutil
import time
from collections.abc import Callable
from itertools import islice
from typing import Annotated, Any
from urllib.parse import quote

from mcp.server import MCPServer, ServerRequestContext
from mcp.server.caching import CacheHint
from mcp.server.context import CallNext, HandlerResult
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.server.mcpserver.resources.templates import ResourceSecurity
from mcp_types import ToolAnnotations
from pydantic import Field, ValidationError

from waypost import __version__
from waypost.aio import AsyncCollection, AsyncEngine
from waypost.errors import CollectionNotFoundError, WaypostError
from waypost.server.auth import Principal
from waypost.server.auto import choose, is_auto, search_auto
from waypost.server.deps import ServerState
from waypost.server.jobs import new_job_id
from waypost.server.models import (
    MAX_QUERY_CHARS,
    AnswerOut,
    CollectionList,
    DocumentIn,
    JobOut,
    RetrieveOut,
)
from waypost.server.routes.answer import answer_out
from waypost.server.routes.uploads import request_hash
from waypost.server.views import collection_out, job_out, retrieve_out
from waypost.store.control import JobRecord

log = logging.getLogger(__name__)

Resolver = Callable[[ServerRequestContext[Any, Any] | None], Principal]
"""The principal a request acts for (raises ``PermissionError`` when there is none)."""

WRITE_TOOLS = frozenset({"waypost_add_document"})
DOCUMENT_URI = "waypost://{collection}/{+document}"
MAX_LISTED_RESOURCES = 500  # resources/list names at most this many documents (the template reaches them all)

INSTRUCTIONS = (
    "waypost searches the user's document collections. Call waypost_list_collections first, then "
    "waypost_search (ranked passages with scores and exact character spans) or waypost_answer (a cited "
    'answer); collection "auto" lets waypost choose the collection. Read a whole document as the resource '
    "waypost://COLLECTION/DOCUMENT."
)

Name = Annotated[str, Field(min_length=1, max_length=128, description="A collection name (waypost_list_collections)")]
Chosen = Annotated[
    str,
    Field(min_length=1, max_length=128, description="A collection name (waypost_list_collections), or auto: "
          "waypost chooses the collection for the query"),
]  # fmt: skip
Query = Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS)]
Strategy = Annotated[str, Field(max_length=64, description="auto (the router picks the pipeline) or a strategy name")]
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)


def document_uri(collection: str, document: str) -> str:
    """A document's resource URI; names and ids are percent-encoded (the template decodes them)."""
    return f"waypost://{quote(collection, safe='')}/{quote(document, safe='/')}"


class Tools:
    """The tools and resources of one MCP server, bound to a server state and a principal resolver."""

    def __init__(self, state: ServerState, resolve: Resolver) -> None:
        self.state = state
        self.resolve = resolve

    # -- who is asking ------------------------------------------------------------------------------
    def principal(self, ctx: Context | None, scope: str = "read") -> Principal:
        try:
            principal = self.resolve(ctx.request_context if ctx is not None else None)
        except (PermissionError, ValueError) as exc:
            raise ToolError(str(exc) or "no API key") from None
        if not principal.allows(scope):
            raise ToolError(f"this key lacks the {scope!r} scope")
        return principal

    def engine(self, principal: Principal) -> AsyncEngine:
        return self.state.async_engine(principal)

    @staticmethod
    async def collection(engine: AsyncEngine, name: str) -> AsyncCollection:
        try:
            return await engine.collection(name)
        except CollectionNotFoundError:
            raise ToolError(f"no collection {name!r}") from None
        except WaypostError as exc:  # an unusable name
            raise ToolError(str(exc)) from None

    # -- tools ----------------------------------------------------------------------------------------
    async def search(
        self,
        collection: Chosen,
        query: Query,
        ctx: Context,
        strategy: Strategy = "auto",
        k: Annotated[int, Field(ge=1, le=100)] = 10,
    ) -> RetrieveOut:
        """Search a collection: the best passages, each with its collection, document id, chunk id, score and
        exact span [start, end) in the document's text. strategy "auto" lets the router choose the pipeline
        (route says which and why); collection "auto" lets waypost choose the collection(s) too, fusing
        several when the query fits more than one (collections and collection_choice say which and why)."""
        engine = self.engine(self.principal(ctx))
        k = min(k, self.state.config.max_k)
        t0 = time.perf_counter()
        choice = None
        try:
            if is_auto(collection):
                result, choice, searched = await search_auto(engine, query, strategy or "auto", k, None)
            else:
                coll = await self.collection(engine, collection)
                result, searched = await coll.retrieve(query, strategy or "auto", k), [coll.name]
        except WaypostError as exc:
            raise ToolError(str(exc)) from None
        return retrieve_out(result, searched, (time.perf_counter() - t0) * 1000, choice)

    async def answer(
        self,
        collection: Chosen,
        question: Query,
        ctx: Context,
        strategy: Strategy = "auto",
        k: Annotated[int, Field(ge=1, le=50)] = 5,
    ) -> AnswerOut:
        """Answer a question from a collection, citing its sources: each citation [n] gives the document id
        and the exact span of the cited text. collection "auto" lets waypost choose the collection; the answer
        comes from the one it chooses first (collection and collection_choice say which and why)."""
        engine = self.engine(self.principal(ctx))
        try:
            choice = await choose(engine, question) if is_auto(collection) else None
        except WaypostError as exc:
            raise ToolError(str(exc)) from None
        coll = await self.collection(engine, choice.collections[0] if choice else collection)
        try:
            return answer_out(await coll.answer(question, strategy or "auto", k), coll.name, choice)
        except WaypostError as exc:
            raise ToolError(str(exc)) from None

    async def list_collections(self, ctx: Context) -> CollectionList:
        """The collections this key can search: names, descriptions and how many documents and chunks each holds."""
        engine = self.engine(self.principal(ctx))

        def read() -> CollectionList:
            language = engine.sync.store.collection_language
            return CollectionList(collections=[collection_out(i, language(i.name)) for i in engine.sync.collections()])

        return await engine.run(read)

    async def add_document(
        self,
        collection: Name,
        id: Annotated[str, Field(min_length=1, max_length=512, description="The document's id in the collection")],
        text: Annotated[str, Field(min_length=1)],
        ctx: Context,
        title: str = "",
        metadata: dict[str, Any] | None = None,
    ) -> JobOut:
        """Add (or replace) one document; the collection is created if missing. Ingestion runs as a job:
        this returns it queued; waypost_get_job tells when it has succeeded and the text is searchable."""
        principal = self.principal(ctx, "write")
        try:
            doc = DocumentIn.model_validate({"id": id, "text": text, "title": title, "metadata": metadata or {}})
        except ValidationError as exc:
            raise ToolError(f"invalid document: {exc.errors(include_url=False)}") from None
        line = json.dumps({"_id": doc.id, "title": doc.title, "text": doc.text, "metadata": doc.metadata},
                          ensure_ascii=False)  # fmt: skip
        data = (line + "\n").encode()
        if len(data) > self.state.config.max_file_bytes:
            raise ToolError(
                f"the document is {len(data)} bytes, over the {self.state.config.max_file_bytes}-byte limit"
            )
        engine = self.engine(principal)
        try:
            coll = await engine.collection(collection, create=True)
        except WaypostError as exc:
            raise ToolError(str(exc)) from None
        return job_out(await engine.run(lambda: self.submit(principal, coll.name, data)))

    def submit(self, principal: Principal, collection: str, data: bytes) -> JobRecord:
        """Spool the document and record its job the way an HTTP upload does, then hand it to the runner."""
        runner, name = self.state.runner, "documents.jsonl"
        job_id = new_job_id()
        folder = runner.spool_dir(job_id)
        try:
            path = folder / "0" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            now = time.time()
            job = JobRecord(
                job_id, principal.tenant.id, collection, "queued", now, now,
                files=[{"name": name, "path": str(path), "bytes": len(data)}],
                request_hash=request_hash(collection, [(name, data)]), **runner.lease(),
            )  # fmt: skip
            stored, _ = self.state.control.create_job(job)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        runner.submit(stored)
        log.info("MCP: ingestion job %s for tenant %s, collection %s", stored.id, principal.tenant.name, collection)
        return stored

    async def get_job(self, job_id: Annotated[str, Field(min_length=1, max_length=200)], ctx: Context) -> JobOut:
        """An ingestion job: its state (queued, parsing, chunking, embedding, indexing, then succeeded, failed
        or cancelled), counts and errors."""
        principal = self.principal(ctx)
        job = await self.engine(principal).run(lambda: self.state.control.job(principal.tenant.id, job_id))
        if job is None:
            raise ToolError(f"no job {job_id!r}")
        return job_out(job)

    # -- resources --------------------------------------------------------------------------------------
    async def read_document(self, collection: str, document: str, ctx: Context) -> str:
        """A document's full text (hit spans index into it)."""
        try:
            engine = self.engine(self.principal(ctx))
        except ToolError as exc:
            raise ResourceError(str(exc)) from None
        try:
            coll = await engine.collection(collection)
        except CollectionNotFoundError:
            raise ResourceNotFoundError(f"no collection {collection!r}") from None
        doc = await coll.get(document)
        if doc is None:
            raise ResourceNotFoundError(f"no document {document!r} in collection {collection!r}")
        return doc.text

    async def list_documents(self, principal: Principal) -> list[dict[str, Any]]:
        """resources/list: the tenant's documents as concrete resources (the first ``MAX_LISTED_RESOURCES``)."""
        engine = self.engine(principal)

        def read() -> list[dict[str, Any]]:
            listed: list[dict[str, Any]] = []
            for info in engine.sync.collections():
                room = max(MAX_LISTED_RESOURCES - len(listed), 0)
                for doc in islice(engine.sync.store.iter_documents(info.name), room):
                    listed.append({
                        "uri": document_uri(info.name, doc.id),
                        "name": doc.title or doc.id,
                        "description": f"document {doc.id!r} of collection {info.name!r}",
                        "mimeType": "text/plain",
                    })  # fmt: skip
            return listed

        return await engine.run(read)

    # -- per-principal listings ---------------------------------------------------------------------------
    async def middleware(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """tools/list shows a key only the tools its scope allows; resources/list shows its tenant's documents."""
        result = await call_next(ctx)
        if ctx.method not in ("tools/list", "resources/list") or not isinstance(result, dict):
            return result
        try:
            principal = self.resolve(ctx)
        except (PermissionError, ValueError):
            principal = None
        if ctx.method == "tools/list":
            allowed = principal is not None and principal.allows("write")
            tools = [t for t in result.get("tools", []) if allowed or t.get("name") not in WRITE_TOOLS]
            return {**result, "tools": tools}
        return {**result, "resources": await self.list_documents(principal) if principal is not None else []}


def build_mcp_server(state: ServerState, resolve: Resolver) -> MCPServer[Any]:
    """An MCP server over ``state`` (the control store, the tenants' engines and the job runner) whose every
    request acts for ``resolve(request)``."""
    tools = Tools(state, resolve)
    private = CacheHint(ttl_ms=0, scope="private")  # listings depend on the key
    server: MCPServer[Any] = MCPServer(
        "waypost",
        version=__version__,
        instructions=INSTRUCTIONS,
        cache_hints={"tools/list": private, "resources/list": private, "resources/read": private},
        middleware=[tools.middleware],
        log_level="WARNING",  # the SDK calls logging.basicConfig: keep the process's root logger as Python has it
    )
    write = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True)  # replaces by id
    specs: list[tuple[Callable[..., Any], str, str, ToolAnnotations]] = [
        (tools.search, "waypost_search", "Search a collection", READ_ONLY),
        (tools.answer, "waypost_answer", "Answer with citations", READ_ONLY),
        (tools.list_collections, "waypost_list_collections", "List collections", READ_ONLY),
        (tools.add_document, "waypost_add_document", "Add a document", write),
        (tools.get_job, "waypost_get_job", "An ingestion job", READ_ONLY),
    ]
    for fn, name, title, hints in specs:
        description = " ".join((fn.__doc__ or "").split())  # one paragraph, without the docstring's indentation
        server.add_tool(fn, name=name, title=title, description=description, annotations=hints)
    server.resource(
        DOCUMENT_URI,
        name="document",
        title="A document's text",
        description="The full text of document DOCUMENT in collection COLLECTION; hit spans index into it.",
        mime_type="text/plain",
        security=ResourceSecurity(exempt_params={"document"}),  # an id looked up in the store, never a path
    )(tools.read_document)
    return server
