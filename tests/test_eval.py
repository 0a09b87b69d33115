import json
from pathlib import Path

import pytest

from waypost.engine import EngineConfig
from waypost.evaluation.beir import load_beir
from waypost.evaluation.metrics import ndcg_at, percentile, precision_at, recall_at, reciprocal_rank
from waypost.evaluation.runner import canonical_conditions, canonical_constraints, run_eval
from waypost.filters.model import Condition, Op
from waypost.index.metadata import MetadataIndex


def test_metrics_by_hand() -> None:
    gold = {"a": 1, "b": 1}
    ranked = ["x", "a", "y", "b"]
    assert recall_at(ranked, gold, 2) == 0.5
    assert recall_at(ranked, gold, 4) == 1.0
    assert precision_at(ranked, gold, 2) == 0.5
    assert reciprocal_rank(ranked, gold) == 0.5
    dcg = 1 / 1.584962500721156 + 1 / 2.321928094887362  # binary: linear and exponential gains agree
    assert ndcg_at(ranked, gold, 10) == pytest.approx(dcg / (1 + 1 / 1.584962500721156))
    assert ndcg_at(["a", "b"], gold, 10) == 1.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5


def make_dataset(root: Path) -> Path:
    (root / "qrels").mkdir(parents=True)
    corpus = [
        {
            "_id": "d1",
            "title": "Volcanoes",
            "text": "Magma rises through the crust and erupts as lava.",
            "metadata": {"type": "Movie", "categories": ["Documentaries"], "release_year": 2019},
        },
        {
            "_id": "d2",
            "title": "Bread",
            "text": "Yeast ferments sugars and the dough rises in the oven.",
            "metadata": {"type": "TV Show", "categories": ["Cooking Shows"], "release_year": 2012},
        },
        {
            "_id": "d3",
            "title": "Orbits",
            "text": "Planets follow elliptical orbits around the sun.",
            "metadata": {"type": "Movie", "categories": ["Documentaries"], "release_year": 2008},
        },
    ]
    queries = [
        {"_id": "q1", "text": "lava eruption"},
        {"_id": "q2", "text": "how does dough rise"},
        {
            "_id": "q3",
            "text": "documentaries released after 2015",
            "metadata": {"constraints": {"type": "Movie", "category": "Documentaries", "year_min": 2016}},
        },
        {"_id": "q-unjudged", "text": "not in qrels"},
    ]
    (root / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in corpus))
    (root / "queries.jsonl").write_text("\n".join(json.dumps(r) for r in queries))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\nq3\td1\t1\n")
    return root


def test_eval_end_to_end_with_cached_ingest(tmp_path: Path, minilm) -> None:  # type: ignore[no-untyped-def]
    data = make_dataset(tmp_path / "tiny")
    assert [q.id for q in load_beir(data).queries] == ["q1", "q2", "q3"]
    report = run_eval(data, "metadata", k=5, config=EngineConfig(), cache_dir=tmp_path / "cache")
    m = report.metrics
    assert m["ndcg@10"] == 1.0 and m["recall@5"] == 1.0 and m["mrr"] == 1.0
    assert m["filter_accuracy"] == 1.0 and m["queries"] == 3
    assert m["latency_p95_ms"] >= m["latency_p50_ms"] > 0
    assert report.ingest["added"] == 3
    again = run_eval(data, "bm25", k=5, config=EngineConfig(), cache_dir=tmp_path / "cache")
    assert again.ingest == report.ingest  # second run only queries
    assert again.metrics["recall@5"] == pytest.approx(2 / 3, abs=1e-3)  # BM25 cannot read the filter query


def test_filter_accuracy_canonical_forms() -> None:
    index = MetadataIndex.build(
        [
            {
                "type": "Movie",
                "categories": ["A"],
                "countries": ["X"],
                "release_year": 2000,
                "duration_minutes": 90,
                "seasons": 2,
            }
        ]
    )
    gold = {
        "type": "Movie",
        "category": "A",
        "country": "X",
        "year_min": 2016,
        "max_minutes": 100,
        "min_seasons": 3,
        "topic": "war",
    }
    predicted = [
        Condition("type", Op.EQ, "movie"),
        Condition("categories", Op.EQ, "A"),
        Condition("countries", Op.EQ, "X"),
        Condition("release_year", Op.GT, 2015),
        Condition("duration_minutes", Op.LT, 101),
        Condition("seasons", Op.GTE, 3),
    ]
    assert canonical_conditions(predicted) == canonical_constraints(gold, index)
    assert canonical_conditions(predicted[:-1]) != canonical_constraints(gold, index)


def test_not_a_beir_dir(tmp_path: Path) -> None:
    from waypost.errors import WaypostError

    with pytest.raises(WaypostError, match="not a BEIR-layout"):
        load_beir(tmp_path)


def test_graded_ndcg_uses_linear_gain_like_trec_eval() -> None:
    gold = {"a": 2, "b": 1}
    # DCG = 1/log2(2) + 2/log2(3); IDCG = 2/log2(2) + 1/log2(3)
    expected = (1 + 2 / 1.584962500721156) / (2 + 1 / 1.584962500721156)
    assert ndcg_at(["b", "a"], gold, 10) == pytest.approx(expected)
    assert reciprocal_rank(["x"] * 15 + ["b"], gold) == pytest.approx(1 / 16)  # not cut at 10
