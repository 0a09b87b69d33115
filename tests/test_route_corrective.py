"""The corrective loop: the quality evaluator on a real small collection, the retry policy, the JSON
profile, and fitting on rows."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.route_corpus import Always
from waypost.base import Embedder
from waypost.engine import Collection, Engine, EngineConfig
from waypost.errors import WaypostError
from waypost.filters.model import And, Condition, Filter, Op
from waypost.route.base import Choice, Pipeline
from waypost.route.corrective import SIGNALS, CorrectiveLoop, QualityEvaluator, QualityModel, drop_strictest
from waypost.route.execute import run_pipeline
from waypost.route.quality_fit import Episode, choose_policy, fit_quality, replay
from waypost.route.router import Router
from waypost.types import Document, Explanation, RetrievalResult

DOCS = [
    Document(
        "bread",
        "Sourdough bread rises slowly because wild yeast ferments the dough overnight.",
        "Sourdough",
        metadata={"kind": "recipe", "year": 2019},
    ),
    Document(
        "pasta",
        "Fresh pasta needs flour, eggs and a long rest before it is rolled thin.",
        "Pasta",
        metadata={"kind": "recipe", "year": 2021},
    ),
    Document(
        "tides",
        "Ocean tides follow the gravitational pull of the moon and the sun.",
        "Tides",
        metadata={"kind": "science", "year": 2019},
    ),
    Document(
        "volcano",
        "Volcanic eruptions release ash, lava and sulfur dioxide into the air.",
        "Volcanoes",
        metadata={"kind": "science", "year": 2020},
    ),
    Document(
        "chess",
        "The Sicilian Defence is a sharp chess opening for black.",
        "Chess",
        metadata={"kind": "games", "year": 2018},
    ),
    Document(
        "orbit",
        "A satellite stays in orbit when its speed balances the pull of gravity.",
        "Orbits",
        metadata={"kind": "science", "year": 2022},
    ),
]


@pytest.fixture
def collection(tmp_path: Path, minilm: Embedder) -> Iterator[Collection]:
    with Engine(tmp_path / "store", EngineConfig(chunk_tokens=64)) as engine:
        engine.register_embedder(minilm)
        coll = engine.collection("kitchen", create=True)
        coll.add(DOCS)
        yield coll


def test_shipped_profile_loads_and_names_every_signal() -> None:
    model = QualityModel.load()
    assert set(model.names) <= set(SIGNALS)
    assert 0.0 <= model.lower <= model.upper <= 1.0
    assert QualityModel.from_json(model.to_json()) == model


def test_a_broken_profile_is_an_error_that_says_so(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"names": ["gap"], "mean": [0.0], "scale": [0.0], "coef": [1.0], "intercept": 0.0}))
    with pytest.raises(WaypostError, match="scales must be positive"):
        QualityModel.load(path)


def test_evaluator_ranks_a_good_result_above_a_bad_one(collection: Collection) -> None:
    """Good: hybrid finds the document. Bad: the same query under a filter that shuts the document out
    (what an over-strict extracted filter does), so only unrelated hits remain."""
    evaluator = QualityEvaluator()
    query = "why does sourdough bread rise slowly"
    wrong = Condition("kind", Op.EQ, "science")
    good = collection.retrieve(query, "hybrid", k=3)
    bad = collection.retrieve(query, "hybrid", k=3, filters=wrong)
    assert good.hits[0].chunk.document_id == "bread" and "bread" not in bad.document_ids()
    good_q = evaluator.grade(query, good, collection.context())
    bad_q = evaluator.grade(query, bad, collection.context(), filters=wrong)
    assert good_q.score > bad_q.score, (good_q, bad_q)
    assert good_q.signals["dense_top"] > bad_q.signals["dense_top"]
    empty = evaluator.grade(query, RetrievalResult([], good.explanation), collection.context())
    assert empty.score == 0.0 and empty.verdict == "incorrect"
    # the evaluator is cheap once the query's collection-level signals are known
    ctx = collection.context()
    evaluator.grade(query, good, ctx)
    t0 = time.perf_counter()
    for _ in range(50):
        evaluator.grade(query, good, ctx)
    assert (time.perf_counter() - t0) / 50 < 0.005


def _model(lower: float, upper: float) -> QualityModel:
    """A fixed policy over query-term coverage alone, so the loop's mechanics are tested apart from any fit."""
    return QualityModel(["coverage_any"], [0.5], [0.25], [3.0], 0.0, upper=upper, lower=lower)


class Runs:
    """``execute`` for the loop, on the real collection, recording every call."""

    def __init__(self, collection: Collection, query: str) -> None:
        self.collection = collection
        self.query = query
        self.calls: list[tuple[str, int, str | None]] = []

    def __call__(self, pipeline: Pipeline, k: int, filters: Filter | None) -> RetrievalResult:
        self.calls.append((pipeline.label, k, str(filters) if filters else None))
        return run_pipeline(self.collection, pipeline, self.query, k, filters)


def test_loop_retries_a_poor_result_and_keeps_the_better_one(collection: Collection) -> None:
    query = "volcanic ash and lava eruptions"
    poor = collection.retrieve("chess opening", "bm25", k=3)  # what a wrong pipeline might have found
    choice = Choice(
        Pipeline.of("bm25"),
        0.4,
        "test",
        "fixed",
        [(Pipeline.of("bm25"), 0.4), (Pipeline.of("hybrid"), 0.3), (Pipeline.of("dense"), 0.2)],
    )
    runs = Runs(collection, query)
    loop = CorrectiveLoop(QualityEvaluator(_model(lower=0.5, upper=0.8)), max_retries=2)
    result, attempts = loop.correct(query, poor, choice, runs, 3, None, ctx=collection.context())
    assert runs.calls[0] == ("hybrid", 3, None)  # the router's next pipeline first
    assert attempts and attempts[0].action == "next pipeline hybrid" and attempts[0].kept
    assert result.hits[0].chunk.document_id == "volcano"
    assert len(attempts) == len(runs.calls) <= 2
    assert any(n.startswith("corrective: kept 'next pipeline hybrid'") for n in result.explanation.notes)
    assert "graded" in attempts[0].reason


def test_loop_never_retries_a_good_result(collection: Collection) -> None:
    query = "volcanic ash and lava eruptions"
    good = collection.retrieve(query, "hybrid", k=3)
    choice = Choice(
        Pipeline.of("hybrid"), 0.9, "test", "fixed", [(Pipeline.of("hybrid"), 0.9), (Pipeline.of("bm25"), 0.1)]
    )
    runs = Runs(collection, query)
    loop = CorrectiveLoop(QualityEvaluator(_model(lower=0.3, upper=0.6)))
    result, attempts = loop.correct(query, good, choice, runs, 3, None, ctx=collection.context())
    assert result is good and attempts == [] and runs.calls == []


def test_loop_keeps_the_first_when_no_retry_is_better(collection: Collection) -> None:
    query = "volcanic ash and lava eruptions"
    first = collection.retrieve(query, "hybrid", k=3)
    choice = Choice(
        Pipeline.of("hybrid"), 0.9, "test", "fixed", [(Pipeline.of("hybrid"), 0.9), (Pipeline.of("dense"), 0.1)]
    )
    runs = Runs(collection, query)
    loop = CorrectiveLoop(QualityEvaluator(_model(lower=1.0, upper=1.0)), max_retries=2)  # always retries
    result, attempts = loop.correct(query, first, choice, runs, 3, None)
    assert result is first
    assert [a.action for a in attempts] == ["next pipeline dense", "more candidates (9)"]
    assert not any(a.kept for a in attempts)
    assert runs.calls[1] == ("hybrid", 9, None)


def test_only_an_extracted_filter_is_dropped(collection: Collection) -> None:
    user = Condition("kind", Op.EQ, "science")
    extracted = Condition("year", Op.EQ, 2018)  # no science document is from 2018: the result is empty
    both = And((user, extracted))
    query = "gravity and orbits"
    empty = run_pipeline(collection, Pipeline.of("hybrid"), query, 3, both)
    assert empty.hits == []
    choice = Choice(Pipeline.of("hybrid"), 0.9, "test", "fixed", [(Pipeline.of("hybrid"), 0.9)])
    runs = Runs(collection, query)
    loop = CorrectiveLoop(QualityEvaluator(_model(lower=0.5, upper=0.8)), max_retries=1)
    result, attempts = loop.correct(query, empty, choice, runs, 3, both, extracted=extracted, ctx=collection.context())
    assert attempts[0].action == "dropped filter year = 2018" and attempts[0].kept
    assert runs.calls[0][2] == str(user)
    assert result.hits and all(h.metadata["kind"] == "science" for h in result.hits)
    # a user's filter alone is never loosened
    assert drop_strictest(user, Condition("year", Op.EQ, 2020), None) is None
    dropped = drop_strictest(
        And((user, extracted, Condition("year", Op.GTE, 2000))),
        And((extracted, Condition("year", Op.GTE, 2000))),
        collection.context(),
    )
    assert dropped is not None and dropped[0] == extracted  # the most selective one


def test_another_collection_is_tried_when_the_engine_offers_one(collection: Collection) -> None:
    query = "tides and the moon"
    poor = RetrievalResult([], Explanation("hybrid", query, query))
    other = collection.retrieve(query, "hybrid", k=3)
    offered: list[str] = []

    def alternatives(q: str, k: int, flt: Filter | None) -> tuple[str, RetrievalResult] | None:
        offered.append(q)
        return "elsewhere", other

    choice = Choice(Pipeline.of("hybrid"), 0.5, "test", "fixed", [(Pipeline.of("hybrid"), 0.5)])
    loop = CorrectiveLoop(QualityEvaluator(_model(lower=0.5, upper=0.8)), max_retries=1, alternatives=alternatives)
    result, attempts = loop.correct(query, poor, choice, Runs(collection, query), 3, None)
    assert offered == [query] and attempts[0].action == "another collection" and result is other
    assert "from collection elsewhere" in result.explanation.notes


def test_fit_learns_the_sign_of_a_signal_and_the_policy_never_loses() -> None:
    rows = [({"coverage": c / 20, "gap": 0.1}, min(1.0, c / 20 + 0.05 * (c % 3))) for c in range(21)]
    model = fit_quality(rows, names=("coverage", "gap"))
    assert model.coef[0] > 0
    assert model.score({"coverage": 0.9, "gap": 0.1}) > model.score({"coverage": 0.1, "gap": 0.1})
    # retries that are always worse: the chosen policy never retries
    worse = [Episode(({"coverage": c / 20}, c / 20), [({"coverage": 1.0}, 0.0)]) for c in range(21)]
    policy = choose_policy(model, worse)
    assert replay(policy, worse)["retry_rate"] == 0.0
    # retries that rescue poor first results: the policy retries those
    better = [Episode(({"coverage": c / 20}, c / 20), [({"coverage": 1.0}, 1.0)]) for c in range(21)]
    policy = choose_policy(model, better)
    outcome = replay(policy, better)
    assert outcome["gain"] > 0 and 0 < outcome["retry_rate"]


def test_an_empty_result_is_corrected_however_sure_the_choice(collection: Collection) -> None:
    # "science from 2018" extracts kind = science and year = 2018, which no document holds together
    sure = Router(Always(Pipeline.of("metadata"), 0.95), corrector=CorrectiveLoop(QualityEvaluator()))
    collection.engine.use_router(sure)
    result = collection.retrieve("science from 2018", "auto", 3)
    route = result.explanation.route
    assert route is not None and route["retries"] >= 1 and result.hits
    # the metadata pipeline found nothing with its own filter; the next pipeline's hits are kept and noted
    assert route["attempts"][0]["kept"] and route["attempts"][0]["action"].startswith("next pipeline")
    assert any(note.startswith("corrective: kept") for note in result.explanation.notes)
    found = collection.retrieve("science about gravity", "auto", 3).explanation.route
    assert found is not None and found["retries"] == 0  # a sure choice that found something stands
