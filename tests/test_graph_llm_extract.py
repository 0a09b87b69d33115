"""The LLM graph extractor: tolerant reading of what a model replies (fenced, wrapped in prose, broken JSON,
other shapes), the fallback for replies it cannot use and for a failing provider, its cache (in memory and
on disk, across instances), its accounting, and SmolLM2-135M behind the real llama.cpp server."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from tests.llama_server import LlamaServer
from waypost.graph.extract import SpacyExtractor
from waypost.graph.llm_extract import PROMPT_VERSION, LLMExtractor, TriplesReply, to_extraction
from waypost.graph.model import ChunkExtraction, ChunkInput, ExtractedEntity, ExtractProgress, entity_key
from waypost.llm.accounting import PriceTable
from waypost.llm.base import Completion, GenerationParams, LLMError, Message, StreamResult
from waypost.llm.openai_compat import OpenAICompatibleLLM

CURIE = ChunkInput(
    "Marie Curie was born in Warsaw. She studied physics in Paris. Curie won the Nobel Prize in 1903.",
    "Marie Curie",
)
GOOD = (
    '{"entities": ["Marie Curie", "Warsaw", "Paris"], "triples": '
    '[["Marie Curie", "born in", "Warsaw"], ["Marie Curie", "studied in", "Paris"]]}'
)
Reply = str | Callable[[list[Message]], str] | Exception


class FakeLLM:
    """Replies from a script (the last one repeats); counts the calls."""

    def __init__(self, *replies: Reply, model: str = "fake-model") -> None:
        self.replies = list(replies)
        self.model = model
        self.calls = 0
        self.seen: list[list[Message]] = []
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return f"fake:{self.model}"

    def complete(self, messages: list[Message], params: GenerationParams | None = None) -> Completion:
        with self._lock:
            reply = self.replies[min(self.calls, len(self.replies) - 1)]
            self.calls += 1
            self.seen.append(messages)
        if isinstance(reply, Exception):
            raise reply
        text = reply(messages) if callable(reply) else reply
        return Completion(text, self.model, 100, 20, 1.0, finish_reason="stop")

    def stream(self, messages: list[Message], params: GenerationParams | None = None) -> StreamResult:
        raise NotImplementedError


class FakeFallback:
    """A stand-in for the offline extractor: one entity per chunk, recorded."""

    name = "fake-fallback"

    def __init__(self) -> None:
        self.chunks: list[ChunkInput] = []

    def extract(self, chunks: Sequence[ChunkInput], progress: ExtractProgress | None = None) -> list[ChunkExtraction]:
        self.chunks.extend(chunks)
        return [ChunkExtraction([ExtractedEntity("from fallback", "phrase", c.text)]) for c in chunks]


def extractor(llm: FakeLLM, **kw: object) -> tuple[LLMExtractor, FakeFallback]:
    fallback = FakeFallback()
    return LLMExtractor(llm, fallback, PriceTable(), **kw), fallback  # type: ignore[arg-type]


def assert_consistent(extraction: ChunkExtraction) -> None:
    names = {e.name for e in extraction.entities}
    assert len({entity_key(n) for n in names}) == len(names)
    for rel in extraction.relations:
        assert rel.source in names and rel.target in names, rel


def triples(extraction: ChunkExtraction) -> set[tuple[str, str, str]]:
    return {(r.source, r.label, r.target) for r in extraction.relations if r.label != "mentions"}


# -- reading replies -----------------------------------------------------------------------------------


def test_a_clean_reply_becomes_entities_and_relations() -> None:
    llm = FakeLLM(GOOD)
    ext, fallback = extractor(llm)
    progress: list[int] = []
    [out] = ext.extract([CURIE], progress.append)
    assert progress == [1] and llm.calls == 1 and not fallback.chunks and ext.fallbacks == 0
    assert triples(out) == {("Marie Curie", "born in", "Warsaw"), ("Marie Curie", "studied in", "Paris")}
    assert_consistent(out)
    by_name = {e.name: e for e in out.entities}
    assert set(by_name) == {"Marie Curie", "Warsaw", "Paris"}
    assert by_name["Marie Curie"].label == "title"  # the document's title, as the offline extractor labels it
    assert by_name["Warsaw"].label == by_name["Paris"].label == "llm"
    assert by_name["Warsaw"].sentence == "Marie Curie was born in Warsaw."
    assert by_name["Paris"].sentence == "She studied physics in Paris."
    # the title is related to what the chunk mentions, at half weight
    mentions = {(r.source, r.target, r.weight) for r in out.relations if r.label == "mentions"}
    assert mentions == {("Marie Curie", "Warsaw", 0.5), ("Marie Curie", "Paris", 0.5)}
    assert ext.name == f"llm:fake:fake-model:{PROMPT_VERSION}"
    # the prompt: a worked example, then the chunk with its title
    last = llm.seen[0][-1]["content"]
    assert last.startswith("Title: Marie Curie\nText: Marie Curie was born") and last.endswith("JSON:")


@pytest.mark.parametrize(
    "reply",
    [
        f"```json\n{GOOD}\n```",
        f"Sure! Here are the facts:\n{GOOD}\nHope this helps.",
        # broken JSON that json-repair mends: single quotes, a trailing comma, the end cut off
        "{'entities': ['Marie Curie', 'Warsaw',], 'triples': [['Marie Curie', 'born in', 'Warsaw'],",
        # other shapes: objects for triples, other key names, a bare list, a number as a name
        '{"relations": [{"subject": "Marie Curie", "predicate": "born in", "object": "Warsaw"}]}',
        '[{"head": "Marie Curie", "relation": "born in", "tail": "Warsaw"}]',
        '{"triples": [["Marie Curie", "born in", "Warsaw", "in 1867"]]}',
        '{"triples": ["Marie Curie", "born in", "Warsaw"]}',
        '{"triples": [["Marie Curie", "Warsaw"]]}',  # a pair: related, no predicate
    ],
)
def test_tolerant_parsing(reply: str) -> None:
    llm = FakeLLM(reply)
    ext, fallback = extractor(llm)
    [out] = ext.extract([CURIE])
    assert llm.calls == 1 and ext.fallbacks == 0 and not fallback.chunks, ext.accounting.fallbacks
    assert {("Marie Curie", "born in", "Warsaw"), ("Marie Curie", "related to", "Warsaw")} & triples(out)
    assert_consistent(out)


def test_empty_overlong_and_self_referencing_names_are_dropped() -> None:
    long = "a very long clause " * 10
    reply = (
        '{"entities": ["", "Warsaw", 42], "triples": ['
        f'["", "is", "Warsaw"], ["{long}", "is", "Warsaw"], ["Curie", "is", "curie"], '
        '["  the  Warsaw ", "", "Poland"], ["Warsaw", "related to", "Poland"], ["Curie", "won", 1903], '
        '{"subject": "Curie"}, null, ["Curie"]]}'
    )
    [out] = extractor(FakeLLM(reply))[0].extract([ChunkInput("Curie lived in Warsaw, Poland. She won in 1903.")])
    assert triples(out) == {("the Warsaw", "related to", "Poland"), ("Curie", "won", "1903")}
    assert {e.name for e in out.entities} == {"the Warsaw", "Poland", "Curie", "1903", "42"}
    assert_consistent(out)  # "Warsaw" is the same entity as "the Warsaw": listed once
    # a name the text does not contain keeps the chunk's opening as its sentence
    assert next(e for e in out.entities if e.name == "42").sentence == "Curie lived in Warsaw, Poland. She won in 1903."


def test_a_bad_first_reply_is_retried_with_the_error() -> None:
    llm = FakeLLM("I don't know.", GOOD)
    ext, fallback = extractor(llm)
    [out] = ext.extract([CURIE])
    assert llm.calls == 2 and ext.fallbacks == 0 and not fallback.chunks
    assert "That was not valid" in llm.seen[1][-1]["content"]
    assert len(triples(out)) == 2


@pytest.mark.parametrize(
    "reply",
    [
        "I am sorry, I cannot extract facts from this text.",
        '{"entities": ["Marie Curie"], "triples": []}',  # nothing to relate
        '{"triples": [["Marie Curie", "is", "Marie Curie"], ["", "", ""]]}',  # nothing usable left
    ],
)
def test_unusable_replies_fall_back_and_are_counted(reply: str) -> None:
    llm = FakeLLM(reply)
    ext, fallback = extractor(llm)
    other = ChunkInput("Warsaw is the capital of Poland.")
    out = ext.extract([CURIE, other], (progress := []).append)  # type: ignore[var-annotated]
    assert len(out) == 2 and progress == [1, 1]
    assert fallback.chunks == [CURIE, other] and ext.fallbacks == 2
    assert [e.name for e in out[0].entities] == ["from fallback"]
    assert llm.calls == 4  # each chunk asked twice (the retry)
    assert len(ext.accounting.fallbacks) == 2 and "invalid JSON after retry" in ext.accounting.fallbacks[0]
    # an unusable reply is remembered: the fallback answers again, the LLM is not asked
    ext.extract([CURIE])
    assert llm.calls == 4 and ext.fallbacks == 3 and ext.cache_hits == 1 and fallback.chunks[-1] == CURIE


def test_a_failing_provider_falls_back_and_is_asked_again_next_time() -> None:
    llm = FakeLLM(LLMError("connection refused"), GOOD)
    ext, fallback = extractor(llm)
    [out] = ext.extract([CURIE])
    assert llm.calls == 1 and ext.fallbacks == 1 and fallback.chunks == [CURIE]
    assert out.entities[0].name == "from fallback"
    assert ext.accounting.fallbacks == ["graph-extract: connection refused"]
    [again] = ext.extract([CURIE])  # a provider failure is not cached
    assert llm.calls == 2 and ext.fallbacks == 1 and len(triples(again)) == 2


def test_an_empty_chunk_asks_nothing() -> None:
    llm = FakeLLM(GOOD)
    ext, fallback = extractor(llm)
    [out] = ext.extract([ChunkInput("   ", "Lonely Title")])
    assert llm.calls == 0 and not fallback.chunks and out.relations == []
    assert [(e.name, e.label) for e in out.entities] == [("Lonely Title", "title")]


def test_to_extraction_without_a_title() -> None:
    reply = TriplesReply.model_validate({"triples": [["Warsaw", "capital of", "Poland"]]})
    out = to_extraction(ChunkInput("Warsaw is the capital of Poland."), reply.triples, reply.entities)
    assert [e.label for e in out.entities] == ["llm", "llm"] and len(out.relations) == 1


# -- cache and accounting ------------------------------------------------------------------------------


def test_the_same_chunk_is_never_asked_twice(tmp_path: Path) -> None:
    cache = tmp_path / "graph" / "extract-cache.sqlite"
    llm = FakeLLM(GOOD)
    ext, _ = extractor(llm, cache_path=cache)
    first = ext.extract([CURIE])
    assert llm.calls == 1 and ext.llm_chunks == 1
    assert ext.extract([CURIE, CURIE]) == first * 2 and llm.calls == 1 and ext.cache_hits == 2
    ext.close()
    # a new extractor on the same file: answered from disk, nothing asked
    fresh_llm = FakeLLM("unused")
    fresh, fallback = extractor(fresh_llm, cache_path=cache)
    assert fresh.extract([CURIE]) == first
    assert fresh_llm.calls == 0 and fresh.cache_hits == 1 and not fallback.chunks
    # another title, another model or another text is another key
    fresh.extract([ChunkInput(CURIE.text, "Physics")])
    assert fresh_llm.calls == 2  # asked (and retried: its reply is no JSON)
    other_model, _ = extractor(FakeLLM(GOOD, model="other"), cache_path=cache)
    assert other_model.key(CURIE) != fresh.key(CURIE)
    fresh.close()


def test_a_returned_extraction_is_a_copy() -> None:
    llm = FakeLLM(GOOD)
    ext, _ = extractor(llm)
    [out] = ext.extract([CURIE])
    out.entities.clear()
    out.relations.clear()
    [again] = ext.extract([CURIE])
    assert llm.calls == 1 and len(again.entities) == 3


def test_accounting_adds_up_tokens_and_cost() -> None:
    llm = FakeLLM("nope", GOOD, model="gpt-4o-mini")
    ext, _ = extractor(llm)
    ext.extract([CURIE, ChunkInput("Paris is in France.")])
    usage = ext.usage()
    assert usage["llm_calls"] == 3 and usage["prompt_tokens"] == 300 and usage["completion_tokens"] == 60
    assert usage["cost_usd"] == pytest.approx((300 * 0.15 + 60 * 0.60) / 1e6, abs=1e-6)
    assert usage["llm_chunks"] == 2 and usage["fallback_chunks"] == 0 and usage["cache_hits"] == 0
    assert ext.accounting.timings_ms["llm"] > 0


def test_workers_keep_the_order_of_the_chunks() -> None:
    def echo(messages: list[Message]) -> str:
        word = messages[-1]["content"].split("Text: ", 1)[1].split()[0]
        return f'{{"triples": [["{word}", "is", "thing"]]}}'

    chunks = [ChunkInput(f"Word{i} is a thing.") for i in range(12)]
    ext, _ = extractor(FakeLLM(echo), workers=4)
    seen: list[int] = []
    out = ext.extract(chunks, seen.append)
    assert [next(iter(triples(o)))[0] for o in out] == [f"Word{i}" for i in range(12)] and seen == [1] * 12


# -- the real model ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_smollm2_extracts_triples_or_falls_back(llama_server: LlamaServer, tmp_path: Path) -> None:
    llm = OpenAICompatibleLLM("smollm2", llama_server.url, timeout=60, backoff=0.05)
    ext = LLMExtractor(llm, SpacyExtractor(), PriceTable(), max_tokens=128, cache_path=tmp_path / "x.sqlite")
    chunks = [
        ChunkInput("Bread rises because yeast ferments the sugar in dough into carbon dioxide gas.", "Bread"),
    ]
    out = ext.extract(chunks)
    assert len(out) == 1
    for extraction in out:
        assert extraction.entities
        for rel in extraction.relations:
            assert rel.source in {e.name for e in extraction.entities}
            assert rel.target in {e.name for e in extraction.entities}
    assert ext.llm_chunks + ext.fallbacks == 1
    assert ("Bread", "title") in {(e.name, e.label) for e in out[0].entities}  # either way
    assert ext.fallbacks > 0 or all(triples(o) for o in out)
    usage = ext.usage()
    assert usage["llm_calls"] >= 1 and usage["prompt_tokens"] > 100 and usage["completion_tokens"] > 0
    assert usage["cost_usd"] == 0.0  # a local model
    # asked again: all from the extractor's cache
    calls = usage["llm_calls"]
    assert ext.extract(chunks) == out and ext.usage()["llm_calls"] == calls and ext.cache_hits == 1
    ext.close()
