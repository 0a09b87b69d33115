"""The feature reranker, supersedes edges, learned profiles and feedback, on a real store with the real model."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli_runner import Cli
from waypost.base import Embedder
from waypost.engine import Engine, EngineConfig
from waypost.errors import WaypostError
from waypost.evaluation.rerank_training import collect_groups
from waypost.post.evidence import Succession
from waypost.post.rerank.features import FEATURES, below_successors, boundary_confidence
from waypost.post.rerank.profile import RerankProfile, load_profile, save_profile
from waypost.post.rerank.train import TrainingGroup, feedback_queries, fit_profile
from waypost.types import Chunk, Document, Hit, Provenance

ROOT = Path(__file__).resolve().parents[1]

# Product sheets whose first section (an overview) is what readers use; details and history follow.
PRODUCTS = {
    "kettle": ("an electric kettle", "boils water", "a steel body and a limescale filter"),
    "toaster": ("a two slot toaster", "browns bread", "a crumb tray and six browning levels"),
    "blender": ("a countertop blender", "purees fruit and ice", "a glass jug and a pulse button"),
    "grinder": ("a burr coffee grinder", "grinds coffee beans", "forty grind settings and a timer"),
    "mixer": ("a stand mixer", "kneads dough and whips cream", "a tilting head and a steel bowl"),
    "fryer": ("a hot air fryer", "crisps food with hot air", "a basket and a digital display"),
    "steamer": ("a vegetable steamer", "steams vegetables and rice", "three stacked baskets"),
    "juicer": ("a slow juicer", "presses juice from fruit", "an auger and a pulp outlet"),
}


def product_sheet(name: str) -> str:
    what, does, parts = PRODUCTS[name]
    return (
        f"# Overview\nThe {name} is {what}. The {name} {does} quickly and quietly at home.\n"
        f"# Details\nThe {name} has {parts}. Clean the {name} after use and keep the {name} dry.\n"
        f"# History\nThe first {name} model appeared years ago. Later {name} models changed the {name} design.\n"
    )


@pytest.fixture
def shop(tmp_path: Path, minilm: Embedder) -> Iterator[Engine]:
    engine = Engine(tmp_path / "store", EngineConfig(chunk_tokens=24, background_index_work=False))
    engine.register_embedder(minilm)
    engine.collection("c", create=True).add(
        [Document(name, product_sheet(name), f"{name.title()} sheet") for name in PRODUCTS]
    )
    yield engine
    engine.close()


def test_every_reranked_hit_logs_its_features_and_explains_the_profile(shop: Engine) -> None:
    result = shop.collection("c").retrieve("how do I clean the kettle", k=5, rerank="default")
    assert len(result.hits) == 5
    for hit in result.hits:
        assert hit.features is not None and set(hit.features) == set(FEATURES)
        assert "retrieved" in hit.provenance.stage_scores
        assert 0.0 <= hit.features["document"] <= 1.0 and hit.features["is_latest"] == 1.0
    assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)
    assert any(n.startswith("rerank: features:balanced (hand-set)") for n in result.explanation.notes)
    assert "rerank" in result.explanation.timings_ms
    kettle = [h for h in result.hits if h.document_id == "kettle"]
    assert kettle and kettle[0].features is not None and kettle[0].features["heading"] > 0  # "kettle" in its title
    assert result.hits[0].document_id == "kettle"


def test_rerank_keeps_the_hits_it_does_not_reorder(shop: Engine) -> None:
    plain = shop.collection("c").retrieve("kitchen appliance", k=20)
    reranker = shop.collection("c").reranker("default", depth=4)
    reranked = reranker.rerank("kitchen appliance", plain)
    assert {h.chunk.id for h in reranked.hits[:4]} == {h.chunk.id for h in plain.hits[:4]}
    assert [h.chunk.id for h in reranked.hits[4:]] == [h.chunk.id for h in plain.hits[4:]]


def test_boundary_confidence() -> None:
    assert boundary_confidence("The pump starts. It runs.") == 1.0
    assert boundary_confidence("the pump starts and") == 0.0
    assert boundary_confidence("- a list item ends here.") == 1.0


def _versions(engine: Engine, newer_metadata: dict[str, object], older_metadata: dict[str, object]) -> None:
    old = "Refunds are paid within 30 days of a return. Refunds go back to the original card."
    new = "Refunds are paid within 14 days of a return; refunds go to the card."
    engine.collection("c").add(
        [
            Document("refunds-2023", old, "Refund policy", older_metadata),
            Document("refunds-2024", new, "Refund policy", newer_metadata),
        ]
    )


@pytest.mark.parametrize(
    ("newer", "older", "why"),
    [
        ({"supersedes": "refunds-2023"}, {}, "refunds-2024 declares supersedes=refunds-2023"),
        ({"version": "2.1"}, {"version": "2.0"}, "refunds-2024 has the same title and a later version"),
        ({"updated": "March 4, 2024"}, {"updated": "2023-11-30"}, "refunds-2024 has the same title and a later date"),
    ],
)
def test_a_superseded_document_ranks_below_its_successor_and_explain_says_why(
    shop: Engine, newer: dict[str, object], older: dict[str, object], why: str
) -> None:
    _versions(shop, newer, older)
    query = "how many days until refunds are paid back to the original card"
    coll = shop.collection("c")
    plain = coll.retrieve(query, k=4)
    assert plain.hits[0].document_id == "refunds-2023"  # the old text matches the query better
    reranked = coll.retrieve(query, k=4, rerank="default")
    order = [h.document_id for h in reranked.hits]
    assert order.index("refunds-2024") < order.index("refunds-2023")
    old = next(h for h in reranked.hits if h.document_id == "refunds-2023")
    assert old.features is not None and old.features["is_latest"] == 0.0
    assert f"rerank: superseded: {why}" in reranked.explanation.notes
    if "updated" in newer:  # dated documents: the newest has recency 1, the oldest 0
        new = next(h for h in reranked.hits if h.document_id == "refunds-2024")
        assert new.features is not None and (new.features["recency"], old.features["recency"]) == (1.0, 0.0)
    coll.delete(["refunds-2024"])  # the successor gone, the old version is the latest again
    again = coll.retrieve(query, k=4, rerank="default")
    assert "refunds-2024" not in {h.document_id for h in again.hits}
    assert not any("refunds-2024" in note for note in again.explanation.notes)
    assert again.hits[0].document_id == "refunds-2023"
    assert again.hits[0].features is not None and again.hits[0].features["is_latest"] == 1.0


def test_a_candidate_named_by_another_is_linked(shop: Engine) -> None:
    shop.collection("c").add([Document("guide", "Descale the Kettle sheet monthly with citric acid.", "Care guide")])
    result = shop.collection("c").retrieve("descale with citric acid", k=30, rerank="default")
    features = {h.document_id: h.features for h in result.hits if h.features is not None}
    assert features["guide"] is not None and features["guide"]["linked"] == 0.0
    assert all(f["linked"] == (1.0 if doc == "kettle" else 0.0) for doc, f in features.items())


def test_profiles_round_trip_and_bad_names_are_refused(tmp_path: Path) -> None:
    profile = RerankProfile("mine", {"dense": 1.5, "position": -0.5}, {"dense": 0.4}, {"dense": 0.2}, "test")
    path = save_profile(profile, tmp_path)
    assert load_profile("mine", [tmp_path]) == profile == load_profile(str(path), [])
    assert load_profile("default", []).name == "balanced"
    for bad in ("", "../up", "a b", "default", "recall"):
        with pytest.raises(WaypostError):
            save_profile(RerankProfile(bad, {}), tmp_path)
    with pytest.raises(WaypostError, match="no rerank profile 'absent'"):
        load_profile("absent", [tmp_path])
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(WaypostError, match="cannot be read"):
        load_profile("broken", [tmp_path])


def test_training_needs_better_and_worse_candidates() -> None:
    import numpy as np

    flat = TrainingGroup("q", np.ones((3, len(FEATURES))), np.array([1.0, 0.0, 0.0]))
    with pytest.raises(WaypostError):
        fit_profile([], "x", "nothing")
    with pytest.raises(WaypostError, match="not enough labelled pairs"):
        fit_profile([flat], "x", "identical candidates")


def _first_chunk_rank(engine: Engine, query: str, rerank: str | None) -> float:
    """Mean rank (1-based, within the top 6) of overview chunks, the first of each sheet; 7 when absent."""
    hits = engine.collection("c").retrieve(query, k=6, rerank=rerank).hits
    ranks = [i for i, h in enumerate(hits, start=1) if h.chunk.index == 0]
    return sum(ranks) / len(ranks) if ranks else 7.0


def test_feedback_that_favours_overviews_trains_a_profile_that_ranks_them_higher(shop: Engine, tmp_path: Path) -> None:
    coll = shop.collection("c")
    training = [n for n in PRODUCTS if n not in ("juicer", "steamer")]
    for name in training:
        for query in (f"tell me about the {name}", f"{name} cleaning and design"):
            hits = coll.retrieve(query, k=6).hits
            for hit in hits:  # the reader used the overview and passed over the rest
                coll.feedback(query, hit, "used" if hit.chunk.index == 0 else "rejected")
    entries = shop.store.feedback("c")
    assert len(entries) == 2 * 6 * len(training) and {e.kind for e in entries} == {"used", "rejected"}
    groups = collect_groups(coll, feedback_queries(entries))
    profile = fit_profile(groups, "overviews", "feedback")
    assert profile.weights["position"] > 0
    save_profile(profile, tmp_path / "store" / "rerankers")
    for held_out in ("tell me about the juicer", "steamer baskets and rice"):
        assert _first_chunk_rank(shop, held_out, "overviews") < _first_chunk_rank(shop, held_out, "default")


def test_feedback_refuses_bad_input(shop: Engine) -> None:
    coll = shop.collection("c")
    with pytest.raises(WaypostError, match="DOCUMENT#INDEX"):
        coll.feedback("q", "no-index")
    with pytest.raises(WaypostError, match="no chunk"):
        coll.feedback("q", "kettle#99")
    with pytest.raises(WaypostError, match="rating"):
        coll.feedback("q", "kettle#0", "rating", 9)
    with pytest.raises(WaypostError, match="kind"):
        coll.feedback("q", "kettle#0", "liked")
    entry = coll.feedback("q", "kettle#1", "rating", 4)
    assert entry.label == pytest.approx(0.8) and entry.document_id == "kettle" and entry.end > entry.start


def test_passage_strategies_are_registered_and_compose_a_base(shop: Engine) -> None:
    coll = shop.collection("c")
    for name in ("auto-merge", "small-to-big"):
        result = coll.retrieve("clean the kettle and keep it dry", name, k=3, params={"base": "bm25"})
        assert result.explanation.strategy == name and result.hits
        assert all(h.passage is not None and h.passage.policy == name for h in result.hits)
        assert "base strategy bm25" in result.explanation.notes[0]
    with pytest.raises(WaypostError, match="base"):
        coll.retrieve("kettle", "auto-merge", params={"base": "auto-merge"})


def test_cli_rerank_feedback_and_training(tmp_path: Path, cli: Cli) -> None:
    store = tmp_path / "s"
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in PRODUCTS:
        (docs / f"{name}.md").write_text(product_sheet(name))
    assert cli("add", str(docs), "--store", str(store)).exit_code == 0
    shown = cli("query", "clean the kettle", "--store", str(store), "--rerank", "default", "--explain")
    assert shown.exit_code == 0, shown.stderr
    assert "features: retriever=" in shown.stdout and "rerank: features:balanced" in shown.stdout
    hits = json.loads(cli("query", "tell me about the kettle", "--store", str(store), "--json", "-k", "6").stdout)
    for hit in hits["hits"]:
        flag = [] if hit["chunk_id"].endswith("#0") else ["--rejected"]
        done = cli("feedback", "tell me about the kettle", hit["chunk_id"], "--store", str(store), *flag)
        assert done.exit_code == 0, done.stderr
    trained = cli("rerank", "train", "--feedback", "--name", "mine", "--store", str(store), "--json")
    assert trained.exit_code == 0, trained.stderr
    saved = json.loads(trained.stdout.strip().splitlines()[-1])
    assert Path(saved["path"]) == store / "rerankers" / "mine.json" and saved["trained"]["queries"] == 1
    used = cli("query", "kettle", "--store", str(store), "--rerank", "mine", "--json")
    assert used.exit_code == 0 and json.loads(used.stdout)["hits"][0]["features"] is not None
    missing = cli("query", "kettle", "--store", str(store), "--rerank", "nope")
    assert missing.exit_code != 0 and "no rerank profile 'nope'" in missing.stderr
    nothing = cli("rerank", "train", "--name", "x", "--store", str(store))
    assert nothing.exit_code != 0 and "DATASET, --feedback, or both" in nothing.stderr


def _hit(document_id: str, index: int) -> Hit:
    return Hit(Chunk(document_id, index, "x", 0, 1, 1), 1.0, "hybrid", Provenance("c", document_id, "test"))


def test_no_old_version_stays_above_a_successor_however_many_versions_and_chunks() -> None:
    """Three versions of three chunks each, the oldest ranked first, and every older/newer pair an edge
    (as the evidence graph gives them), among unrelated hits."""
    hits = [_hit(v, i) for v in ("v1", "v2", "v3") for i in range(3)] + [_hit("other", 0), _hit("more", 0)]
    edges = [Succession(new, old, "same title, later date") for old, new in (("v1", "v2"), ("v1", "v3"), ("v2", "v3"))]
    order = below_successors(list(range(len(hits))), hits, edges)
    assert sorted(order) == list(range(len(hits)))
    first = {doc: min(n for n, i in enumerate(order) if hits[i].document_id == doc) for doc in ("v1", "v2", "v3")}
    for s in edges:
        last_old = max(n for n, i in enumerate(order) if hits[i].document_id == s.older)
        assert first[s.newer] < min(n for n, i in enumerate(order) if hits[i].document_id == s.older) <= last_old
    ranked = list(dict.fromkeys(hits[i].document_id for i in order))  # documents by their best hit
    assert ranked.index("v3") < ranked.index("v2") < ranked.index("v1")
    assert [hits[i].document_id for i in order if hits[i].document_id in ("other", "more")] == ["other", "more"]
    # a cycle of edges cannot hang or drop a hit
    loop = [Succession("v1", "v2", "declared"), Succession("v2", "v1", "declared")]
    assert sorted(below_successors(list(range(6)), hits[:6], loop)) == list(range(6))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[]", "no JSON object"),
        ('{"format": 1, "kind": "linear", "name": "x", "weights": [1, 2]}', "must map feature names"),
        ('{"format": 1, "kind": "linear", "name": "x", "weights": {"dense": NaN}}', "not finite"),
        ('{"format": 1, "kind": "linear", "name": "x", "weights": {"sparkle": 1.0}}', "unknown features"),
        ('{"format": 1, "kind": "linear", "name": "x", "weights": {"dense": "high"}}', "must map feature names"),
    ],
)
def test_a_malformed_profile_is_refused_with_its_path(tmp_path: Path, content: str, message: str) -> None:
    from waypost.post.rerank.profile import PROFILE_FORMAT

    path = tmp_path / "broken.json"
    path.write_text(content.replace('"format": 1', f'"format": {json.dumps(PROFILE_FORMAT)}'))
    with pytest.raises(WaypostError, match=f"broken.json cannot be read: .*{message}"):
        load_profile(str(path), [])


def test_rerank_train_refuses_a_bad_name_before_training(tmp_path: Path, cli: Cli) -> None:
    train = ["rerank", "train", str(tmp_path / "no-such-dataset")]
    for name, message in (("default", "hand-set profile"), ("a/b", "letters, digits"), ("x.json", "without .json")):
        done = cli(*train, "--name", name)
        assert done.exit_code == 2 and message in done.stderr, done.stderr
