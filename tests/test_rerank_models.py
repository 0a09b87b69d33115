"""The model rerankers on real hits: a tiny cross-encoder built from the bundled MiniLM (untrained head, real
scores), and SmolLM2 behind the real llama.cpp server, pointwise and listwise; each falls back when it fails."""

from __future__ import annotations

import os
import re
import shutil
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.llama_server import LlamaServer, free_port
from waypost.base import Embedder
from waypost.engine import Engine, EngineConfig
from waypost.errors import WaypostError
from waypost.llm.accounting import QueryMetadata
from waypost.llm.base import Completion, GenerationParams, LLMError, Message, StreamResult
from waypost.llm.cache import CachedLLM
from waypost.llm.openai_compat import OpenAICompatibleLLM
from waypost.post.rerank.cross_encoder import CrossEncoderReranker
from waypost.post.rerank.llm import ListwiseReply, LLMReranker, PointwiseReply, clip, estimate_tokens
from waypost.types import Document, RetrievalResult

DOCS = [
    Document("bread", "Bread rises because yeast ferments the sugar in dough into carbon dioxide gas.", "Bread"),
    Document("sourdough", "A sourdough starter is a culture of wild yeast and lactic acid bacteria.", "Sourdough"),
    Document("tides", "Tides come from the moon's gravity pulling on the oceans twice a day.", "Tides"),
    Document("volcano", "A volcano erupts when pressure from gas in the magma pushes it up to the surface.", "Volcano"),
    Document("chess", "The Sicilian Defence is the most popular reply to the king's pawn opening.", "Chess"),
    Document("bees", "Honey bees make honey from flower nectar and store it in wax combs.", "Bees"),
]
QUERY = "why does bread dough rise?"


class Reverse:
    """A stand-in fallback: reverses the hits and says it ran."""

    name = "reverse"

    def __init__(self) -> None:
        self.calls = 0

    def rerank(self, query: str, result: RetrievalResult) -> RetrievalResult:
        self.calls += 1
        return RetrievalResult(list(reversed(result.hits)), result.explanation)


@pytest.fixture(scope="module")
def hits(tmp_path_factory: pytest.TempPathFactory, minilm: Embedder) -> Iterator[RetrievalResult]:
    engine = Engine(tmp_path_factory.mktemp("store"), EngineConfig(chunk_tokens=64, background_index_work=False))
    engine.register_embedder(minilm)
    coll = engine.collection("kb", create=True)
    coll.add(DOCS)
    result = coll.retrieve(QUERY, "hybrid", k=6)
    assert len(result.hits) == 6
    yield result
    engine.close()


def ids(result: RetrievalResult) -> list[str]:
    return [hit.chunk.id for hit in result.hits]


def assert_same_hits(before: RetrievalResult, after: RetrievalResult) -> None:
    assert Counter(ids(after)) == Counter(ids(before)) and len(set(ids(after))) == len(ids(after))


# -- the cross-encoder -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cross_encoder_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real cross-encoder: the bundled MiniLM's BERT with a fresh one-label head, saved to a folder."""
    import torch
    from sentence_transformers import CrossEncoder

    from waypost.embeddings.sentence_transformer import resolve_model_path

    bert = tmp_path_factory.mktemp("bert")
    source = Path(resolve_model_path("all-MiniLM-L6-v2"))
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "vocab.txt"):
        shutil.copy(source / name, bert / name)
    special = source / "special_tokens_map.json"
    if special.exists():
        shutil.copy(special, bert / special.name)
    torch.manual_seed(0)
    model = CrossEncoder(str(bert), num_labels=1, local_files_only=True, device="cpu")
    out = tmp_path_factory.mktemp("cross-encoder")
    model.save(str(out))
    return out


def test_cross_encoder_scores_and_sorts_the_top_hits(hits: RetrievalResult, cross_encoder_dir: Path) -> None:
    from sentence_transformers import CrossEncoder

    fallback = Reverse()
    reranker = CrossEncoderReranker(str(cross_encoder_dir), fallback, depth=4, batch_size=2)
    before, environment = ids(hits), dict(os.environ)
    out = reranker.rerank(QUERY, hits)  # the first call loads the model
    assert fallback.calls == 0 and dict(os.environ) == environment  # offline by argument, not by environment
    assert_same_hits(hits, out)
    assert ids(hits) == before and "rerank" not in hits.explanation.timings_ms  # the input is left alone
    # the top four, ordered by what the model itself says about each pair; the last two stay behind them
    reference = CrossEncoder(str(cross_encoder_dir), local_files_only=True, device="cpu")
    expected = [float(s) for s in reference.predict([(QUERY, h.chunk.text) for h in hits.hits[:4]])]
    assert len(set(expected)) == 4  # untrained, but the scores still tell the pairs apart
    by_score = [hits.hits[i].chunk.id for i in sorted(range(4), key=lambda i: -expected[i])]
    assert ids(out)[:4] == by_score and ids(out)[4:] == before[4:]
    for hit in out.hits[:4]:
        score = expected[before.index(hit.chunk.id)]
        assert hit.score == pytest.approx(score, abs=1e-5)
        assert hit.provenance.stage_scores["cross_encoder"] == pytest.approx(score, abs=1e-5)
        assert {"dense", "bm25"} & set(hit.provenance.stage_scores)  # retrieval's stage scores are kept
    assert all("cross_encoder" not in h.provenance.stage_scores for h in out.hits[4:])
    assert out.explanation.timings_ms["rerank"] > 0
    assert out.explanation.notes[-1] == f"rerank: cross-encoder {cross_encoder_dir}, 4 candidates"
    assert out.explanation.llm is hits.explanation.llm  # a cross-encoder makes no LLM call


def test_cross_encoder_refuses_a_path_that_does_not_exist(tmp_path: Path) -> None:
    with pytest.raises(WaypostError, match="not found"):
        CrossEncoderReranker(str(tmp_path / "no-such-model"), Reverse())
    (tmp_path / "weights.bin").write_bytes(b"x")
    with pytest.raises(WaypostError, match="folder"):
        CrossEncoderReranker(str(tmp_path / "weights.bin"), Reverse())


def test_cross_encoder_falls_back_on_a_corrupt_or_vanished_model(
    hits: RetrievalResult, cross_encoder_dir: Path, tmp_path: Path
) -> None:
    corrupt = tmp_path / "corrupt"
    shutil.copytree(cross_encoder_dir, corrupt)
    (corrupt / "config.json").write_text("{ this is not json")
    (corrupt / "model.safetensors").write_bytes(b"\0" * 64)
    gone = tmp_path / "gone"
    shutil.copytree(cross_encoder_dir, gone)
    first, second = Reverse(), Reverse()
    vanishing = CrossEncoderReranker(str(gone), second, depth=4)
    shutil.rmtree(gone)  # removed after the reranker was made, before its lazy load
    for reranker, fallback in ((CrossEncoderReranker(str(corrupt), first, depth=4), first), (vanishing, second)):
        out = reranker.rerank(QUERY, hits)
        assert fallback.calls == 1 and ids(out) == list(reversed(ids(hits)))
        note = out.explanation.notes[-1]
        assert note.startswith("rerank: cross-encoder failed (cannot load") and note.endswith("fell back to reverse")
        assert not any("cross_encoder" in h.provenance.stage_scores for h in out.hits)
        assert not any("cross-encoder" in n for n in hits.explanation.notes)
    # a failed load is not tried again on every query: the model coming back needs a new reranker
    shutil.copytree(cross_encoder_dir, gone)
    assert ids(vanishing.rerank(QUERY, hits)) == list(reversed(ids(hits))) and second.calls == 2
    assert (
        "cross_encoder" in CrossEncoderReranker(str(gone), second).rerank(QUERY, hits).hits[0].provenance.stage_scores
    )


# -- reply parsing (no model needed) ------------------------------------------------------------------


class Scripted:
    """A provider that answers from a list: for the parsing tolerances a real small model shows only by chance."""

    def __init__(self, replies: list[str]) -> None:
        self.replies = list(replies)
        self.seen: list[list[Message]] = []

    @property
    def model_id(self) -> str:
        return "scripted"

    def complete(self, messages: list[Message], params: GenerationParams | None = None) -> Completion:
        self.seen.append(messages)
        if not self.replies:
            raise LLMError("no more replies")
        return Completion(self.replies.pop(0), "scripted", prompt_tokens=100, completion_tokens=10)

    def stream(self, messages: list[Message], params: GenerationParams | None = None) -> StreamResult:
        raise LLMError("not streamed")


def test_listwise_keeps_every_hit_once_whatever_ids_come_back(hits: RetrievalResult) -> None:
    llm = Scripted(['Sure! Here it is: {"order": [3, "[1]", 3, 9, "passage 5"]} hope that helps'])
    out = LLMReranker(llm, Reverse(), "listwise", depth=5).rerank(QUERY, hits)
    h = ids(hits)
    # named first in the model's order (the duplicate 3 and the unknown 9 ignored), then 2 and 4 as they were
    assert ids(out) == [h[2], h[0], h[4], h[1], h[3], h[5]]
    assert [hit.provenance.stage_scores["llm"] for hit in out.hits[:5]] == [5.0, 4.0, 3.0, 2.0, 1.0]
    assert "llm" not in out.hits[5].provenance.stage_scores
    assert out.explanation.notes[-1] == "rerank: llm listwise scripted, 5 candidates, 1 calls, 3 placed by the model"
    asked = llm.seen[0][-1]["content"]
    assert len(llm.seen) == 1 and asked.startswith(f"Query: {QUERY}") and "[5] " in asked and "[6] " not in asked


def test_reply_models_are_tolerant() -> None:
    assert ListwiseReply.model_validate([2, 1]).order == [2, 1]
    assert ListwiseReply.model_validate({"ranking": [{"id": 4}, "2"]}).order == [4, 2]
    assert PointwiseReply.model_validate({"score": "7/10"}).score == 7.0
    assert PointwiseReply.model_validate({"relevance": 14}).score == 10.0
    with pytest.raises(ValueError):
        ListwiseReply.model_validate({"order": ["none"]})
    with pytest.raises(ValueError):  # a number that is not a score is not taken for one
        PointwiseReply.model_validate({"id": 1, "name": "Bread"})
    assert clip("word " * 100, 42).endswith("...") and estimate_tokens(clip("word " * 100, 42)) <= 42


def test_prompts_fit_smollm2s_context() -> None:
    """Ten long passages, English and Chinese, counted by SmolLM2's own tokenizer: the prompt fits n_ctx 4096."""
    from llama_cpp import Llama

    from waypost.llm.llama_cpp import bundled_smollm2

    vocab = Llama(model_path=str(bundled_smollm2()), vocab_only=True, verbose=False)
    english = "Bread rises because yeast ferments the sugar in dough into carbon dioxide gas. " * 60
    chinese = "面包之所以会发酵膨胀，是因为酵母将面团中的糖分发酵成二氧化碳气体。" * 60
    reranker = LLMReranker(Scripted([]), Reverse(), "listwise")
    for texts in ([english] * 10, [chinese] * 10, [english, chinese] * 5):
        messages = reranker.listwise_messages(chinese[:400], texts)
        prompt = "\n".join(m["content"] for m in messages)
        assert len(vocab.tokenize(prompt.encode(), add_bos=False)) + 16 + 5 * 10 < 4096 - 100  # the reply, chat tags
        assert all(f"[{i}] " in messages[-1]["content"] for i in range(1, 11))
    one = reranker.pointwise_messages(english, chinese)
    assert len(vocab.tokenize("\n".join(m["content"] for m in one).encode(), add_bos=False)) < 1000


def test_pointwise_merges_accounting_and_falls_back_on_unreadable_replies(hits: RetrievalResult) -> None:
    spent = QueryMetadata("hybrid", llm_calls=1, prompt_tokens=50)  # as if filter extraction had asked the LLM
    before = RetrievalResult(list(hits.hits), replace(hits.explanation, notes=[], timings_ms={}, llm=spent))
    llm = Scripted(['{"score": 2}', '```json\n{"score": 9}\n```', '{"score": 5}'])
    out = LLMReranker(llm, Reverse(), "pointwise", depth=3).rerank(QUERY, before)
    h = ids(hits)
    assert ids(out) == [h[1], h[2], h[0], *h[3:]]
    assert [hit.provenance.stage_scores["llm"] for hit in out.hits[:3]] == [9.0, 5.0, 2.0]
    assert out.explanation.llm is not None and before.explanation.llm.llm_calls == 1
    assert out.explanation.llm.llm_calls == 4 and out.explanation.llm.prompt_tokens == 350
    # a reply with no score, twice (complete_structured asks once more), sends the query to the fallback
    bad = Scripted(['{"score": 4}', "I think it is relevant.", "Very relevant indeed."])
    failed = LLMReranker(bad, Reverse(), "pointwise", depth=3).rerank(QUERY, before)
    assert ids(failed) == list(reversed(h))
    assert failed.explanation.notes[-1].startswith("rerank: llm failed (passage ")
    assert failed.explanation.notes[-1].endswith("; fell back to reverse")
    assert failed.explanation.llm is not None and failed.explanation.llm.llm_calls == 4
    assert failed.explanation.llm.fallbacks[-1].startswith("rerank: invalid JSON after retry")
    assert failed.explanation.llm.fallbacks[-1].endswith("; fell back to reverse")


# -- SmolLM2 behind the real llama.cpp server ----------------------------------------------------------


def client(url: str, **kw: Any) -> OpenAICompatibleLLM:
    return OpenAICompatibleLLM("smollm2", url, timeout=60, backoff=0.05, **kw)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["pointwise", "listwise"])
def test_llm_reranker_with_smollm2(mode: str, hits: RetrievalResult, llama_server: LlamaServer, tmp_path: Path) -> None:
    llm = CachedLLM(client(llama_server.url), tmp_path / "llm-cache.sqlite")
    fallback = Reverse()
    reranker = LLMReranker(llm, fallback, mode, depth=4)
    out = reranker.rerank(QUERY, hits)
    assert_same_hits(hits, out)
    assert ids(out)[4:] == ids(hits)[4:]
    assert hits.explanation.llm is None and out.explanation.llm is not None
    used = out.explanation.llm
    assert used.prompt_tokens > 50 and used.completion_tokens > 0 and used.llm_cache_hits == 0
    assert out.explanation.timings_ms["rerank"] > 0
    note = out.explanation.notes[-1]
    # with its worked example even the 135M model answers in JSON (what it scores is another matter)
    assert fallback.calls == 0, note
    calls = 4 if mode == "pointwise" else 1
    assert used.llm_calls >= calls and not used.fallbacks
    assert note.startswith(f"rerank: llm {mode} openai:smollm2, 4 candidates, {used.llm_calls} calls")
    if mode == "listwise":
        assert re.search(r", [1-4] placed by the model$", note)
    assert all("llm" in hit.provenance.stage_scores for hit in out.hits[:4])
    assert all("llm" not in hit.provenance.stage_scores for hit in out.hits[4:])
    scores = [hit.provenance.stage_scores["llm"] for hit in out.hits[:4]]
    assert scores == sorted(scores, reverse=True)
    # the same question again is answered from the on-disk cache: the same order, no new tokens
    again = reranker.rerank(QUERY, hits)
    assert ids(again) == ids(out) and again.explanation.llm is not None
    assert again.explanation.llm.llm_cache_hits == again.explanation.llm.llm_calls == used.llm_calls
    assert again.explanation.llm.prompt_tokens == 0


@pytest.mark.parametrize("mode", ["pointwise", "listwise"])
def test_llm_reranker_falls_back_when_the_server_is_unreachable(mode: str, hits: RetrievalResult) -> None:
    closed = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    fallback = Reverse()
    out = LLMReranker(client(closed, retries=1), fallback, mode, depth=4).rerank(QUERY, hits)
    assert fallback.calls == 1 and ids(out) == list(reversed(ids(hits)))
    note = out.explanation.notes[-1]
    assert note.startswith("rerank: llm failed (") and note.endswith("; fell back to reverse")
    used = out.explanation.llm
    assert used is not None and used.llm_calls == 0 and len(used.fallbacks) == 1  # pointwise stops at the first
    assert used.fallbacks[0].startswith("rerank: ") and used.fallbacks[0].endswith("; fell back to reverse")
    assert out.explanation.timings_ms["rerank"] > 0
