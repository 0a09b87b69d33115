"""``waypost router train --feedback``: a router fitted on the queries users gave feedback on in their own
store, on a real store with the real model; the profile it writes routes that collection as a familiar one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_runner import Cli
from tests.route_corpus import make_engine
from waypost.base import Embedder
from waypost.engine import Engine, EngineConfig
from waypost.errors import InvalidInputError
from waypost.evaluation.feedback import MIN_QUERIES, feedback_workload
from waypost.evaluation.outcomes import OutcomeCache, run_outcomes, score
from waypost.route.base import Pipeline

# (query, the chunk that answered it) as a user of the route corpus would mark them
USED = [
    ("Where was Odile Brask born?", "brask#0"),
    ("Odile Brask birthplace", "brask#0"),
    ("which town did the marine engineer come from", "brask#0"),
    ("Where was Tomas Vell born?", "vell#0"),
    ("who ran the ferry company", "vell#0"),
    ("Tomas Vell ferry", "vell#0"),
    ("Is Lunmark on the coast?", "lunmark#0"),
    ("town with a lighthouse and salt works", "lunmark#0"),
    ("barley soup minutes", "recipe#0"),
    ("how long does the soup simmer", "recipe#0"),
    ('what does "parse_config()" raise', "code#0"),
    ("which file does the loader read", "code#0"),
]


@pytest.fixture
def store(tmp_path: Path, minilm: Embedder) -> Path:
    path = tmp_path / "store"
    engine = make_engine(path, minilm, EngineConfig(chunk_tokens=40))
    try:
        coll = engine.collection("c")
        for query, chunk in USED:
            coll.feedback(query, chunk, "used")
        coll.feedback("Where was Odile Brask born?", "vell#0", "rejected")  # says which chunk was wrong only
    finally:
        engine.close()
    return path


def test_the_router_learns_from_feedback_and_routes_the_collection_as_familiar(
    store: Path, tmp_path: Path, cli: Cli
) -> None:
    out = tmp_path / "router.json"
    run = cli("router", "train", "--feedback", "--store", store, "--out", out, "--json")
    assert run.exit_code == 0, run.stderr
    summary = json.loads(run.stdout)
    assert summary["trained_on"] == "feedback" and summary["sets_trained"] == ["c"]
    assert summary["stale_outcomes_pruned"] == 0  # a first training: every cached row is current
    assert "hybrid" in summary["pipelines"] and "raptor-collapsed" not in summary["pipelines"]  # no tree built
    profile = json.loads(out.read_text())
    assert list(profile["familiar"]) == ["c"]
    found = cli("query", "Where was Tomas Vell born?", "--store", store, "-c", "c", "--router-profile", out, "--json")
    assert found.exit_code == 0, found.stderr
    route = json.loads(found.stdout)["explain"]["route"]
    assert route["selector"] == "learned", route["reasoning"]  # not handed to the heuristic as unfamiliar
    shipped = cli("query", "Where was Tomas Vell born?", "--store", store, "-c", "c", "--json")
    assert json.loads(shipped.stdout)["explain"]["route"]["selector"] == "learned>heuristic"


def test_feedback_queries_keep_only_useful_hits_on_live_documents(store: Path, minilm: Embedder) -> None:
    with Engine(store) as engine:
        engine.register_embedder(minilm)
        queries = feedback_workload(engine).queries("train")
        gold = {q.text: q.gold for q in queries}
        assert len(queries) == len(USED) and gold["Where was Odile Brask born?"] == {"brask": 1}
        assert {q.metric for q in queries} == {"ndcg@10"} and feedback_workload(engine).queries("test") == []
        engine.collection("c").delete(["code"])
        left = feedback_workload(engine).queries("train")
        assert len(left) == len(USED) - 2 and "which file does the loader read" not in {q.text for q in left}
        engine.collection("c").delete(["recipe", "lunmark"])
        with pytest.raises(InvalidInputError, match=f"needs {MIN_QUERIES} at least"):
            feedback_workload(engine)


def test_feedback_training_refuses_what_it_cannot_do(store: Path, tmp_path: Path, cli: Cli) -> None:
    out = tmp_path / "r.json"
    for args, message in (
        (("--feedback", "--store", store), "needs --store (whose feedback to learn from) and --out"),
        (("--feedback", "--store", store, "--out", out, str(tmp_path)), "give no DATASET"),
        (("--feedback", "--store", tmp_path / "nowhere", "--out", out), "no waypost store at"),
        ((), "give one or more DATASET directories, or --feedback with --store"),
    ):
        run = cli("router", "train", *args)
        assert run.exit_code != 0 and message in run.stderr, run.stderr
        assert not out.exists()


def test_more_feedback_rescores_the_cached_outcomes(store: Path, minilm: Embedder) -> None:
    """Feedback adds relevant documents without a new generation: cached hits are scored against the gold
    as it is now, never with the score stored beside them."""
    ferry = "who ran the ferry company"
    bm25 = [Pipeline.of("bm25")]
    with Engine(store) as engine:
        engine.register_embedder(minilm)
        before = {o.query_id: o for o in run_outcomes(engine, feedback_workload(engine), bm25, "train")}
        engine.collection("c").feedback(ferry, "brask#0", "used")
        workload = feedback_workload(engine)
        query = next(q for q in workload.queries("train") if q.text == ferry)
        assert query.gold == {"vell": 1, "brask": 1}
        after = {o.query_id: o for o in run_outcomes(engine, workload, bm25, "train")}
    assert after[query.id].hits == before[query.id].hits  # from the cache, not retrieved again
    assert after[query.id].value == pytest.approx(score(query, after[query.id].hits))
    assert after[query.id].value != before[query.id].value
    # a write moves the generation: the rows of the old one are pruned from the file, the new ones stay
    with Engine(store) as engine:
        engine.register_embedder(minilm)
        engine.collection("c").delete(["recipe"])
        fresh = run_outcomes(engine, feedback_workload(engine), bm25, "train")
        generation = engine.store.generation("c")
    cache = OutcomeCache.under(store)
    assert len(cache.rows) == len(before) + len(fresh)
    assert cache.prune({"c": generation}) == len(before) and cache.prune({"c": generation}) == 0
    assert set(OutcomeCache.under(store).rows) == {o.key() for o in fresh}
