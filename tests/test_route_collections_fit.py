"""``waypost router train-collections``: stage 1 fitted on labelled queries, through the command, on a real store
with the real model. Two invented collections hold the same kettle manuals, so only what the queries teach
(how support and sales questions are asked) can tell them apart."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.cli_runner import Cli
from waypost.base import Embedder
from waypost.engine import Engine, EngineConfig
from waypost.errors import InvalidInputError
from waypost.route.collections import SIGNALS, EmbeddingCollectionSelector
from waypost.route.collections_fit import (
    LabelledQuery,
    cross_validated_accuracy,
    fit_collections,
    fit_logit,
    read_labelled,
    signal_tensor,
    top_choice,
)
from waypost.types import Document

MANUALS = [
    Document("k1", "The Harlow kettle boils 1.7 litres in four minutes and switches off when dry."),
    Document("k2", "Descale the Harlow kettle monthly with citric acid; rinse twice before use."),
    Document("k3", "The Harlow kettle comes in copper and slate; the base rotates fully."),
    Document("k4", "A two-year warranty covers the Harlow kettle's element and switch."),
]
SUPPORT = [
    "how do I descale my kettle",
    "my kettle will not switch off, what should I do",
    "the base light stays red, how do I fix it",
    "how do I clean limescale from the spout",
    "kettle makes a loud noise when boiling, is it broken",
    "how do I reset the kettle after it boiled dry",
    "water tastes of metal after descaling, help",
    "the lid will not close properly anymore",
]
SALES = [
    "what does the copper kettle cost",
    "is there a discount for ordering twenty kettles",
    "price of the slate model in euros",
    "can I buy the kettle with a gift box",
    "do you ship kettles to Norway and what does shipping cost",
    "bulk pricing for hotel orders",
    "is the copper finish more expensive than slate",
    "when will the kettle be back in stock for purchase",
]
HELD_OUT = [
    ("how do I stop the kettle from leaking at the base", "support"),
    ("what is the price for 50 kettles", "sales"),
]


@pytest.fixture
def store(tmp_path: Path, minilm: Embedder) -> Path:
    path = tmp_path / "store"
    with Engine(path, EngineConfig(chunk_tokens=64)) as engine:
        engine.register_embedder(minilm)
        for name in ("support", "sales"):
            engine.collection(name, create=True).add(MANUALS)
    return path


def labelled(path: Path, extra: list[str] | None = None) -> Path:
    rows = [{"query": q, "collection": "support"} for q in SUPPORT] + [
        {"query": q, "collection": "sales"} for q in SALES
    ]
    path.write_text("\n".join([json.dumps(r) for r in rows] + (extra or [])) + "\n")
    return path


def test_the_command_fits_stage_one_and_query_uses_its_profile(store: Path, tmp_path: Path, cli: Cli) -> None:
    out = tmp_path / "collections.json"
    run = cli("router", "train-collections", labelled(tmp_path / "q.jsonl"), "--store", store, "--out", out, "--json")
    assert run.exit_code == 0, run.stderr
    summary = json.loads(run.stdout)
    assert summary["queries"] == 16 and summary["collections"] == ["sales", "support"] and summary["unlabelled"] == []
    per = summary["per_collection"]
    assert {name: row["queries"] for name, row in per.items()} == {"sales": 8, "support": 8}
    assert sum(row["accuracy"] * row["queries"] for row in per.values()) / 16 == pytest.approx(
        summary["train_accuracy"]
    )
    assert summary["train_accuracy"] >= 0.9 and summary["cv_accuracy"] is not None
    assert summary["weights"]["exemplar"] > 1.0  # the only signal that tells two copies of one manual apart
    profile = json.loads(out.read_text())
    assert sorted(profile["exemplars"]) == ["sales", "support"] and profile["weights"] == summary["weights"]
    for question, expected in HELD_OUT:
        found = cli("query", question, "--store", store, "--collection", "auto", "--collections-profile", out, "--json")
        assert found.exit_code == 0, found.stderr
        note = json.loads(found.stdout)["explain"]["notes"][0]
        assert note.startswith(f"collections {expected} chosen by learned"), note
    without = cli("query", HELD_OUT[0][0], "--store", store, "--collection", "auto", "--json")
    note = json.loads(without.stdout)["explain"]["notes"][0]
    assert note.startswith("collections sales, support chosen by embedding"), note  # two equal copies: fused


def test_without_exemplars_the_copies_stay_tied(store: Path, minilm: Embedder) -> None:
    queries = [LabelledQuery(q, "support") for q in SUPPORT] + [LabelledQuery(q, "sales") for q in SALES]
    with Engine(store) as engine:
        engine.register_embedder(minilm)
        fitted = fit_collections(engine, queries, exemplars=False)
        assert fitted.selector.weights["exemplar"] == 0.0 and not fitted.selector.exemplars
        assert fitted.train_accuracy == 0.5  # nothing else differs: every query gets the same collection
        assert isinstance(fitted.selector, EmbeddingCollectionSelector)


def test_bad_labelled_queries_are_refused_with_their_line(store: Path, tmp_path: Path, cli: Cli) -> None:
    out = tmp_path / "p.json"
    bad = labelled(tmp_path / "bad.jsonl", ["", "{not json"])
    run = cli("router", "train-collections", bad, "--store", store, "--out", out)
    assert run.exit_code != 0 and "bad.jsonl:18: not JSON" in run.stderr and not out.exists()
    unknown = labelled(tmp_path / "unknown.jsonl", [json.dumps({"query": "refunds", "collection": "billing"})])
    run = cli("router", "train-collections", unknown, "--store", store, "--out", out)
    assert run.exit_code != 0 and "['billing']" in run.stderr and "['sales', 'support']" in run.stderr
    with pytest.raises(InvalidInputError, match=r"x.jsonl:1: 'query' and 'collection' must be non-empty strings"):
        (tmp_path / "x.jsonl").write_text(json.dumps({"query": "", "collection": "sales"}))
        read_labelled(tmp_path / "x.jsonl")
    with pytest.raises(InvalidInputError, match=r"y.jsonl:1: "):
        (tmp_path / "y.jsonl").write_text(json.dumps({"query": "q", "collection": "sales", "filters": {"and": []}}))
        read_labelled(tmp_path / "y.jsonl")
    one = read_labelled(
        labelled(tmp_path / "f.jsonl", [json.dumps({"query": "q", "collection": "sales", "filters": {"year": 2020}})])
    )
    assert str(one[-1].filters) == "year = 2020" and len(one) == 17


def test_the_fit_never_chooses_a_collection_the_filters_rule_out() -> None:
    """Signal 0 marks the answer, signal 1 is huge on collection 2; queries 0-9 filter collection 2 out."""
    rng = np.random.default_rng(0)
    n = 20
    gold = np.asarray([i % 2 for i in range(n)], dtype=np.int64)
    x = rng.normal(0, 0.1, size=(n, 3, 2))
    x[np.arange(n), gold, 0] += 1.0
    x[:, 2, 1] = 5.0
    gold[10:] = 2  # ... and is the answer wherever it is allowed
    x[10:, 2, 0] += 1.0
    mask = np.ones((n, 3), dtype=bool)
    mask[:10, 2] = False
    w = fit_logit(x, mask, gold)
    assert list(top_choice(x, mask, w)) == list(gold)
    assert 2 not in top_choice(x[:10], mask[:10], w)  # unmasked, collection 2 would win every one of them
    assert set(top_choice(x[:10], np.ones((10, 3), dtype=bool), w)) == {2}
    assert cross_validated_accuracy(x, mask, gold) == 1.0  # held-out folds are scored under their masks too


def test_cross_validation_scores_each_fold_with_weights_fitted_without_it() -> None:
    """Labels that follow a signal are learned out of fold; noise labels are fitted in sample but score
    about chance out of fold."""
    train, held = [], []
    for seed in range(5):
        rng = np.random.default_rng(seed)
        x = rng.normal(size=(40, 2, 8))
        noise = rng.integers(0, 2, 40).astype(np.int64)
        mask = np.ones((40, 2), dtype=bool)
        train.append(float(np.mean(top_choice(x, mask, fit_logit(x, mask, noise)) == noise)))
        held.append(cross_validated_accuracy(x, mask, noise) or 0.0)
        x[np.arange(40), noise, 0] += 3.0
        assert (cross_validated_accuracy(x, mask, noise) or 0.0) >= 0.9
    assert np.mean(held) < 0.6 < np.mean(train)
    assert cross_validated_accuracy(np.zeros((9, 2, 1)), np.ones((9, 2), dtype=bool), np.zeros(9, np.int64)) is None


def test_no_query_is_its_own_exemplar(store: Path, minilm: Embedder) -> None:
    """Fitting reads each query's exemplar signal with the query itself left out: with it, its own
    collection's signal would rise (the mean of its nearest exemplars takes a perfect match)."""
    queries = [LabelledQuery(q, "support") for q in SUPPORT] + [LabelledQuery(q, "sales") for q in SALES]
    names = ["sales", "support"]
    gold = [names.index(q.collection) for q in queries]
    with Engine(store) as engine:
        engine.register_embedder(minilm)
        selector = EmbeddingCollectionSelector(engine, exemplars={"support": SUPPORT, "sales": SALES})
        vectors = {q.text: {minilm.model_id: minilm.embed_query(q.text)} for q in queries}
        column = SIGNALS.index("exemplar")
        left_out = signal_tensor(selector, queries, names, vectors, skip_identical=True)[:, :, column]
        kept = signal_tensor(selector, queries, names, vectors, skip_identical=False)[:, :, column]
    rows = np.arange(len(queries))
    assert (kept[rows, gold] > left_out[rows, gold] + 0.05).all()
    assert np.allclose(kept[rows, [1 - g for g in gold]], left_out[rows, [1 - g for g in gold]])


def test_the_command_refuses_what_it_cannot_fit(store: Path, tmp_path: Path, cli: Cli, minilm: Embedder) -> None:
    out = tmp_path / "p.json"

    def refused(path: Path, *more: str | Path) -> str:
        run = cli("router", "train-collections", path, "--store", store, "--out", out, *more)
        assert run.exit_code != 0 and not out.exists(), run.stdout
        return run.stderr

    (tmp_path / "empty.jsonl").write_text("\n\n")
    assert "holds no labelled query" in refused(tmp_path / "empty.jsonl")
    twice = {"query": SALES[0], "collection": "support"}
    assert "labelled both 'sales' and 'support'" in refused(labelled(tmp_path / "t.jsonl", [json.dumps(twice)]))
    (tmp_path / "latin1.jsonl").write_bytes('{"query": "caf\xe9", "collection": "sales"}'.encode("latin-1"))
    assert "latin1.jsonl is not UTF-8 text" in refused(tmp_path / "latin1.jsonl")
    one = tmp_path / "one"
    with Engine(one) as engine:
        engine.register_embedder(minilm)
        engine.collection("sales", create=True).add(MANUALS)
    only_sales = tmp_path / "s.jsonl"
    only_sales.write_text(json.dumps({"query": "price", "collection": "sales"}) + "\n")
    run = cli("router", "train-collections", only_sales, "--store", one, "--out", out)
    assert run.exit_code != 0 and "at least two collections" in run.stderr
    with Engine(one) as engine:  # a field only sales has: a filter on it rules support out
        engine.register_embedder(minilm)
        engine.collection("sales").add([Document("price", "Copper: 89 euros.", metadata={"region": "north"})])
        engine.collection("support", create=True).add(MANUALS)
    ruled_out = tmp_path / "r.jsonl"
    rows = [{"query": "descale", "collection": "support", "filters": {"region": "north"}}]
    rows.append({"query": "price", "collection": "sales"})
    ruled_out.write_text("\n".join(json.dumps(r) for r in rows))
    run = cli("router", "train-collections", ruled_out, "--store", one, "--out", out)
    assert run.exit_code != 0 and "rule out its own collection 'support'" in run.stderr


def test_ask_takes_the_profile_and_a_named_collection_refuses_it(store: Path, tmp_path: Path, cli: Cli) -> None:
    out = tmp_path / "c.json"
    fitted = cli("router", "train-collections", labelled(tmp_path / "q.jsonl"), "--store", store, "--out", out)
    assert fitted.exit_code == 0, fitted.stderr
    question = HELD_OUT[1][0]
    asked = cli("ask", question, "--store", store, "--collection", "auto", "--collections-profile", out, "--no-stream")
    assert asked.exit_code == 0, asked.stderr
    assert "chosen by learned" in asked.stdout and "answering from sales" in asked.stdout, asked.stdout
    for command in ("ask", "query"):
        run = cli(command, question, "--store", store, "--collection", "sales", "--collections-profile", out)
        assert run.exit_code == 2 and "needs --collection auto" in run.stderr


def test_shuffled_labels_are_not_learned_from_the_queries_themselves(store: Path, minilm: Embedder) -> None:
    """Labels unrelated to the wording: were a query its own exemplar, every label would be fitted."""
    texts = SUPPORT + SALES
    labels = ["support", "sales"] * 8  # alternate, whatever the question asks
    with Engine(store) as engine:
        engine.register_embedder(minilm)
        fitted = fit_collections(engine, [LabelledQuery(t, c) for t, c in zip(texts, labels, strict=True)])
    assert fitted.train_accuracy <= 0.75 and (fitted.cv_accuracy or 0.0) <= 0.75


def test_bad_input_is_refused_before_the_long_part(
    store: Path, tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Conflicting labels and ruled-out collections before any query is embedded; an unwritable profile
    before the fit."""
    from waypost.route import collections_fit

    def never(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("reached the long part")

    monkeypatch.setattr(collections_fit, "_query_vectors", never)
    twice = labelled(tmp_path / "t.jsonl", [json.dumps({"query": SALES[0], "collection": "support"})])
    run = cli("router", "train-collections", twice, "--store", store, "--out", tmp_path / "p.json")
    assert run.exit_code != 0 and "labelled both" in run.stderr and run.exception is None
    monkeypatch.setattr(collections_fit, "fit_collections", never)
    (tmp_path / "a-folder").mkdir()
    (tmp_path / "a-file").write_text("not a folder")
    for out in (tmp_path / "a-folder", tmp_path / "a-file" / "p.json"):
        run = cli("router", "train-collections", labelled(tmp_path / "q.jsonl"), "--store", store, "--out", out)
        assert run.exit_code != 0 and f"cannot write the profile to {out}" in run.stderr, run.stderr
        assert run.exception is None
    missing = cli(
        "router",
        "train-collections",
        labelled(tmp_path / "q.jsonl"),
        "--store",
        tmp_path / "none",
        "--out",
        tmp_path / "new" / "p.json",
    )
    assert missing.exit_code != 0 and "no waypost store" in missing.stderr and not (tmp_path / "new").exists()


def test_collections_without_a_labelled_query_are_named(
    store: Path, tmp_path: Path, cli: Cli, minilm: Embedder
) -> None:
    with Engine(store) as engine:
        engine.register_embedder(minilm)
        engine.collection("archive", create=True).add([Document("old", "The 1990s kettle had a copper lid.")])
    args = ("router", "train-collections", labelled(tmp_path / "q.jsonl"), "--store", store)
    shown = cli(*args, "--out", tmp_path / "a.json")
    assert shown.exit_code == 0 and "no labelled query for archive" in shown.stdout, shown.stdout
    summary = json.loads(cli(*args, "--out", tmp_path / "b.json", "--json").stdout)
    assert summary["unlabelled"] == ["archive"] and "archive" not in summary["per_collection"]


def record_use(store: Path, minilm: Embedder, rows: list[tuple[str, str, str]]) -> None:
    """(query, collection, kind) feedback on the first manual's first chunk, as `waypost feedback` records it."""
    with Engine(store) as engine:
        engine.register_embedder(minilm)
        for query, name, kind in rows:
            engine.collection(name).feedback(query, "k1#0", kind, 4.0 if kind == "rating" else None)


def test_recorded_feedback_labels_the_queries_stage_one_learns_from(
    store: Path, tmp_path: Path, cli: Cli, minilm: Embedder
) -> None:
    uses = [(q, "support", "used") for q in SUPPORT] + [(q, "sales", "rating") for q in SALES]
    both = "does the kettle come with a manual"  # useful in both: no label
    noise = [(both, "support", "used"), (both, "sales", "used"), (SALES[0], "support", "rejected")]
    record_use(store, minilm, uses + noise)
    out = tmp_path / "fb.json"
    run = cli("router", "train-collections", "--feedback", "--store", store, "--out", out, "--json")
    assert run.exit_code == 0, run.stderr
    summary = json.loads(run.stdout)
    assert summary["queries"] == 16 and summary["feedback_queries"] == 16 and summary["feedback_ambiguous"] == 1
    assert {name: row["queries"] for name, row in summary["per_collection"].items()} == {"sales": 8, "support": 8}
    assert summary["train_accuracy"] >= 0.9 and summary["weights"]["exemplar"] > 1.0
    profile = json.loads(out.read_text())
    assert sorted(profile["exemplars"]["sales"]) == sorted(SALES) and both not in profile["exemplars"]["support"]
    for question, expected in HELD_OUT:
        found = cli("query", question, "--store", store, "--collection", "auto", "--collections-profile", out, "--json")
        assert json.loads(found.stdout)["explain"]["notes"][0].startswith(f"collections {expected} chosen by learned")
    # a file's label stands where feedback labels the same query otherwise
    moved = tmp_path / "moved.jsonl"
    moved.write_text(json.dumps({"query": SALES[1], "collection": "support"}) + "\n")
    run = cli("router", "train-collections", moved, "--feedback", "--store", store, "--out", out, "--json")
    summary = json.loads(run.stdout)
    assert run.exit_code == 0 and summary["queries"] == 16 and summary["feedback_overridden"] == 1
    assert summary["per_collection"]["support"]["queries"] == 9


def test_feedback_or_a_file_is_needed(store: Path, tmp_path: Path, cli: Cli) -> None:
    out = tmp_path / "p.json"
    run = cli("router", "train-collections", "--store", store, "--out", out)
    assert run.exit_code != 0 and "give a file of labelled QUERIES, --feedback, or both" in run.stderr
    run = cli("router", "train-collections", "--feedback", "--store", store, "--out", out)
    assert run.exit_code != 0 and "holds no feedback that a hit was used" in run.stderr and not out.exists()
