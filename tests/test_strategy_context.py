"""What used to be special cases in ``Collection.retrieve`` now comes with the strategy wherever it is made
(``make_retriever``, as the router makes them): the metadata strategy extracts filters with the LLM the
search context carries when ``llm_filters`` is on, and a strategy registered with ``needs_graph`` holds the
graph's read section for its whole query, whatever its name."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator

import pytest

from tests.fault_server import FaultServer, fault_server
from waypost.base import Retriever
from waypost.context import SearchContext
from waypost.engine import Engine
from waypost.filters.model import Filter
from waypost.llm.openai_compat import OpenAICompatibleLLM
from waypost.retrieval.fusion import FusionConfig
from waypost.retrieval.hybrid import HybridRetriever
from waypost.retrieval.registry import STRATEGIES, Strategy, make_retriever
from waypost.types import Document, RetrievalResult

FILMS = [
    Document("a", "A documentary about rivers in India.", "Rivers", {"country": "India", "year": 2018}),
    Document("b", "A documentary about deserts in India.", "Deserts", {"country": "India", "year": 2009}),
    Document("c", "A comedy series set in Spain.", "Laughs", {"country": "Spain", "year": 2020}),
]
PEOPLE = [
    Document("curie", "Marie Curie studied radioactivity in Paris with Pierre Curie.", "Marie Curie"),
    Document("meitner", "Lise Meitner worked in Berlin with Otto Hahn on nuclear fission.", "Lise Meitner"),
    Document("noether", "Emmy Noether taught algebra in Göttingen.", "Emmy Noether"),
]
LATE = [
    Document("franklin", "Rosalind Franklin photographed DNA in London.", "Rosalind Franklin"),
    Document("hopper", "Grace Hopper wrote compilers for the Navy in Philadelphia.", "Grace Hopper"),
]


@pytest.fixture
def films(engine: Engine) -> Iterator[tuple[Engine, FaultServer]]:
    engine.collection("films", create=True).add(FILMS)
    with fault_server() as srv:
        engine.use_llm(OpenAICompatibleLLM("m", srv.url, retries=0, backoff=0.01))
        yield engine, srv


def test_the_metadata_strategy_made_anywhere_uses_the_llm_filters_of_its_context(
    films: tuple[Engine, FaultServer],
) -> None:
    engine, srv = films
    srv.reply = json.dumps({"filters": [{"field": "year", "op": "lt", "value": 2015}], "query": "documentary"})
    engine.config.llm_filters = True
    result = make_retriever("metadata", engine.collection("films").context()).retrieve("older documentaries", 5)
    assert result.document_ids() == ["b"]
    assert result.explanation.filters == "year < 2015"
    assert result.explanation.llm is not None and result.explanation.llm.llm_calls == 1


def test_without_llm_filters_the_metadata_strategy_asks_no_llm(films: tuple[Engine, FaultServer]) -> None:
    engine, srv = films
    engine.config.llm_filters = False
    ctx = engine.collection("films").context()
    assert ctx.filter_extractor_source is None
    result = make_retriever("metadata", ctx).retrieve("documentaries from India", 5)
    assert set(result.document_ids()) == {"a", "b"}  # the rules over the collection's values
    assert srv.requests == []


@pytest.mark.parametrize("needs_graph", [True, False])
def test_a_registered_graph_strategy_holds_the_read_section(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, needs_graph: bool
) -> None:
    coll = engine.collection("people", create=True)
    coll.add(PEOPLE)
    live = coll.graph()
    assert live.get() is not None
    waited: list[bool] = []
    writers: list[threading.Thread] = []
    late = list(LATE)

    class Probe:
        """A new strategy: while it runs, a write lands and another thread tries to catch the graph up."""

        name = "probe"

        def __init__(self, ctx: SearchContext, fusion: FusionConfig) -> None:
            self.hybrid = HybridRetriever(ctx, fusion)

        def retrieve(self, query: str, k: int = 10, filters: Filter | None = None) -> RetrievalResult:
            coll.add([late.pop()])
            writer = threading.Thread(target=live.get)
            writer.start()
            writer.join(timeout=2.0 if needs_graph else 120.0)
            waited.append(writer.is_alive())
            writers.append(writer)
            return self.hybrid.retrieve(query, k, filters)

    def make(ctx: SearchContext, fusion: FusionConfig, _params: object) -> Retriever:
        return Probe(ctx, fusion)

    monkeypatch.setitem(STRATEGIES, "probe", Strategy(make, needs_graph=needs_graph))
    runs: list[Callable[[], RetrievalResult]] = [
        lambda: coll.retrieve("Who studied radioactivity?", "probe", k=2),
        lambda: make_retriever("probe", coll.context()).retrieve("Who studied radioactivity?", 2),  # as the router
    ]
    for retrieve in runs:
        assert retrieve().document_ids()[0] == "curie"
        writers[-1].join(timeout=120.0)  # the section is over: the catch-up goes through
        assert not writers[-1].is_alive()
    assert waited == [needs_graph] * 2, "a graph strategy's query must hold the graph still (and no other must)"
    graph = live.get()
    assert graph is not None and graph.generation == engine.store.generation("people")
