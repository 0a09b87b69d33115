"""LLM layer against real HTTP servers on 127.0.0.1: retries, timeouts, garbage, JSON repair, cache, answers."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from tests.fault_server import FaultServer, fault_server
from waypost.answer.service import AnswerService
from waypost.engine import Engine
from waypost.errors import WaypostError
from waypost.llm.accounting import PriceTable, QueryMetadata
from waypost.llm.base import GenerationParams, LLMError
from waypost.llm.cache import CachedLLM
from waypost.llm.factory import make_llm
from waypost.llm.openai_compat import OpenAICompatibleLLM
from waypost.llm.structured import complete_structured, extract_json
from waypost.types import Document

ASK = [{"role": "user", "content": "hi"}]


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with fault_server() as srv:
        yield srv


def llm(server: FaultServer, **kw: object) -> OpenAICompatibleLLM:
    return OpenAICompatibleLLM("test-model", server.url, backoff=0.01, **kw)  # type: ignore[arg-type]


def test_complete_returns_text_and_usage(server: FaultServer) -> None:
    server.reply = "hello there"
    out = llm(server).complete(ASK, GenerationParams(max_tokens=5))
    assert (out.text, out.prompt_tokens, out.completion_tokens) == ("hello there", 11, 7)
    assert server.requests[0]["max_tokens"] == 5 and server.requests[0]["model"] == "test-model"


def test_retries_429_and_5xx_then_succeeds(server: FaultServer) -> None:
    server.script = ["429", "500", "503", "ok"]
    client = llm(server, retries=3)
    assert client.complete(ASK).text == "ok"
    assert client.attempts == 4


def test_gives_up_after_retries(server: FaultServer) -> None:
    server.script = ["500"]
    client = llm(server, retries=2)
    with pytest.raises(LLMError, match="after 3 attempts"):
        client.complete(ASK)
    assert len(server.requests) == 3


def test_client_errors_are_not_retried(server: FaultServer) -> None:
    server.script = ["400"]
    client = llm(server, retries=3)
    with pytest.raises(LLMError, match="HTTP 400"):
        client.complete(ASK)
    assert client.attempts == 1


def test_garbage_and_timeouts_are_llm_errors(server: FaultServer) -> None:
    server.script = ["garbage"]
    with pytest.raises(LLMError, match="not JSON"):
        llm(server).complete(ASK)
    server.script = ["slow"]
    with pytest.raises(LLMError):
        llm(server, timeout=0.3, retries=0).complete(ASK)


def test_unreachable_server() -> None:
    with pytest.raises(LLMError, match="failed after"):
        OpenAICompatibleLLM("m", "http://127.0.0.1:9/v1", retries=1, backoff=0.01).complete(ASK)


def test_concurrency_is_bounded(server: FaultServer) -> None:
    server.delay = 0.6  # long enough that all six threads are waiting while two are served
    client = llm(server, max_concurrency=2)
    threads = [threading.Thread(target=client.complete, args=(ASK,)) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(server.requests) == 6 and server.max_active == 2


def test_streaming_yields_tokens_and_usage(server: FaultServer) -> None:
    server.reply = "one two three"
    result = llm(server).stream(ASK)
    tokens = list(result.tokens)
    assert tokens == ["one ", "two ", "three "]
    assert result.completion.text == "one two three " and result.completion.completion_tokens == 3


def test_cache_replays_without_calling_the_server(server: FaultServer, tmp_path: Path) -> None:
    server.reply = "cached answer"
    cached = CachedLLM(llm(server), tmp_path / "llm.sqlite")
    first = cached.complete(ASK)
    second = CachedLLM(llm(server), tmp_path / "llm.sqlite").complete(ASK)
    assert (first.cached, second.cached, second.text) == (False, True, "cached answer")
    assert len(server.requests) == 1
    other = cached.complete(ASK, GenerationParams(max_tokens=7))  # other parameters, other key
    assert not other.cached and len(server.requests) == 2
    meta = QueryMetadata("x")
    meta.record(first, PriceTable({"test-model": (1000.0, 2000.0)}))
    meta.record(second, PriceTable({"test-model": (1000.0, 2000.0)}))
    assert (meta.llm_calls, meta.llm_cache_hits, meta.prompt_tokens) == (2, 1, 11)
    assert meta.cost_usd == pytest.approx((11 * 1000 + 7 * 2000) / 1e6)


class Verdict(BaseModel):
    relevant: bool
    reason: str


@pytest.mark.parametrize(
    "text",
    [
        '{"relevant": true, "reason": "ok"}',
        'Sure! Here is the JSON:\n```json\n{"relevant": true, "reason": "ok"}\n```\nHope that helps.',
        "{'relevant': true, 'reason': 'ok',}",  # single quotes and a trailing comma
        '{"relevant": true, "reason": "ok"',  # cut off
    ],
)
def test_extract_and_repair_json(text: str) -> None:
    assert Verdict.model_validate(extract_json(text)) == Verdict(relevant=True, reason="ok")


def test_structured_retries_once_then_falls_back(server: FaultServer) -> None:
    meta = QueryMetadata("x")
    server.script = ['{"relevant": "maybe"}', '{"relevant": false, "reason": "fixed"}']
    result = complete_structured(llm(server), ASK, Verdict, meta, PriceTable(), step="judge")
    assert result.ok and result.attempts == 2 and result.value == Verdict(relevant=False, reason="fixed")
    assert "schema" in str(server.requests[1]["messages"][-1]["content"])
    server.script = ["no json at all"]
    failed = complete_structured(llm(server), ASK, Verdict, meta, PriceTable(), step="judge")
    assert not failed.ok and meta.fallbacks[-1].startswith("judge: invalid JSON")
    server.script = ["500"]
    down = complete_structured(llm(server, retries=0), ASK, Verdict, meta, PriceTable(), step="judge")
    assert not down.ok and "judge:" in meta.fallbacks[-1]


@pytest.fixture
def kb(engine: Engine):  # type: ignore[no-untyped-def]
    coll = engine.collection("kb", create=True)
    coll.add(
        [
            Document("paris", "Paris is the capital of France. It lies on the Seine.", "Paris"),
            Document("tokyo", "Tokyo is the capital of Japan. It hosted the 1964 Olympics.", "Tokyo"),
            Document("bread", "Bread rises because yeast ferments sugar into carbon dioxide.", "Bread"),
        ]
    )
    return coll


def test_llm_answer_maps_citations_to_spans(server: FaultServer, kb) -> None:  # type: ignore[no-untyped-def]
    hits = kb.retrieve("capital of Japan", "hybrid", k=3).hits
    tokyo = next(i for i, h in enumerate(hits, 1) if h.document_id == "tokyo")
    server.reply = f"The capital of Japan is Tokyo [{tokyo}] [5] (founded before [1600])."
    service = AnswerService(lambda q, s, k: kb.retrieve(q, s, k), llm(server))
    answer = service.answer("What is the capital of Japan?", k=3)
    assert answer.mode == "llm" and answer.supported
    assert answer.text == "The capital of Japan is Tokyo [1] (founded before [1600])."
    [citation] = answer.citations
    doc = kb.get(citation.document_id)
    assert citation.document_id == "tokyo" and doc.text[citation.start : citation.end] == citation.text
    assert answer.metadata.llm_calls == 1 and answer.metadata.prompt_tokens == 11
    assert "answer.llm" in answer.metadata.timings_ms


def test_refusal_and_llm_failure_fall_back(server: FaultServer, kb) -> None:  # type: ignore[no-untyped-def]
    service = AnswerService(lambda q, s, k: kb.retrieve(q, s, k), llm(server, retries=0))
    server.reply = "I cannot answer this from the documents."
    refused = service.answer("Who won the 1950 World Cup?")
    assert not refused.supported and refused.citations == []
    server.script = ["500"]
    fallback = service.answer("Why does bread rise?")
    assert fallback.mode == "extractive" and fallback.metadata.fallbacks
    assert fallback.citations[0].document_id == "bread"
    streamed = service.stream("Why does bread rise?")
    assert "yeast" in "".join(streamed.tokens) and streamed.answer is not None
    assert streamed.answer.mode == "extractive"


def test_extractive_answer_cites_exact_spans(kb) -> None:  # type: ignore[no-untyped-def]
    answer = kb.answer("Which river does Paris lie on?")
    assert answer.mode == "extractive" and answer.supported
    assert "Seine" in answer.text
    for c in answer.citations:
        assert kb.get(c.document_id).text[c.start : c.end] == c.text
    assert kb.answer("zzzz qqqq").supported is False


def test_llm_specs() -> None:
    assert make_llm("none") is None
    with pytest.raises(WaypostError, match="unknown LLM"):
        make_llm("gpt")
    with pytest.raises(WaypostError, match="needs a model"):
        make_llm("openai:@http://x")


def test_web_search_needs_a_provider(kb) -> None:  # type: ignore[no-untyped-def]
    from waypost.retrieval import web

    with pytest.raises(web.WebSearchNotConfiguredError, match="not configured"):
        kb.retrieve("anything", "web")
    assert not web.is_available()

    class Fixed:
        name = "fixed"

        def search(self, query: str, k: int = 10) -> list[web.WebResult]:
            return [web.WebResult("https://example.org/a", "A", f"about {query}")]

    web.register_web_search(Fixed())
    try:
        hits = kb.retrieve("tides", "web").hits
        assert hits[0].document_id == "https://example.org/a" and hits[0].chunk.text == "about tides"
    finally:
        web._PROVIDERS.clear()


def test_a_stream_that_stalls_mid_answer_falls_back(server: FaultServer, kb) -> None:  # type: ignore[no-untyped-def]
    server.script = ["stall-stream"]
    server.reply = "Bread rises [1] because of yeast"
    client = llm(server, timeout=0.5, retries=0)
    with pytest.raises(LLMError, match="broke off its stream"):
        list(client.stream(ASK).tokens)
    service = AnswerService(lambda q, s, k: kb.retrieve(q, s, k), client)
    streamed = service.stream("Why does bread rise?")
    text = "".join(streamed.tokens)
    assert text.startswith("Bread ") and "yeast ferments" in text  # first token, then the extractive answer
    assert streamed.answer is not None and streamed.answer.mode == "extractive"
    assert "broke off" in streamed.answer.metadata.fallbacks[0]


def test_refusal_detection_is_not_fooled_by_ordinary_sentences(server: FaultServer, kb) -> None:  # type: ignore[no-untyped-def]
    from waypost.answer.generative import is_refusal

    assert is_refusal("I cannot answer this from the documents.")
    assert not is_refusal("Prokaryotic cells do not contain a nucleus [1].")
    server.reply = "Yeast makes the dough rise."  # no citation at all
    answer = AnswerService(lambda q, s, k: kb.retrieve(q, s, k), llm(server)).answer("Why does bread rise?")
    assert answer.mode == "llm" and not answer.supported and "cited no passage" in answer.metadata.fallbacks[0]


def test_retry_after_accepts_seconds_and_dates() -> None:
    from email.utils import formatdate

    from waypost.llm.openai_compat import _retry_after

    assert _retry_after("3") == 3.0 and _retry_after(None) == 0.0 and _retry_after("soon") == 0.0
    assert 5 < _retry_after(formatdate(time.time() + 10, usegmt=True)) <= 10
