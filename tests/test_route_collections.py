"""Stage 1: choosing collections (embedding and LLM selectors), descriptions, and Engine.search."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from waypost.base import Embedder
from waypost.engine import Engine, EngineConfig
from waypost.errors import FilterError, InvalidInputError, WaypostError
from waypost.filters.model import Condition, Filter, Op
from waypost.llm.base import Completion, GenerationParams, LLMError, Message, StreamResult
from waypost.route.base import Attempt, CollectionChoice
from waypost.route.collections import (
    FUSE_RATIO,
    SIGNALS,
    EmbeddingCollectionSelector,
    LLMCollectionSelector,
    parse_collection_reply,
)
from waypost.route.config import RouterConfig
from waypost.route.router import Router
from waypost.route.selectors.heuristic import HeuristicSelector
from waypost.types import Document

RECIPES = [
    Document("bread", "Knead the dough for ten minutes, let it rise, then bake the bread at 220 degrees."),
    Document("soup", "Simmer onions, carrots and lentils in stock; season the soup with cumin."),
    Document("cake", "Whisk eggs and sugar, fold in flour and butter, and bake the sponge cake."),
]
SKY = [
    Document("mars", "Mars is a cold desert planet with two small moons, Phobos and Deimos."),
    Document("nebula", "A nebula is a cloud of gas and dust where new stars are born."),
    Document("jupiter", "Jupiter, the largest planet, has a great red storm and dozens of moons."),
]
FILMS = [
    Document("f1", "A crew of astronauts travels through a wormhole near Saturn.", metadata={"director": "Nolan"}),
    Document("f2", "A chef opens a food truck and rediscovers cooking.", metadata={"director": "Favreau"}),
    Document("f3", "A heist inside dreams within dreams.", metadata={"director": "Nolan"}),
]


@pytest.fixture
def three(engine: Engine) -> Engine:
    for name, docs in (("recipes", RECIPES), ("sky", SKY), ("films", FILMS)):
        engine.collection(name, create=True).add(docs)
    return engine


def test_the_collection_that_holds_the_answer_is_chosen_with_confidence(three: Engine) -> None:
    selector = EmbeddingCollectionSelector(three)
    names = ["films", "recipes", "sky"]
    choice = selector.select("how long should bread dough rise before baking", names)
    assert choice.collections == ["recipes"] and choice.confidence > 0.5
    assert set(choice.scores) == set(names) and abs(sum(choice.scores.values()) - 1) < 1e-3
    assert selector.select("which planet has moons named Phobos and Deimos", names).collections == ["sky"]


def test_a_filter_on_a_field_only_one_collection_has_restricts_the_choice(three: Engine) -> None:
    selector = EmbeddingCollectionSelector(three)
    nolan = Condition("director", Op.EQ, "Nolan")
    choice = selector.select("planets and moons", ["films", "recipes", "sky"], nolan)
    assert choice.collections == ["films"] and "director" in choice.reasoning
    # a field no collection has is an error that lists every collection's fields (searching would fail anyway)
    with pytest.raises(FilterError, match=r"unknown metadata field 'x': no collection has it \(fields of films: "):
        selector.select("planets and moons", ["films", "sky"], Condition("x", Op.EQ, 1))
    with pytest.raises(FilterError, match="sky: none"):
        three.search("planets", filters=Condition("x", Op.EQ, 1))


def test_close_collections_are_fused_and_search_explains_the_choice(three: Engine) -> None:
    three.use_collection_selector(EmbeddingCollectionSelector(three, fuse_ratio=0.0))
    result = three.search("cooking in space", k=4, strategy="hybrid")  # the lead's p rounds below 1
    note = result.explanation.notes[0]
    assert note.startswith("collections ") and "by embedding" in note
    assert len(note.split(" chosen")[0].split(",")) == 3  # every collection, fused
    assert "fused hybrid, hybrid, hybrid by each next hit's similarity to the query" in result.explanation.notes
    assert len(result.hits) == 4 and "collections" in result.explanation.timings_ms
    choice = (result.explanation.route or {})["collections"]
    lead = choice["collections"][0]
    assert choice["confidence"] == choice["scores"][lead] < 1.0  # the lead's probability, not the fused sum
    assert "together p=1.00" in choice["reasoning"]

    three.use_collection_selector(EmbeddingCollectionSelector(three))
    only = three.search("moons of planets", k=2, strategy="hybrid")
    assert only.explanation.notes[0].startswith("collections sky chosen by embedding")
    assert {h.chunk.document_id for h in only.hits} <= {d.id for d in SKY}
    named = three.search("moons of planets", k=2, collections=["recipes"], strategy="hybrid")
    assert "chosen by given" in named.explanation.notes[0]
    assert {h.chunk.document_id for h in named.hits} <= {d.id for d in RECIPES}


class Probed(EmbeddingCollectionSelector):
    """The embedding selector over set probe values (one signal, weight 1): the logits are the values."""

    def __init__(self, engine: Engine, probes: Mapping[str, float], fuse_ratio: float = FUSE_RATIO) -> None:
        super().__init__(engine, weights={"probe": 1.0}, fuse_ratio=fuse_ratio)
        self.probes = dict(probes)

    def signals(
        self,
        query: str,
        names: Sequence[str],
        query_vectors: Mapping[str, object] | None = None,
        skip_identical: bool = False,
    ) -> dict[str, dict[str, float]]:
        return {n: {**dict.fromkeys(SIGNALS, 0.0), "probe": self.probes[n]} for n in names}


def test_a_runner_up_within_half_the_best_probability_is_fused_by_probability(engine: Engine) -> None:
    # Chosen on the mixed workload's train split (benchmarks/bench_fusion.py): ratios up to never fusing tied
    # there, and 0.5 searched the query's own collection for the most queries.
    assert FUSE_RATIO == 0.5
    names = ["a", "b", "c"]

    def chosen(ratio_b: float, ratio_c: float = 0.01, fuse_ratio: float = FUSE_RATIO) -> list[str]:
        probes = {"a": 0.0, "b": math.log(ratio_b), "c": math.log(ratio_c)}
        return Probed(engine, probes, fuse_ratio).select("q", names).collections

    assert chosen(0.4) == ["a"]
    assert chosen(0.6) == ["a", "b"]
    assert chosen(0.9, 0.55) == ["a", "b", "c"]
    assert chosen(0.6, fuse_ratio=0.85) == ["a"]  # settable (a profile's "fuse_ratio")
    assert chosen(1.0, fuse_ratio=1.01) == ["a"]  # above 1: never fuse, and the best is still chosen
    choice = Probed(engine, {"a": 0.0, "b": math.log(0.6), "c": -5.0}).select("q", names)
    assert choice.scores["a"] > choice.scores["b"] > choice.scores["c"]  # the fusion weights route.search uses
    assert abs(choice.scores["b"] / choice.scores["a"] - 0.6) < 1e-3


def test_a_profile_may_set_only_the_fuse_ratio(engine: Engine) -> None:
    selector = EmbeddingCollectionSelector.from_json(engine, '{"fuse_ratio": 1.01}')
    assert selector.fuse_ratio == 1.01 and selector.weights == EmbeddingCollectionSelector(engine).weights
    assert EmbeddingCollectionSelector.from_json(engine, "{}").fuse_ratio == FUSE_RATIO


def test_a_collection_the_query_names_is_searched(three: Engine) -> None:
    result = three.search("moons of planets in the Recipes collection", k=2, strategy="hybrid")
    assert result.explanation.notes[0].startswith("collections recipes chosen by query")
    assert {h.chunk.document_id for h in result.hits} <= {d.id for d in RECIPES}
    unknown = three.search("moons of planets in the attic collection", k=2, strategy="hybrid")
    assert "chosen by embedding" in unknown.explanation.notes[0]  # no such collection: the selector chooses


def test_a_description_is_a_signal_and_profiles_follow_the_version(three: Engine) -> None:
    selector = EmbeddingCollectionSelector(three, weights={"description": 1.0})
    before = selector.signals("cooking", ["recipes"])["recipes"]["description"]
    assert before == 0.0
    first = selector.profile("recipes")
    assert selector.profile("recipes") is first  # cached while nothing changes
    three.collection("recipes").describe("  Kitchen recipes:\n cooking, baking and soups. ")
    assert three.collection("recipes").info.description == "Kitchen recipes: cooking, baking and soups."
    assert selector.signals("cooking", ["recipes"])["recipes"]["description"] > 0.4
    described = selector.profile("recipes")
    three.collection("recipes").add([Document("pie", "Roll the pastry and bake the apple pie.")])
    assert selector.profile("recipes") is not described  # a write makes a new profile


def test_rare_names_weigh_more_than_common_words(engine: Engine) -> None:
    # Both collections' best chunk holds two of the query's terms, so ``lexical`` ties; the meetings
    # hold the common ones (in every chunk there), the atlas the rare names: ``rare`` prefers the atlas.
    said = "The committee will say more on item {} at the next committee meeting."
    minutes = [Document(f"m{i}", said.format(i)) for i in range(8)]
    engine.collection("minutes", create=True).add(minutes)
    engine.collection("atlas", create=True).add(
        [Document("delta", "The Okavango Delta floods every winter."), Document("sea", "The Aral Sea shrank.")]
    )
    query = "What did the committee say about the Okavango Delta?"
    found = EmbeddingCollectionSelector(engine).signals(query, ["minutes", "atlas"])
    assert found["minutes"]["lexical"] == found["atlas"]["lexical"]
    assert found["atlas"]["rare"] > 2 * found["minutes"]["rare"] > 0.0
    assert EmbeddingCollectionSelector(engine).signals("the the", ["atlas"])["atlas"]["rare"] == 0.0  # no terms


def test_terms_a_catalogue_holds_in_its_fields_count_as_held(engine: Engine) -> None:
    # The catalogue's texts are plots: the year and the format live in its fields. A wiki page holds the
    # same words in its text. Read as values of the catalogue's fields, they count as held there too.
    shows = [
        Document(f"s{i}", plot, metadata={"genre": genre, "year": year, "format": fmt})
        for i, (plot, genre, year, fmt) in enumerate(
            [
                ("Office workers film a mockumentary about their paper company.", "comedy", 2005, "series"),
                ("Two detectives chase a serial killer through a rainy city.", "crime", 2007, "film"),
                ("A teacher turns to cooking a dangerous product in the desert.", "drama", 2008, "series"),
            ]
        )
    ]
    engine.collection("shows", create=True).add(shows)
    engine.collection("wiki", create=True).add(
        [Document("w", "The comedy series premiered in 2005 and ran for nine seasons.")]
    )
    query = "comedy series from 2005"
    held = EmbeddingCollectionSelector(engine).signals(query, ["shows", "wiki"])
    text_only = EmbeddingCollectionSelector(engine, fields_hold_terms=False).signals(query, ["shows", "wiki"])
    assert text_only["shows"]["coverage"] < 1.0 and text_only["shows"]["rare"] < held["shows"]["rare"]
    # as much of the query as the page that spells it out ("from" is in neither, and is no value)
    assert held["shows"]["coverage"] == held["shows"]["lexical"] == held["wiki"]["lexical"] == 0.75
    assert held["wiki"] == text_only["wiki"]  # no fields, nothing held
    chance = EmbeddingCollectionSelector(engine).select(query, ["shows", "wiki"]).scores["shows"]
    text_chance = EmbeddingCollectionSelector(engine, fields_hold_terms=False).select(query, ["shows", "wiki"])
    assert chance > 2 * text_chance.scores["shows"]
    # a held word a chunk's text also has counts once ("comedy" is a genre and in a plot), never above 1
    engine.collection("shows").add(
        [Document("s9", "A comedy about a wedding.", metadata={"genre": "comedy", "year": 2009, "format": "film"})]
    )
    both = EmbeddingCollectionSelector(engine).signals("comedy wedding", ["shows"])["shows"]
    assert both["coverage"] == both["lexical"] == 1.0 and 0.0 < both["rare"] <= 1.0
    assert EmbeddingCollectionSelector(engine).signals("comedy comedy", ["shows"])["shows"]["coverage"] == 1.0
    # a query the fields do not read is scored on the text alone
    plain = "a mockumentary about a paper company"
    assert EmbeddingCollectionSelector(engine).signals(plain, ["shows"]) == EmbeddingCollectionSelector(
        engine, fields_hold_terms=False
    ).signals(plain, ["shows"])


class ScriptedLLM:
    model_id = "fake-router"

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.prompts: list[str] = []

    def complete(self, messages: list[Message], params: GenerationParams | None = None) -> Completion:
        self.prompts.append(messages[-1]["content"])
        if not self.reply:
            raise LLMError("connection refused")
        return Completion(self.reply, self.model_id)

    def stream(self, messages: list[Message], params: GenerationParams | None = None) -> StreamResult:
        raise NotImplementedError


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("COLLECTIONS: sky\nCONFIDENCE: 0.9\nREASONING: planets", (["sky"], 0.9, "planets")),
        ("**Collection**: `Sky`, recipes\nconfidence = 70%\n", (["sky", "recipes"], 1.0, "")),
        ("Collections: films and sky\nConfidence: high", (["films", "sky"], 0.5, "")),
        ("COLLECTIONS: astronomy\nCONFIDENCE: 0.9", "the reply names 'astronomy', which is not a collection"),
        ("I would search the sky collection.", "the reply names no collection"),
    ],
)
def test_parse_collection_reply(reply: str, expected: object) -> None:
    assert parse_collection_reply(reply, ["films", "recipes", "sky"]) == expected


def test_the_llm_selector_uses_a_valid_reply_and_falls_back_on_an_invented_name(three: Engine) -> None:
    three.collection("sky").describe("Astronomy: planets, moons, stars.")
    good = ScriptedLLM("COLLECTIONS: sky\nCONFIDENCE: 0.8\nREASONING: it asks about moons")
    choice = LLMCollectionSelector(good, EmbeddingCollectionSelector(three)).select(
        "moons of Mars", ["films", "recipes", "sky"]
    )
    assert (choice.collections, choice.confidence, choice.selector) == (["sky"], 0.8, "llm")
    assert "- sky: Astronomy: planets, moons, stars." in good.prompts[0]
    assert "- films: (no description)" in good.prompts[0]

    for reply in ("COLLECTIONS: astronomy", "no idea", ""):
        fallback = LLMCollectionSelector(ScriptedLLM(reply), EmbeddingCollectionSelector(three)).select(
            "which planet has moons named Phobos and Deimos", ["films", "recipes", "sky"]
        )
        assert fallback.collections == ["sky"] and fallback.selector == "llm->embedding"
        assert fallback.reasoning.startswith("LLM reply unusable")


def test_learned_exemplars_steer_the_choice_and_round_trip_as_json(three: Engine) -> None:
    exemplars = {"recipes": ["what should I cook for dinner"], "sky": ["which planets can I see tonight"]}
    learned = EmbeddingCollectionSelector(three, weights={"exemplar": 10.0}, exemplars=exemplars)
    assert learned.name == "learned"
    choice = learned.select("any ideas to cook for dinner tonight", ["films", "recipes", "sky"])
    assert choice.collections == ["recipes"] and choice.selector == "learned"
    signals = learned.signals("which planets can I see tonight", ["recipes", "sky"], skip_identical=True)
    assert signals["sky"]["exemplar"] == 0.0  # the query itself is left out when fitting
    assert learned.signals("which planets can I see tonight", ["sky"])["sky"]["exemplar"] > 0.99
    again = EmbeddingCollectionSelector.from_json(three, learned.to_json())
    assert (again.weights, again.exemplars, again.name) == (learned.weights, learned.exemplars, "learned")
    with pytest.raises(InvalidInputError):
        EmbeddingCollectionSelector.from_json(three, '{"weights": 3}')


def test_the_engine_loads_a_learned_profile(tmp_path: Path, minilm: Embedder) -> None:
    profile = tmp_path / "selector.json"
    profile.write_text(json.dumps({"weights": {"exemplar": 5.0}, "exemplars": {"a": ["dinner ideas"]}}))
    with Engine(tmp_path / "store", EngineConfig(collection_selector=f"learned:{profile}")) as engine:
        selector = engine.collection_selector()
        assert isinstance(selector, EmbeddingCollectionSelector) and selector.name == "learned"
    with Engine(tmp_path / "store", EngineConfig(collection_selector="learned:/no/such.json")) as engine:
        with pytest.raises(WaypostError, match="cannot read the collection selector profile"):
            engine.collection_selector()


class Unsure:
    """A stage-1 selector that picks one collection without conviction."""

    name = "unsure"

    def __init__(self, pick: str, confidence: float) -> None:
        self.pick, self.confidence = pick, confidence

    def select(self, query: str, collections: Sequence[str], filters: Filter | None = None) -> CollectionChoice:
        scores = {n: (0.5 if n == self.pick else 0.3 if n == "sky" else 0.2) for n in collections}
        return CollectionChoice([self.pick], self.confidence, "test", self.name, scores)


class TakeOther:
    """A corrective loop that always tries another collection when it is offered one, and keeps it."""

    def __init__(self) -> None:
        self.offered: list[bool] = []

    def correct(self, query, result, choice, execute, k, filters, *, extracted=None, ctx=None, alternatives=None):  # type: ignore[no-untyped-def]
        self.offered.append(alternatives is not None)
        if alternatives is None:
            return result, []
        name, other = alternatives(query, k, filters)
        return other, [Attempt("another collection", f"from {name}", 0.9, True)]


def test_an_unsure_collection_choice_lets_the_corrective_loop_try_the_runner_up(three: Engine) -> None:
    from waypost.route.cache import cache_key

    loop = TakeOther()
    config = RouterConfig(correct_below=1.01)
    router = Router(HeuristicSelector(), corrector=loop, config=config, cache=three.query_cache, cache_key=cache_key)
    three.use_router(router)
    three.use_collection_selector(Unsure("recipes", 0.4))
    result = three.search("moons of planets", k=2)
    assert loop.offered == [True] and result.explanation.route is not None
    assert result.explanation.route["attempts"][0]["action"] == "another collection"
    assert {h.chunk.document_id for h in result.hits} <= {d.id for d in SKY}  # the runner-up: sky
    assert result.explanation.route["collection"] == "sky"
    # the HTTP API and MCP name the collection the hits come from, not stage 1's unsure pick
    import anyio

    from waypost.aio import AsyncEngine
    from waypost.server.auto import search_auto

    _found, chosen, answered = anyio.run(search_auto, AsyncEngine(three), "moons of the planets", "auto", 2, None)
    assert chosen.collections == ["recipes"] and answered == ["sky"]
    # sky's hits were not cached under recipes' key: recipes answers from recipes, and never serves them again
    own = three.collection("recipes").retrieve("moons of planets", "auto", 2)
    assert own.explanation.route is not None and not own.explanation.route["cache_hit"]
    three.use_collection_selector(Unsure("recipes", 0.9))
    sure = three.search("moons of planets", k=2)
    assert loop.offered == [True, True, False]
    assert {h.chunk.document_id for h in sure.hits} <= {d.id for d in RECIPES}


def test_fused_collections_keep_documents_with_the_same_id_apart(engine: Engine) -> None:
    # one span each, the same offsets: only the collection tells the two hits apart
    engine.collection("cats", create=True).add([Document("doc1", "Cats purr softly.")])
    engine.collection("dogs", create=True).add([Document("doc1", "Dogs bark loudly.")])
    result = engine.search("pets that purr or bark", k=5, collections=["cats", "dogs"], strategy="bm25")
    found = sorted((h.provenance.collection, h.chunk.document_id) for h in result.hits)
    assert found == [("cats", "doc1"), ("dogs", "doc1")]


class Torn:
    """A stage-1 selector that fuses two collections, ``lead`` the likelier by a hair."""

    name = "torn"

    def __init__(self, lead: str, other: str) -> None:
        self.lead, self.other = lead, other

    def select(self, query: str, collections: Sequence[str], filters: Filter | None = None) -> CollectionChoice:
        scores = {self.lead: 0.51, self.other: 0.49}
        return CollectionChoice([self.lead, self.other], 0.51, "test", self.name, scores)


def test_fused_collections_merge_by_each_next_hits_similarity(three: Engine) -> None:
    # stage 1 leads with the wrong collection by a hair: rank fusion would put a recipe first
    three.use_collection_selector(Torn("recipes", "sky"))
    query = "which planet has two small moons named Phobos and Deimos"
    result = three.search(query, k=4, strategy="hybrid")
    assert result.hits[0].chunk.document_id == "mars"
    assert any("similarity to the query" in note for note in result.explanation.notes)
    assert result.explanation.timings_ms["merge"] > 0 and not any(
        "ranks, not cosines" in n for n in result.explanation.notes
    )
    # each collection's hits keep their own order
    for name, docs in (("recipes", RECIPES), ("sky", SKY)):
        alone = [h.chunk.document_id for h in three.collection(name).retrieve(query, "hybrid", 4).hits]
        merged = [h.chunk.document_id for h in result.hits if h.provenance.collection == name]
        assert merged == alone[: len(merged)] and {d.id for d in docs} >= set(merged)
    # the order does not depend on which collection stage 1 put first
    three.use_collection_selector(Torn("sky", "recipes"))
    again = three.search(query, k=4, strategy="hybrid")
    assert [(h.provenance.collection, h.chunk.document_id) for h in again.hits] == [
        (h.provenance.collection, h.chunk.document_id) for h in result.hits
    ]
    # a language the embedder does not cover: its cosines do not compare; rank fusion, stage 1's lead first
    thai = three.search("ดาวเคราะห์ดวงไหนมีดวงจันทร์สองดวง", k=4, strategy="hybrid")
    assert any("by reciprocal rank" in note for note in thai.explanation.notes)
    assert any(
        n.startswith("ranks, not cosines: the embedder covers the query's language (th)")
        for n in thai.explanation.notes
    )
    assert thai.hits[0].provenance.collection == "sky"


def test_merge_by_similarity_keeps_each_order_and_each_span_once() -> None:
    from waypost.route.execute import merge_by_similarity
    from waypost.types import Chunk, Explanation, Hit, Provenance, RetrievalResult

    def result(collection: str, ids: list[str]) -> RetrievalResult:
        hits = [
            Hit(Chunk(i, 0, i, 0, len(i), 1, (), "en"), 1.0, "hybrid", Provenance(collection, i, "test")) for i in ids
        ]
        return RetrievalResult(hits, Explanation("hybrid", "q", "q", None, None, {}))

    a, b = result("a", ["a1", "a2", "a3"]), result("b", ["b1", "b2"])
    merged = merge_by_similarity("q", [a, b], [[0.9, 0.2, 0.8], [0.5, 0.4]], 4)
    assert [h.chunk.document_id for h in merged.hits] == ["a1", "b1", "b2", "a2"]  # a3 waits behind a2
    assert [h.score for h in merged.hits] == sorted((h.score for h in merged.hits), reverse=True)
    same = result("a", ["a1"])
    assert [h.chunk.document_id for h in merge_by_similarity("q", [a, same], [[0.9, 0.2, 0.8], [0.95]], 5).hits] == [
        "a1", "a2", "a3"
    ]  # fmt: skip
    with pytest.raises(InvalidInputError):
        merge_by_similarity("q", [a, b], [[0.9], [0.5, 0.4]], 4)


def test_hit_similarities_read_a_passage_by_its_anchor_and_a_gone_chunk_by_the_hit_before(three: Engine) -> None:
    from dataclasses import replace

    import numpy as np

    from waypost.route.search import hit_similarities
    from waypost.types import PassageRef

    topics = {
        "garden": "Tomatoes in the garden want sun, compost and water every morning. ",
        "volcano": "The volcano erupted and rivers of molten lava ran down its slopes. ",
        "trains": "The night train leaves the station at ten and crosses the mountains. ",
    }
    text = "\n\n".join(sentence * 40 for sentence in topics.values())
    long = three.collection("long", create=True)
    long.add([Document("essay", text)])
    query = "molten lava from an erupting volcano"
    vector = np.asarray(long.embedder.embed_query(query), dtype=np.float32).reshape(-1)
    chunks = long.retrieve(query, "hybrid", 50).hits
    by_index = dict(zip((h.chunk.index for h in chunks), hit_similarities(long, vector, chunks), strict=True))
    first, volcano = min(by_index), max(by_index, key=lambda i: by_index[i])
    assert by_index[volcano] > by_index[first] + 0.2  # the garden's first chunk, the volcano's best
    # a passage from the garden's first chunk to the volcano's best, grown from the latter
    start = next(h for h in chunks if h.chunk.index == first)
    ids = tuple(f"essay#{i}" for i in range(first, volcano + 1))
    passage = replace(start, passage=PassageRef("grow", ids, f"essay#{volcano}", 1.0, 1.0))
    assert hit_similarities(long, vector, [passage]) == [by_index[volcano]]
    assert hit_similarities(long, vector, [start]) == [by_index[first]]
    # anchored on a trains chunk, the passage reads by it, not by the volcano's better chunk it also spans
    last = max(by_index)
    assert by_index[last] < by_index[volcano] - 0.2
    ids = tuple(f"essay#{i}" for i in range(volcano, last + 1))
    at_last = next(h for h in chunks if h.chunk.index == last)
    trains = replace(at_last, passage=PassageRef("grow", ids, f"essay#{last}", 1.0, 1.0))
    assert hit_similarities(long, vector, [trains]) == [by_index[last]]

    sky = three.collection("sky")
    hits = sky.retrieve("which planet has a great red storm", "hybrid", 3).hits
    vector = np.asarray(sky.embedder.embed_query("which planet has a great red storm"), dtype=np.float32).reshape(-1)
    alone = dict(zip((h.chunk.document_id for h in hits), hit_similarities(sky, vector, hits), strict=True))
    sky.delete(["mars"])
    order = [next(h for h in hits if h.chunk.document_id == d) for d in ("jupiter", "mars", "nebula")]
    assert hit_similarities(sky, vector, order) == [alone["jupiter"], alone["jupiter"], alone["nebula"]]


class RenamedEmbedder:
    """The same model under another id: collections built with it do not share its cosines' scale, as far as
    waypost can know."""

    def __init__(self, inner: Embedder, model_id: str) -> None:
        self.inner, self.model_id, self.dimension = inner, model_id, inner.dimension

    def embed_documents(self, texts: Sequence[str]) -> object:
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> object:
        return self.inner.embed_query(text)


def test_collections_of_different_models_fuse_by_rank_and_say_why(tmp_path: Path, minilm: Embedder) -> None:
    copy = RenamedEmbedder(minilm, "minilm-copy")
    for model, name, docs in ((None, "recipes", RECIPES), ("minilm-copy", "sky", SKY)):
        built = Engine(tmp_path / "store", EngineConfig(chunk_tokens=64, embed_model=model))
        built.register_embedder(minilm)
        built.register_embedder(copy)  # type: ignore[arg-type]
        built.collection(name, create=True).add(docs)
        built.close()
    engine = Engine(tmp_path / "store", EngineConfig(chunk_tokens=64))
    try:
        engine.register_embedder(minilm)
        engine.register_embedder(copy)  # type: ignore[arg-type]
        engine.use_collection_selector(Torn("sky", "recipes"))
        result = engine.search("which planet has two small moons named Phobos and Deimos", k=4, strategy="hybrid")
        assert any("by reciprocal rank" in note for note in result.explanation.notes)
        assert any(n.startswith("ranks, not cosines: their embedding models differ") for n in result.explanation.notes)
        assert "merge" in result.explanation.timings_ms and result.hits[0].chunk.document_id == "mars"
    finally:
        engine.close()
