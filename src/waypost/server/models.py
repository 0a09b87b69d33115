"""Request and response bodies of the HTTP API (``/docs`` shows them as OpenAPI)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Scalar = str | int | float | bool | None
MAX_QUERY_CHARS = 4000
AUTO_DESCRIPTION = "a collection name, or auto: waypost chooses the collection(s) for the query"


class Strict(BaseModel):
    """Bodies refuse unknown fields, so a typo (or a ``tenant`` field) is a 422, never silently ignored."""

    model_config = ConfigDict(extra="forbid")


class ErrorOut(BaseModel):
    error: str
    detail: Any = None


class WhoAmI(BaseModel):
    tenant: str
    key_id: str
    scopes: list[str]


class CollectionIn(Strict):
    name: str = Field(min_length=1, max_length=128)
    description: str = Field(default="", max_length=2000)
    language: str = Field(default="", max_length=16, description="ISO 639 code; empty: detected per document")


class CollectionOut(BaseModel):
    name: str
    description: str
    language: str
    documents: int
    chunks: int
    embed_model: str
    generation: int


class CollectionList(BaseModel):
    collections: list[CollectionOut]


class DocumentIn(Strict):
    id: str = Field(min_length=1, max_length=512)
    text: str = Field(max_length=8_000_000)
    title: str = Field(default="", max_length=2000)
    metadata: dict[str, Scalar | list[Scalar]] = Field(default_factory=dict)


class DocumentsIn(Strict):
    documents: list[DocumentIn] = Field(min_length=1, max_length=10_000)


class DocumentSummary(BaseModel):
    id: str
    title: str
    source: str
    language: str
    chars: int
    metadata: dict[str, Any]


class DocumentOut(DocumentSummary):
    text: str


class DocumentPage(BaseModel):
    documents: list[DocumentSummary]
    total: int
    limit: int
    offset: int


class JobOut(BaseModel):
    id: str
    collection: str
    state: Literal["queued", "parsing", "chunking", "embedding", "indexing", "succeeded", "failed", "cancelled"]
    created_at: float
    updated_at: float
    files: list[dict[str, Any]]
    counts: dict[str, int]
    errors: list[dict[str, str]]
    reason: str
    attempts: int
    cancel_requested: bool
    retry_of: str | None


class JobList(BaseModel):
    jobs: list[JobOut]


class PassagesIn(Strict):
    policy: Literal["grow", "auto-merge", "small-to-big"] = "grow"
    tokens: int = Field(default=1024, ge=16, le=8192)


class RetrieveIn(Strict):
    collection: str = Field(min_length=1, max_length=128, description=AUTO_DESCRIPTION + " (fused when several)")
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    strategy: str = Field(
        default="auto", min_length=1, max_length=64, description="auto, or a name from GET /v1/strategies"
    )
    k: int = Field(default=10, ge=1, le=100, strict=True)
    filters: dict[str, Any] | None = Field(
        default=None, description='a filter object, e.g. {"year": {"gte": 2010}} or {"or": [...]}'
    )
    params: dict[str, Scalar] | None = None
    passages: PassagesIn | None = None
    rerank: str | None = Field(default=None, max_length=256)
    explain: bool = Field(default=False, strict=True)


class HitOut(BaseModel):
    rank: int
    chunk_id: str
    collection: str = Field(description="the collection holding the document (fused results mix collections)")
    document_id: str
    title: str
    section: list[str]
    text: str
    span: list[int] = Field(description="[start, end): characters of the stored document's text")
    score: float
    strategy: str
    metadata: dict[str, Any]
    passage: dict[str, Any] | None = None


class CollectionChoiceOut(BaseModel):
    """What collection ``auto`` chose: the collections (the first leads), how sure, by what and why."""

    collections: list[str]
    confidence: float
    selector: str
    reasoning: str
    scores: dict[str, float] = Field(default_factory=dict)


class RetrieveOut(BaseModel):
    collection: str = Field(
        description="the collection the hits come from; with auto, the lead one (or the runner-up whose result "
        "the corrective loop kept when stage 1 was unsure)"
    )
    collections: list[str] = Field(description="every collection the hits come from (auto may fuse several)")
    collection_choice: CollectionChoiceOut | None = Field(default=None, description="auto: what chose and why")
    strategy: str
    hits: list[HitOut]
    route: dict[str, Any] | None = Field(default=None, description="auto: pipeline, confidence and reasoning")
    explanation: dict[str, Any] | None = None
    latency_ms: float


class AnswerIn(Strict):
    collection: str = Field(
        min_length=1, max_length=128, description=AUTO_DESCRIPTION + " (the answer comes from the first alone)"
    )
    question: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    strategy: str = Field(default="auto", min_length=1, max_length=64)
    k: int = Field(default=5, ge=1, le=50, strict=True)
    params: dict[str, Scalar] | None = None
    stream: bool = Field(default=False, strict=True)


class CitationOut(BaseModel):
    n: int
    document_id: str
    title: str
    span: list[int]
    text: str


class AnswerOut(BaseModel):
    collection: str = Field(description="the collection the answer comes from")
    collection_choice: CollectionChoiceOut | None = Field(default=None, description="auto: what chose and why")
    question: str
    answer: str
    mode: str
    supported: bool
    citations: list[CitationOut]
    hits: list[HitOut]
    usage: dict[str, Any]


class PipelineIn(Strict):
    strategy: str = Field(min_length=1, max_length=64)
    params: dict[str, Scalar] | None = None
    rerank: str | None = Field(default=None, max_length=256)
    passages: PassagesIn | None = None


class CompareIn(Strict):
    collection: str = Field(min_length=1, max_length=128)
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    pipelines: list[PipelineIn] = Field(min_length=2, max_length=3)
    k: int = Field(default=10, ge=1, le=50, strict=True)


class CompareRun(BaseModel):
    pipeline: PipelineIn
    hits: list[HitOut]
    latency_ms: float
    route: dict[str, Any] | None = None


class CompareOut(BaseModel):
    runs: list[CompareRun]
    overlap: list[list[float]] = Field(description="Jaccard overlap of the runs' document ids, run by run")
    shared_documents: list[str]


class ParamOut(BaseModel):
    name: str
    type: str
    default: Scalar


class StrategyOut(BaseModel):
    name: str
    cost: float
    needs_tree: bool
    needs_graph: bool
    needs_llm: bool
    params: list[ParamOut]


class StrategyList(BaseModel):
    strategies: list[StrategyOut]


class FeedbackIn(Strict):
    collection: str = Field(min_length=1, max_length=128)
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    chunk_id: str = Field(min_length=3, max_length=600, description="DOCUMENT#INDEX, as hits give it")
    kind: Literal["used", "rejected", "rating"] = "used"
    rating: float | None = Field(default=None, ge=0, le=5)


class FeedbackOut(BaseModel):
    recorded: bool
    document_id: str
    span: list[int]
