"""LLM-backed filter extraction, checked against the collection's values, with rule-based fallback."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.fault_server import FaultServer, fault_server
from waypost.engine import Engine
from waypost.llm.openai_compat import OpenAICompatibleLLM
from waypost.types import Document

DOCS = [
    Document(
        "a", "A documentary about rivers in India.", "Rivers", {"type": "Movie", "country": "India", "year": 2018}
    ),
    Document(
        "b", "A documentary about deserts in India.", "Deserts", {"type": "Movie", "country": "India", "year": 2009}
    ),
    Document("c", "A comedy series set in Spain.", "Laughs", {"type": "TV Show", "country": "Spain", "year": 2020}),
]


@pytest.fixture
def setup(engine: Engine) -> Iterator[tuple[Engine, FaultServer]]:
    engine.collection("films", create=True).add(DOCS)
    with fault_server() as srv:
        engine.use_llm(OpenAICompatibleLLM("m", srv.url, retries=0, backoff=0.01))
        engine.config.llm_filters = True
        yield engine, srv


def test_llm_filters_are_used_when_valid(setup: tuple[Engine, FaultServer]) -> None:
    engine, srv = setup
    srv.reply = json.dumps(
        {
            "filters": [
                {"field": "country", "op": "eq", "value": "india"},
                {"field": "year", "op": "gt", "value": 2015},
            ],
            "query": "rivers",
        }
    )
    result = engine.collection("films").retrieve("Indian films after 2015 about rivers", "metadata", k=5)
    assert [h.document_id for h in result.hits] == ["a"]
    assert result.explanation.filters == "(country = 'India' AND year > 2015)"
    assert result.explanation.semantic_query == "rivers"
    assert result.metadata.llm_calls == 1 and result.metadata.prompt_tokens == 11
    prompt = srv.requests[0]["messages"][0]["content"]  # type: ignore[index]
    assert "country: text" in prompt and "year: number from 2009 to 2020" in prompt


def test_llm_exclusions_are_checked_and_used(setup: tuple[Engine, FaultServer]) -> None:
    engine, srv = setup
    srv.reply = json.dumps({"filters": [{"field": "country", "op": "ne", "value": "spain"}], "query": "documentary"})
    result = engine.collection("films").retrieve("a documentary not from Spain", "metadata", k=5)
    assert sorted(h.document_id for h in result.hits) == ["a", "b"]
    assert result.explanation.filters == "country != 'Spain'"
    assert "ne|nin" in srv.requests[0]["messages"][0]["content"]  # type: ignore[index]
    srv.reply = json.dumps({"filters": [{"field": "country", "op": "ne", "value": ["Spain", "India"]}], "query": ""})
    result = engine.collection("films").retrieve("movies not from Spain", "metadata", k=5)
    assert result.metadata.fallbacks and "takes one value" in result.metadata.fallbacks[0]
    assert result.explanation.filters == "(type = 'Movie' AND country != 'Spain')"  # the rule-based extractor's


def test_llm_nin_and_a_number_exclusion(setup: tuple[Engine, FaultServer]) -> None:
    engine, srv = setup
    srv.reply = json.dumps(
        {
            "filters": [
                {"field": "country", "op": "nin", "value": ["spain"]},
                {"field": "year", "op": "ne", "value": 2009},
            ],
            "query": "",
        }
    )
    result = engine.collection("films").retrieve("not from Spain, not from 2009", "metadata", k=5)
    assert [h.document_id for h in result.hits] == ["a"]
    assert result.explanation.filters == "(country not in ['Spain'] AND year != 2009)"


def test_invalid_llm_filters_fall_back_to_rules(setup: tuple[Engine, FaultServer]) -> None:
    engine, srv = setup
    srv.reply = json.dumps({"filters": [{"field": "country", "op": "eq", "value": "Atlantis"}], "query": ""})
    result = engine.collection("films").retrieve("movies from Spain", "metadata", k=5)
    assert result.metadata.fallbacks and "Atlantis" in result.metadata.fallbacks[0]
    assert "country = 'Spain'" in (result.explanation.filters or "")  # the rule-based extractor's answer


def test_llm_outage_falls_back_to_rules(setup: tuple[Engine, FaultServer]) -> None:
    engine, srv = setup
    srv.script = ["500"]
    result = engine.collection("films").retrieve("movies from India released before 2010", "metadata", k=5)
    assert [h.document_id for h in result.hits] == ["b"]
    assert result.metadata.llm_calls == 0 and "rule-based" in result.metadata.fallbacks[0]


def test_llm_filters_are_opt_in(setup: tuple[Engine, FaultServer]) -> None:
    engine, srv = setup
    engine.config.llm_filters = False
    result = engine.collection("films").retrieve("movies from Spain", "metadata", k=5)
    assert srv.requests == [] and result.metadata.llm_calls == 0
