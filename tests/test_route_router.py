"""strategy="auto" on a real store with the real model: the route in the explanation, runnable pipelines
only, replay of the chosen pipeline, the embedding selector, and the hooks (cache, telemetry, corrective)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.route_corpus import QUERIES, Always, make_engine
from waypost.base import Embedder
from waypost.engine import Engine, EngineConfig
from waypost.errors import InvalidInputError
from waypost.filters.model import Filter
from waypost.route.base import Attempt, Choice, Pipeline, QueryPlan, RouteRecord
from waypost.route.candidates import default_pool, runnable_pipelines
from waypost.route.config import RouterConfig
from waypost.route.execute import run_pipeline
from waypost.route.router import Execute, Router
from waypost.route.selectors.common import needs_graph, needs_tree
from waypost.route.selectors.embedding import EmbeddingSelector
from waypost.types import RetrievalResult


@pytest.fixture
def engine(tmp_path: Path, minilm: Embedder) -> Iterator[Engine]:
    config = EngineConfig(chunk_tokens=40, background_index_work=False, router=RouterConfig(selector="heuristic"))
    engine = make_engine(tmp_path / "store", minilm, config)
    yield engine
    engine.close()


def ids(result: RetrievalResult) -> list[tuple[str, int, int]]:
    return [(h.chunk.document_id, h.chunk.start, h.chunk.end) for h in result.hits]


def test_auto_returns_the_route_in_the_explanation(engine: Engine) -> None:
    result = engine.collection("c").retrieve("Where was Odile Brask born?", "auto", 3)
    route = result.explanation.route
    assert route is not None and result.hits
    assert route["collection"] == "c" and route["selector"] == "heuristic"
    assert Pipeline.from_json(route["pipeline_json"]).label == route["label"]
    assert 0 <= route["confidence"] <= 1 and route["reasoning"]
    assert set(route["timings_ms"]) >= {"features", "select", "retrieve"} and route["retries"] == 0
    assert result.explanation.to_dict()["route"] == route
    assert result.hits[0].document_id == "brask"


def test_the_shipped_profile_leaves_a_collection_unlike_its_training_ones_to_the_heuristic(engine: Engine) -> None:
    """The default (learned) selector with the shipped profile: this small collection is unlike the six the
    profile was trained on, so the heuristic rules choose and the route says why."""
    engine.config.router = RouterConfig()  # the default selector: learned, with the shipped profile
    engine.use_router(Router.from_engine(engine))
    route = engine.collection("c").retrieve("Where was Odile Brask born?", "auto", 3).explanation.route
    assert route is not None and route["selector"] == "learned>heuristic"
    assert route["reasoning"].startswith("the collection is unlike the 6 this profile was trained on (nearest: ")


def test_replaying_the_chosen_pipeline_gives_the_same_hits(engine: Engine) -> None:
    coll = engine.collection("c")
    for query in QUERIES:
        routed = coll.retrieve(query, "auto", 5)
        assert routed.explanation.route is not None
        route = routed.explanation.route
        replay = run_pipeline(coll, Pipeline.from_json(route["pipeline_json"]), query, 5)
        if "sub_routes" in route:  # the planner split it or constrained it: each query of the plan routed
            plan = route["plan"]
            subs = plan.get("sub_queries", [])
            assert len(route["sub_routes"]) == len(dict.fromkeys([query, *subs])), query
            assert subs or plan.get("must_include") or plan.get("must_exclude"), query
        elif any(a["kept"] for a in route["attempts"]):  # the corrective loop kept a retry: the route says which
            assert any("corrective: kept" in note for note in routed.explanation.notes), query
        else:
            assert ids(replay) == ids(routed), query


def test_structure_pipelines_are_never_picked_while_missing(engine: Engine) -> None:
    coll = engine.collection("c")
    ctx = coll.context()
    runnable = runnable_pipelines(ctx, llm_configured=False)
    assert runnable and not any(needs_tree(p) or needs_graph(p) for p in runnable)
    assert len(runnable_pipelines(ctx, False, build_on_first_use=True)) == len(default_pool())
    engine.use_router(Router(config=RouterConfig(selector="round-robin")))
    labels = set()
    for _ in range(2 * len(runnable)):
        route = coll.retrieve("harbour budget", "auto", 3).explanation.route
        assert route is not None and route["selector"] == "round-robin"
        labels.add(route["label"])
    assert labels == {p.label for p in runnable}
    coll.tree().get()  # now built: tree pipelines join
    assert any(needs_tree(p) for p in runnable_pipelines(coll.context(), llm_configured=False))


def test_auto_is_accepted_where_a_strategy_is(engine: Engine) -> None:
    coll = engine.collection("c")
    answer = coll.answer("Where was Tomas Vell born?")  # auto is the default
    assert answer.text
    with pytest.raises(InvalidInputError, match="named strategy"):
        coll.retrieve("q", "auto", params={"budget": 100})
    from waypost.post.passages import PassageConfig

    routed = coll.retrieve("Where was Tomas Vell born?", "auto", 2, passages=PassageConfig(tokens=80))
    assert routed.explanation.route is not None and "+passages" in routed.explanation.route["label"]
    assert all(h.passage is not None for h in routed.hits)


def test_embedding_selector_routes_by_examples(engine: Engine, minilm: Embedder) -> None:
    exemplars = {
        Pipeline.of("bm25"): ["error code E1047", "part number XR-2209", "parse_config() raises ConfigError"],
        Pipeline.of("hybrid"): ["where was she born", "when did he start the company", "what is the town known for"],
    }
    selector = EmbeddingSelector(minilm, exemplars)
    pool = [Pipeline.of("hybrid"), Pipeline.of("bm25")]
    code = selector.select("what error does open_store() raise, code E2001", {}, pool)
    person = selector.select("where was the engineer born", {}, pool)
    assert code.pipeline == Pipeline.of("bm25") and person.pipeline == Pipeline.of("hybrid")
    assert 0.5 <= code.confidence <= 1 and "examples" in code.reasoning
    shipped = EmbeddingSelector(minilm).select("summarize the main points of the meeting", {}, default_pool())
    assert needs_tree(shipped.pipeline)


class Sink:
    def __init__(self) -> None:
        self.records: list[RouteRecord] = []

    def record(self, record: RouteRecord) -> None:
        self.records.append(record)


class DictCache:
    """Copies in and out, as the query cache does."""

    def __init__(self) -> None:
        self.entries: dict[Any, RetrievalResult] = {}

    def get(self, key: Any) -> RetrievalResult | None:
        found = self.entries.get(key)
        return copy.deepcopy(found) if found is not None else None

    def put(self, key: Any, result: RetrievalResult) -> None:
        self.entries[key] = copy.deepcopy(result)


class NextPipeline:
    """A corrective loop that always tries the choice's next pipeline and keeps it."""

    def correct(
        self,
        query: str,
        result: RetrievalResult,
        choice: Choice,
        execute: Execute,
        k: int,
        filters: Filter | None,
        *,
        extracted: Filter | None = None,
        ctx: Any = None,
    ) -> tuple[RetrievalResult, list[Attempt]]:
        nxt = choice.ranking[1][0]
        return execute(nxt, k, filters), [Attempt(f"next pipeline {nxt.label}", "test", 0.9, True)]


def test_hooks_cache_telemetry_and_correction(engine: Engine) -> None:
    coll = engine.collection("c")
    sink, cache = Sink(), DictCache()
    router = Router(
        Always(Pipeline.of("hybrid"), confidence=0.3),  # below correct_below: the corrective loop grades it
        corrector=NextPipeline(),
        cache=cache,
        cache_key=lambda c, q, p, k, f: (c.name, q, p, k, str(f)),
        telemetry=sink,
    )
    engine.use_router(router)
    first = coll.retrieve("barley soup", "auto", 3)
    second = coll.retrieve("barley soup", "auto", 3)
    assert first.explanation.route is not None and second.explanation.route is not None
    assert first.explanation.route["retries"] == 1 and first.explanation.route["attempts"][0]["kept"]
    assert not first.explanation.route["cache_hit"] and second.explanation.route["cache_hit"]
    assert [r.cache_hit for r in sink.records] == [False, True] and sink.records[0].retries == 1
    assert sink.records[0].pipeline == "hybrid" and "total" in sink.records[0].timings_ms
    engine.use_router(Router(Always(Pipeline.of("hybrid"), confidence=0.7), corrector=NextPipeline()))
    sure = coll.retrieve("barley soup", "auto", 3).explanation.route
    assert sure is not None and sure["retries"] == 0  # a confident choice is not second-guessed


def test_the_first_stage_is_reused_for_plain_hybrid(engine: Engine) -> None:
    coll = engine.collection("c")
    engine.use_router(Router(Always(Pipeline.of("hybrid"))))
    routed = coll.retrieve("Lunmark lighthouse", "auto", 4)
    assert routed.explanation.route is not None and routed.explanation.route["reused_first_stage"]
    assert ids(routed) == ids(coll.retrieve("Lunmark lighthouse", "hybrid", 4))
    engine.use_router(Router(Always(Pipeline.of("bm25"))))
    other = coll.retrieve("Lunmark lighthouse", "auto", 4)
    assert other.explanation.route is not None and not other.explanation.route["reused_first_stage"]
    assert other.explanation.strategy == "bm25"


def test_eval_accepts_auto(tmp_path: Path, minilm: Embedder) -> None:
    from tests.test_eval import make_dataset
    from waypost.evaluation.runner import run_eval

    data = make_dataset(tmp_path / "tiny")
    config = EngineConfig(router=RouterConfig(selector="heuristic"))
    report = run_eval(data, "auto", k=5, config=config, cache_dir=tmp_path / "cache")
    assert report.strategy == "auto" and report.metrics["queries"] == 3
    assert report.metrics["ndcg@10"] == 1.0  # the filter query goes to the pipeline that reads filters


class SplitOnAnd:
    """A planner that splits "A and B" questions into their parts."""

    name = "split"

    def plan(self, query: str) -> QueryPlan:
        parts = [p.strip() for p in query.split(" and ")] if " and " in query else []
        return QueryPlan(query, sub_queries=parts if len(parts) > 1 else [])


def test_a_plan_routes_each_sub_query_and_fuses(engine: Engine) -> None:
    coll = engine.collection("c")
    engine.use_router(Router(config=RouterConfig(selector="heuristic"), planner=SplitOnAnd()))
    result = coll.retrieve("Where was Odile Brask born and where was Tomas Vell born", "auto", 4)
    route = result.explanation.route
    assert route is not None
    assert route["plan"]["sub_queries"] == ["Where was Odile Brask born", "where was Tomas Vell born"]
    assert len(route["sub_routes"]) == 3 and result.explanation.strategy == "fuse"
    assert {"brask", "vell"} <= {h.document_id for h in result.hits}
    single = coll.retrieve("Where was Odile Brask born?", "auto", 4).explanation.route
    assert single is not None and "sub_routes" not in single and not single.get("plan", {}).get("sub_queries")


def test_a_new_selector_is_never_served_the_old_ones_cached_route(engine: Engine) -> None:
    coll = engine.collection("c")
    router = Router.from_engine(engine)
    router.use_selector(Always(Pipeline.of("hybrid")))
    engine.use_router(router)
    first = coll.retrieve("Lunmark lighthouse", "auto", 4)
    again = coll.retrieve("Lunmark lighthouse", "auto", 4)
    assert again.explanation.route is not None and again.explanation.route["cache_hit"]
    router.use_selector(Always(Pipeline.of("bm25")))
    other = coll.retrieve("Lunmark lighthouse", "auto", 4)
    assert other.explanation.route is not None and not other.explanation.route["cache_hit"]
    assert other.explanation.route["label"] == "bm25" and first.explanation.route is not None
    assert first.explanation.route["label"] == "hybrid"


def test_bad_passage_values_and_pool_names_are_clear_errors() -> None:
    from waypost.route.execute import passage_config
    from waypost.route.train import parse_pool

    for bad in ({"tokens": "abc"}, {"tokens": True}, {"keep": "x"}, {"tokens": 1.5}):
        with pytest.raises(InvalidInputError, match="passages"):
            passage_config(bad)
    assert passage_config({"tokens": 300, "keep": 1}).tokens == 300
    with pytest.raises(InvalidInputError, match="unknown strategy 'auto'"):
        parse_pool(["auto"])


def test_weighted_fusion_lets_the_likelier_source_lead() -> None:
    from waypost.route.execute import fuse_results
    from waypost.types import Chunk, Explanation, Hit, Provenance

    def result(ids: list[str]) -> RetrievalResult:
        hits = [Hit(Chunk(d, 0, d, 0, len(d), 1), 1.0, "hybrid", Provenance("c", d, "hybrid")) for d in ids]
        return RetrievalResult(hits, Explanation("hybrid", "q", "q", None, None, {}))

    likely, unlikely = result(["a1", "a2", "a3"]), result(["b1", "b2", "b3"])
    assert [h.document_id for h in fuse_results("q", [likely, unlikely], 4).hits] == ["a1", "b1", "a2", "b2"]
    weighted = fuse_results("q", [likely, unlikely], 4, [0.7, 0.3])
    assert [h.document_id for h in weighted.hits] == ["a1", "a2", "a3", "b1"]
    with pytest.raises(InvalidInputError):
        fuse_results("q", [likely, unlikely], 4, [1.0])


def test_document_types_the_query_names_filter_on_the_field_that_holds_them(tmp_path: Path, minilm: Embedder) -> None:
    from waypost.types import Document

    config = EngineConfig(background_index_work=False, router=RouterConfig(selector="heuristic"))
    with Engine(tmp_path / "typed", config) as engine:
        engine.register_embedder(minilm)
        reports = engine.collection("reports", create=True)
        reports.add(
            [
                Document(f"r{i}", f"Quarterly budget report {i}: spending on ferries rose.", metadata={"kind": kind})
                for i, kind in enumerate(["PDF", "md", "html", "PDF", "md", "html"])
            ]
        )
        result = reports.retrieve("budget figures for ferries in the PDFs", "auto", 6)
        assert {h.document_id for h in result.hits} == {"r0", "r3"}
        route = result.explanation.route
        assert route is not None and route["plan"]["document_types_applied"] == (
            "document types pdf: filtered on kind = 'pdf'"
        )
        assert len(reports.retrieve("budget figures for ferries", "auto", 6).hits) == 6
        plain = engine.collection("plain", create=True)
        plain.add([Document("p1", "Ferry budget notes."), Document("p2", "Ferry timetable.")])
        kept = plain.retrieve("budget figures for ferries in the PDFs", "auto", 6)
        assert len(kept.hits) == 2 and "document types pdf: not applied (no field holds them)" in kept.explanation.notes
        both = engine.collection("both", create=True)
        both.add(
            [Document("b1", "Ferry budget.", metadata={"kind": "pdf", "attachment": "PDF"}), Document("b2", "Ferry.")]
        )
        notes = both.retrieve("ferry budget in the PDFs", "auto", 6).explanation.notes
        assert "document types pdf: not applied (2 fields hold them)" in notes
