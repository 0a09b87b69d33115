"""The graph strategies (graph-local, graph-global, lightrag, multihop) over a real collection (real spaCy
model, real MiniLM): each finds the bridge document of a two-hop question, explains its seeds, bridges or
reports, keeps to a metadata filter, and never returns a document once it is deleted; graph-global's
optional LLM map step rates reports (a fake LLM here)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from waypost.base import Embedder
from waypost.context import SearchContext
from waypost.engine import Collection, Engine, EngineConfig
from waypost.errors import WaypostError
from waypost.filters.model import Condition, Op
from waypost.graph.graph import GraphConfig
from waypost.llm.base import Completion, GenerationParams, LLMError, Message, StreamResult
from waypost.retrieval.fusion import FusionConfig
from waypost.retrieval.graph_global import GlobalParams, GraphGlobalRetriever
from waypost.retrieval.registry import STRATEGIES, make_retriever
from waypost.types import Document, RetrievalResult

STRATEGY_NAMES = ("graph-local", "graph-global", "lightrag", "multihop")
K = 4

# -- corpus ---------------------------------------------------------------------------------------------------
# Invented places, people and organisations. The two-hop question asks where the founder of Marrowdale
# Observatory studied: "marrowdale" names the founder (Elsbeth Varnholt), "varnholt" (the bridge) holds the
# answer (the University of Kestrel Bay) without naming the observatory; "comet" names the observatory too
# and outranks the bridge in plain hybrid search.
DOCS: dict[str, tuple[str, str, str]] = {
    "marrowdale": (
        "Marrowdale Observatory",
        "science",
        "Marrowdale Observatory is an astronomical observatory on the cliffs above Quillhaven. It was founded in "
        "1921 by the astronomer Elsbeth Varnholt, who directed it for thirty years.",
    ),
    "varnholt": (
        "Elsbeth Varnholt",
        "science",
        "Elsbeth Varnholt was a Norwegian astronomer born in the mountain village of Tarnowicz. Varnholt studied "
        "physics at the University of Kestrel Bay and discovered Comet Varnholt in 1934.",
    ),
    "tarnowicz": (
        "Tarnowicz",
        "travel",
        "Tarnowicz is a mountain village in the Greyhorn Mountains, famous for its wooden churches and its "
        "cheese market.",
    ),
    "quillhaven": (
        "Quillhaven",
        "travel",
        "Quillhaven is a fishing town on the northern coast. Its harbour was rebuilt by the Ostrander Shipping "
        "Company in 1890.",
    ),
    "ostrander": (
        "Ostrander Shipping Company",
        "history",
        "The Ostrander Shipping Company was a merchant fleet owned by the banker Corvin Hale. Its ships carried "
        "timber and salt from Brellin.",
    ),
    "hale": (
        "Corvin Hale",
        "history",
        "Corvin Hale was a banker and art collector in Brellin who left his paintings to the Lantern Street Museum.",
    ),
    "museum": (
        "Lantern Street Museum",
        "travel",
        "The Lantern Street Museum in Brellin shows maritime paintings and the collection of Corvin Hale.",
    ),
    "kestrel": (
        "University of Kestrel Bay",
        "science",
        "The University of Kestrel Bay is a public university in Brellin, known for its physics department and "
        "its rowing club.",
    ),
    "brellin": (
        "Brellin",
        "travel",
        "Brellin is the capital of the province of Ostmark and lies on the Sallow River.",
    ),
    "comet": (
        "Comet Varnholt",
        "science",
        "Comet Varnholt is a periodic comet with an orbit of 83 years, first seen from Marrowdale Observatory.",
    ),
    "sallow": (
        "Sallow River",
        "travel",
        "The Sallow River flows from the Greyhorn Mountains to the sea, passing through Brellin.",
    ),
    "greyhorn": (
        "Greyhorn Mountains",
        "travel",
        "The Greyhorn Mountains are a range of granite peaks where shepherds keep goats in summer.",
    ),
}
QUESTION = "Where did the founder of Marrowdale Observatory study?"
BRIDGE = "varnholt"
FIRST_HOP = "marrowdale"
# Untitled, naming nothing spaCy takes for an entity or a noun phrase: the graph records no entity for it.
BLANK = Document("blank", "Hmm, maybe so; it is what it is.", "", {"topic": "misc"})
# A document only the deletion test adds: it answers the question outright, so every strategy returns it.
DECOY = Document(
    "decoy",
    "Records of Marrowdale Observatory say its founder studied at the Pelloran Academy, not in Kestrel Bay.",
    "Marrowdale Observatory records",
    {"topic": "science"},
)


@pytest.fixture(scope="module")
def collection(tmp_path_factory: pytest.TempPathFactory, minilm: Embedder) -> Iterator[Collection]:
    path = tmp_path_factory.mktemp("graph-strategies") / "store"
    config = EngineConfig(chunk_tokens=64, background_index_work=False, graph=GraphConfig(community_max_size=8))
    engine = Engine(path, config)
    engine.register_embedder(minilm)
    coll = engine.collection("c", create=True)
    coll.add([Document(key, text, title, {"topic": topic}) for key, (title, topic, text) in DOCS.items()])
    coll.add([BLANK])
    assert coll.graph().get() is not None
    yield coll
    engine.close()


def documents(result: RetrievalResult) -> list[str]:
    return result.document_ids()


def notes(result: RetrievalResult) -> str:
    return "\n".join(result.explanation.notes)


def test_registered_with_typed_params() -> None:
    for name in STRATEGY_NAMES:
        spec = STRATEGIES[name]
        assert spec.needs_graph and not spec.needs_tree
        assert spec.params().check() == ""  # the defaults are valid
    with pytest.raises(WaypostError, match="hops"):
        make_retriever("graph-local", SearchContext.__new__(SearchContext), params={"hops": 9})
    with pytest.raises(WaypostError, match="rounds"):
        make_retriever("multihop", SearchContext.__new__(SearchContext), params={"rounds": -1})


@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
def test_two_hop_question_returns_the_bridge_document(collection: Collection, strategy: str) -> None:
    result = collection.retrieve(QUESTION, strategy, k=K)
    docs = documents(result)
    assert BRIDGE in docs, f"{strategy} missed the bridge document: {docs}\n{notes(result)}"
    assert FIRST_HOP in docs
    timings = result.explanation.timings_ms
    assert "fetch" in timings and len(timings) >= 4, timings  # per-stage timings
    text = notes(result)
    if strategy == "graph-local":
        assert "seeds: " in text and "Marrowdale Observatory" in text
        assert "neighbours (" in text and "relations (" in text
        assert "Elsbeth Varnholt" in text  # reached from the seed as a neighbour
    elif strategy == "graph-global":
        assert "reports: " in text and "level " in text
    elif strategy == "lightrag":
        assert "low level: " in text and "high level: " in text
        assert "Marrowdale Observatory" in text
    else:
        assert "round 1 bridges: " in text and "Elsbeth Varnholt" in text
        assert set(docs[:2]) == {FIRST_HOP, BRIDGE}  # the bridge's own retrieval lifts it to second


@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
def test_metadata_filter_is_respected(collection: Collection, strategy: str) -> None:
    only_travel = Condition("topic", Op.EQ, "travel")
    result = collection.retrieve(QUESTION, strategy, k=K, filters=only_travel)
    assert result.hits, notes(result)
    assert all(h.metadata["topic"] == "travel" for h in result.hits), documents(result)
    assert not {FIRST_HOP, BRIDGE} & set(documents(result))  # both are science documents


def test_graph_local_falls_back_to_hybrid_without_a_query_entity(collection: Collection) -> None:
    result = collection.retrieve("zzqx wobble flarn", "graph-local", k=K)
    assert "no query entity found in the graph: hybrid results" in notes(result)


def test_multihop_says_when_it_extracts_no_bridge(collection: Collection) -> None:
    only_blank = Condition("topic", Op.EQ, "misc")
    result = collection.retrieve("what is it, maybe", "multihop", k=K, filters=only_blank)
    assert documents(result) == ["blank"]
    assert "the graph records no entity for the top hits: no bridge extracted, hybrid results" in notes(result)
    assert "round 1" not in notes(result)
    result = collection.retrieve(QUESTION, "multihop", k=K, params={"rounds": 0})
    assert "rounds=0: hybrid results" in notes(result) and "round 1" not in notes(result)


@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
def test_deleted_documents_are_never_returned(collection: Collection, strategy: str) -> None:
    collection.add([DECOY])
    try:
        assert "decoy" in documents(collection.retrieve(QUESTION, strategy, k=K))
    finally:
        collection.delete(["decoy"])
    for query in (QUESTION, "Pelloran Academy records", "Marrowdale Observatory"):
        result = collection.retrieve(query, strategy, k=10)
        assert "decoy" not in documents(result), notes(result)
        assert all(h.chunk.document_id in DOCS or h.chunk.document_id == BLANK.id for h in result.hits)


class RatingLLM:
    """A fake LLM for the global map step: rates every report naming ``favourite`` 90, the rest 0."""

    model_id = "fake-rater"

    def __init__(self, favourite: str, fail: bool = False) -> None:
        self.favourite, self.fail = favourite, fail
        self.prompts: list[str] = []

    def complete(self, messages: list[Message], params: GenerationParams | None = None) -> Completion:
        prompt = messages[-1]["content"]
        self.prompts.append(prompt)
        if self.fail:
            raise LLMError("connection refused")
        ratings = []
        for block in prompt.split("\n\nReport ")[1:]:
            number = int(block.split(":", 1)[0])
            ratings.append({"report": number, "score": 90 if self.favourite in block else 0})
        return Completion(json.dumps({"ratings": ratings}), self.model_id, 100, 20)

    def stream(self, messages: list[Message], params: GenerationParams | None = None) -> StreamResult:
        raise NotImplementedError


def test_graph_global_with_an_llm_keeps_the_reports_it_rates(collection: Collection) -> None:
    llm = RatingLLM("Elsbeth Varnholt")
    retriever = GraphGlobalRetriever(collection.context(), FusionConfig(), GlobalParams(), llm)
    result = retriever.retrieve(QUESTION, k=K)
    assert len(llm.prompts) == 1 and QUESTION in llm.prompts[0]
    assert result.explanation.llm is not None and result.explanation.llm.llm_calls == 1
    assert "map" in result.explanation.timings_ms
    text = notes(result)
    assert "above 0" in text
    reports = next(n for n in result.explanation.notes if n.startswith("reports: "))
    assert reports.count("(level") >= 1 and "score 0.90" in reports
    assert BRIDGE in documents(result)

    failing = GraphGlobalRetriever(collection.context(), FusionConfig(), GlobalParams(), RatingLLM("", fail=True))
    result = failing.retrieve(QUESTION, k=K)
    assert "LLM rating failed: reports in their retrieval order" in notes(result)
    assert result.explanation.llm is not None and result.explanation.llm.fallbacks
    assert result.hits


def test_the_engine_gives_graph_global_its_llm(collection: Collection) -> None:
    engine = collection.engine
    llm = RatingLLM("Elsbeth Varnholt")
    engine.use_llm(llm)
    try:
        result = collection.retrieve(QUESTION, "graph-global", k=K)
        assert len(llm.prompts) == 1 and result.explanation.llm is not None
        assert result.explanation.llm.llm_calls == 1 and BRIDGE in documents(result)
        offline = collection.retrieve(QUESTION, "graph-global", k=K, params={"rate": 0})
        assert len(llm.prompts) == 1 and offline.explanation.llm is None
    finally:
        engine.use_llm(None)
    assert collection.retrieve(QUESTION, "graph-global", k=K).explanation.llm is None


def test_hipporag_takes_no_title_the_query_names_for_a_bridge(collection: Collection) -> None:
    bridged = collection.retrieve(QUESTION, "hipporag", k=K)
    assert documents(bridged)[:2] == [FIRST_HOP, BRIDGE] or documents(bridged)[:2] == [BRIDGE, FIRST_HOP]
    # the query names the founder: the link from the observatory to her paragraph is no longer a hidden hop
    named = collection.retrieve(
        "Where did Elsbeth Varnholt, founder of Marrowdale Observatory, study?", "hipporag", k=K
    )
    assert BRIDGE in documents(named)
    assert not any(n.startswith("bridge:") and "Elsbeth Varnholt" in n for n in named.explanation.notes), notes(named)
