"""The learned gain model: fit on synthetic rows (it must learn a pattern), JSON round trip with identical
predictions, calibrated confidence, and ``router train`` end to end on two tiny invented sets."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.mixed_sets import write_sets
from waypost.base import Embedder
from waypost.embeddings.factory import share_embedder, unshare_embedder
from waypost.errors import WaypostError
from waypost.route.base import Pipeline
from waypost.route.features import COLLECTION_FEATURES
from waypost.route.fit import TrainingRows, fit_gain_model, shuffled
from waypost.route.model import DEFAULT_PROFILE, FAMILIAR_WITHIN, GainModel, default_model
from waypost.route.selectors.learned import LearnedSelector
from waypost.route.train import pipeline_cost, train_command

HYBRID, BM25, DENSE = Pipeline.of("hybrid"), Pipeline.of("bm25"), Pipeline.of("dense")
COSTS = {p.label: pipeline_cost(p) for p in (HYBRID, BM25, DENSE)}


def synthetic_rows(n: int = 240, seed: int = 3) -> TrainingRows:
    """Feature ``kind`` decides the winner: bm25 where it is 0, dense where 1, hybrid where 2."""
    rng = np.random.default_rng(seed)
    kind = rng.integers(0, 3, n)
    x = np.column_stack([kind, rng.normal(size=n), rng.normal(size=n)])
    base = rng.uniform(0.3, 0.6, n)
    values = np.column_stack(
        [base, base + np.where(kind == 0, 0.25, -0.15), base + np.where(kind == 1, 0.2, -0.2)]
    ) + rng.normal(0, 0.02, (n, 3))
    groups = [f"set{k}" for k in kind]
    ids = [str(i) for i in range(n)]
    return TrainingRows(["kind", "noise1", "noise2"], x, [HYBRID, BM25, DENSE], values, groups, ids)


def test_gain_model_learns_which_pipeline_wins_and_survives_json(tmp_path: Path) -> None:
    model = fit_gain_model(synthetic_rows(), HYBRID, COSTS)
    pool = [HYBRID, BM25, DENSE]
    picks = {k: model.choose({"kind": k, "noise1": 0.0, "noise2": 0.0}, pool).pipeline for k in (0, 1, 2)}
    assert picks == {0: BM25, 1: DENSE, 2: HYBRID}
    assert model.info["oof_accuracy"] > 0.8
    assert model.info["oof_score"] > model.info["oof_default_score"] + 0.05
    _, ys = model.calibration
    assert all(b >= a for a, b in itertools.pairwise(ys)) and 0.0 <= ys[0] <= ys[-1] <= 1.0
    assert model.low_confidence in ("default", "fuse")

    path = tmp_path / "profile.json"
    model.to_json(path)
    loaded = GainModel.load(path)
    assert loaded.to_dict() == json.loads(path.read_text())
    rng = np.random.default_rng(9)
    for row in rng.normal(size=(25, 3)):
        feats = dict(zip(model.feature_names, row.tolist(), strict=True))
        assert loaded.predict(feats) == model.predict(feats)
        assert loaded.confidence(loaded.predict(feats)) == model.confidence(model.predict(feats))
    t0 = time.perf_counter()
    for _ in range(200):
        loaded.predict({"kind": 1.0})
    assert (time.perf_counter() - t0) / 200 < 0.002  # well under a millisecond on an idle core


def test_shuffled_labels_lose_the_signal() -> None:
    rows = synthetic_rows()
    control, perm = shuffled(rows)
    assert sorted(perm) == list(range(len(rows.groups))) and perm != list(range(len(rows.groups)))
    model = fit_gain_model(control, HYBRID, COSTS)
    assert model.info["oof_accuracy"] < fit_gain_model(rows, HYBRID, COSTS).info["oof_accuracy"] - 0.3


def collection_rows(n: int = 480, seed: int = 5) -> TrainingRows:
    """Six collections, each with its own winner on average; per query the outcomes are mostly noise, and
    ten query features carry nothing. Only the collection feature ``size`` predicts the gain."""
    rng = np.random.default_rng(seed)
    coll = rng.integers(0, 6, n)
    noise = rng.normal(size=(n, 10))
    x = np.column_stack([coll.astype(float), noise])
    winner = np.asarray([0, 1, 2, 1, 0, 2])[coll]
    means = np.where(np.arange(3)[None, :] == winner[:, None], 0.6, 0.5)
    values = np.clip(means + rng.normal(0, 0.3, (n, 3)), 0.0, 1.0)
    names = ["size"] + [f"q{i}" for i in range(10)]
    return TrainingRows(names, x, [HYBRID, BM25, DENSE], values, [f"c{c}" for c in coll], [str(i) for i in range(n)])


def test_a_collection_prior_wins_when_query_features_are_noise(tmp_path: Path) -> None:
    rows = collection_rows()
    model = fit_gain_model(rows, HYBRID, COSTS, prior_features=("size",))
    scores = model.info["oof_variant_scores"]
    assert model.prior is not None and model.info["variant"] != "plain"
    assert max(v for k, v in scores.items() if k != "plain") > scores["plain"]
    pool = [HYBRID, BM25, DENSE]
    picks = [model.choose({"size": float(c), **{f"q{i}": 0.0 for i in range(10)}}, pool).pipeline for c in range(6)]
    assert picks == [HYBRID, BM25, DENSE, BM25, HYBRID, DENSE]
    feats = {"size": 2.0, **{f"q{i}": 0.5 for i in range(10)}}
    v = model.vector(feats)
    model.shrink = 0.5
    assert np.allclose(list(model.predict(feats).values())[1:], model.prior.predict(v) + 0.5 * model.forest.predict(v))
    path = tmp_path / "profile.json"
    model.to_json(path)
    loaded = GainModel.load(path)
    assert loaded.shrink == model.shrink and loaded.prior is not None
    for row in np.random.default_rng(2).normal(size=(20, 11)):
        feats = dict(zip(model.feature_names, row.tolist(), strict=True))
        assert loaded.predict(feats) == model.predict(feats)
    # without collection features among the rows, only the plain forest is fitted
    plain = fit_gain_model(rows, HYBRID, COSTS, prior_features=("absent",))
    assert plain.prior is None and list(plain.info["oof_variant_scores"]) == ["plain"]


def test_a_collection_unlike_the_training_ones_is_left_to_the_heuristic(tmp_path: Path) -> None:
    """Two training collections told apart by size: on either, the learned model chooses; on a collection
    far from both, it does not extrapolate and the heuristic rules answer, saying why."""
    rng = np.random.default_rng(4)
    n = 200
    small = rng.integers(0, 2, n)
    x = np.column_stack([np.where(small == 1, 5.0, 9.0), np.full(n, 4.0), rng.normal(size=n)])
    values = np.column_stack([np.full(n, 0.5), np.where(small == 1, 0.8, 0.2), np.full(n, 0.4)])
    values += rng.normal(0, 0.01, (n, 3))
    groups = ["small" if s else "large" for s in small]
    rows = TrainingRows(
        ["size_log", "doc_tokens_log", "q"], x, [HYBRID, BM25, DENSE], values, groups, [str(i) for i in range(n)]
    )
    model = fit_gain_model(rows, HYBRID, COSTS, prior_features=("size_log", "doc_tokens_log"))
    assert set(model.familiar) == {"small", "large"} and model.familiar["small"]["size_log"] == 5.0
    pool = [HYBRID, BM25, DENSE]
    assert model.unfamiliar({"size_log": 5.4, "doc_tokens_log": 4.2, "q": 0.0}) is None
    assert model.choose({"size_log": 5.0, "doc_tokens_log": 4.0}, pool).pipeline == BM25
    assert model.choose({"size_log": 9.0, "doc_tokens_log": 4.0}, pool).pipeline == HYBRID
    far = {"size_log": 7.0, "doc_tokens_log": 4.0, "q": 0.0}  # between the two, more than 1.0 from each
    why = model.unfamiliar(far)
    assert why is not None and "nearest" in why
    for choice in (model.choose(far, pool), LearnedSelector(model).select("a question", far, pool)):
        assert choice.selector == "learned>heuristic" and choice.reasoning.startswith(why)
    assert "nearest: small" in (model.unfamiliar({"size_log": 6.3, "doc_tokens_log": 4.0}) or "")
    assert "nearest: large" in (model.unfamiliar({"size_log": 7.7, "doc_tokens_log": 4.0}) or "")
    assert model.unfamiliar({"size_log": 5.0, "doc_tokens_log": 4.6}) is not None  # documents 1.8x longer
    assert model.unfamiliar({"size_log": 5.0, "doc_tokens_log": float("nan")}) is not None  # NaN is no match
    path = tmp_path / "profile.json"
    model.to_json(path)
    assert GainModel.load(path).familiar == model.familiar


def test_every_collection_feature_has_a_familiarity_scale() -> None:
    assert set(COLLECTION_FEATURES) == set(FAMILIAR_WITHIN)


def test_the_gate_reads_chunks_per_document_and_metadata_fields_on_their_scales() -> None:
    model = fit_gain_model(synthetic_rows(), HYBRID, COSTS)
    model.familiar = {
        "notes": {"chunks_per_doc": 1.0, "metadata_fields": 0.0},
        "catalogue": {"chunks_per_doc": 1.0, "metadata_fields": 6.0},
    }
    assert model.unfamiliar({"chunks_per_doc": 1.2, "metadata_fields": 0.0}) is None
    assert model.unfamiliar({"chunks_per_doc": 1.0, "metadata_fields": 7.0}) is None  # six and seven fields
    assert "nearest: notes" in (model.unfamiliar({"chunks_per_doc": 1.0, "metadata_fields": 1.0}) or "")
    assert "nearest: notes" in (model.unfamiliar({"chunks_per_doc": 3.0, "metadata_fields": 0.0}) or "")
    assert "nearest: catalogue" in (model.unfamiliar({"chunks_per_doc": 1.0, "metadata_fields": 2.0}) or "")
    assert model.unfamiliar({"chunks_per_doc": 1.0, "metadata_fields": 4.0}) is None  # four and six fields
    model.familiar = {"long": {"chunks_per_doc": 10.0, "metadata_fields": 0.0}}
    assert model.unfamiliar({"chunks_per_doc": 12.0, "metadata_fields": 0.0}) is None  # 1.18x on (1 + chunks)
    assert "nearest: long" in (model.unfamiliar({"chunks_per_doc": float("nan"), "metadata_fields": 0.0}) or "")


def test_malformed_or_empty_familiar_entries_are_refused(tmp_path: Path) -> None:
    raw = fit_gain_model(synthetic_rows(), HYBRID, COSTS).to_dict()
    for bad in (["scifact"], {"scifact": "big"}, {"scifact": {"size_log": "big"}}, {"old": {"renamed_feature": 3.0}}):
        path = tmp_path / "bad.json"
        path.write_text(json.dumps({**raw, "familiar": bad}))
        with pytest.raises(WaypostError, match="'familiar'"):
            GainModel.load(path)


def test_shuffled_controls_differ_by_seed() -> None:
    rows = synthetic_rows()
    assert shuffled(rows, 26)[1] != shuffled(rows, 27)[1]


def test_out_of_fold_variants_never_see_the_held_out_rows() -> None:
    """Noise outcomes and a collection feature unique to each row: a prior that saw the held-out fold would
    memorise it and win by far; fitted on the other folds only, it can do no better than chance."""
    rng = np.random.default_rng(11)
    n = 300
    x = np.column_stack([np.arange(n, dtype=float), rng.normal(size=n)])
    values = rng.uniform(0, 1, (n, 3))
    rows = TrainingRows(["size_log", "q"], x, [HYBRID, BM25, DENSE], values, ["one"] * n, [str(i) for i in range(n)])
    model = fit_gain_model(rows, HYBRID, COSTS, prior_features=("size_log",))
    scores = model.info["oof_variant_scores"]
    oracle = model.info["oof_oracle_score"]
    assert max(scores.values()) < oracle - 0.15, scores  # memorising would reach the oracle (about 0.75)
    assert max(scores.values()) < float(np.mean(values.max(axis=1) + values.mean(axis=1))) / 2


def test_a_profile_of_the_first_format_still_loads(tmp_path: Path) -> None:
    model = fit_gain_model(synthetic_rows(), HYBRID, COSTS)
    raw = model.to_dict()
    raw["format"] = "waypost-gain-model/1"
    del raw["prior"], raw["shrink"], raw["familiar"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(raw))
    old = GainModel.load(path)
    assert old.prior is None and old.shrink == 1.0 and old.familiar == {}
    assert old.predict({"kind": 1.0}) == model.predict({"kind": 1.0})


def test_a_profile_that_is_not_one_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something else"}')
    with pytest.raises(WaypostError, match="not a waypost router profile"):
        GainModel.load(bad)
    with pytest.raises(WaypostError, match="cannot read"):
        GainModel.load(tmp_path / "missing.json")


@pytest.fixture
def shared(minilm: Embedder) -> Iterator[Embedder]:
    share_embedder(minilm)
    yield minilm
    unshare_embedder(minilm.model_id)


def test_router_train_on_two_invented_sets(tmp_path: Path, shared: Embedder) -> None:
    sets = write_sets(tmp_path / "data")
    out = tmp_path / "profile.json"
    summary = train_command(sets, tmp_path / "store", out, pipelines=["bm25", "dense"])
    assert summary["sets"] == ["islands", "recipes"] and summary["queries"] >= 6
    model = GainModel.load(out)
    assert [p.label for p in model.pipelines] == ["hybrid", "bm25", "dense"]
    assert set(model.feature_names) and "graph_loaded" not in model.feature_names
    feats = {name: 0.5 for name in model.feature_names}
    assert set(model.predict(feats)) == {"hybrid", "bm25", "dense"}
    # the outcomes are cached: a second run computes none and fits the same model
    again = tmp_path / "again.json"
    assert train_command(sets, tmp_path / "store", again, pipelines=["bm25", "dense"])["queries"] == summary["queries"]
    assert GainModel.load(again).predict(feats) == model.predict(feats)
    rows = (tmp_path / "store" / "outcomes" / "outcomes.jsonl").read_text().splitlines()
    assert len(rows) == 3 * summary["queries"]


def test_the_shipped_profile_loads() -> None:
    model = default_model()
    assert model is not None, f"no profile shipped at {DEFAULT_PROFILE}"
    assert model.default == HYBRID and len(model.pipelines) >= 4
    gains = model.predict({})
    assert set(gains) == {p.label for p in model.pipelines} and 0.0 <= model.confidence(gains) <= 1.0
