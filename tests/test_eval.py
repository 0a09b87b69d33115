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


def test_evidence_at_a_budget_by_hand() -> None:
    from waypost.evaluation.metrics import evidence_at_budget

    gold = [("d", 0, 200)]
    # two overlapping results and one outside the evidence; overlaps count once
    assert evidence_at_budget([("d", 0, 100, 10), ("d", 50, 150, 10), ("e", 0, 10, 5)], gold, 100) == (
        0.75,
        150 / 160,
    )
    # the second result crosses the budget: half its tokens fit, so its first half counts
    assert evidence_at_budget([("d", 0, 100, 10), ("d", 100, 300, 20)], gold, 20) == (1.0, 1.0)
    assert evidence_at_budget([("e", 0, 50, 10)], gold, 500) == (0.0, 0.0)
    assert evidence_at_budget([], gold, 500) == (0.0, 0.0)


def test_span_qrels_scope_and_breakdown(tmp_path: Path, minilm) -> None:  # type: ignore[no-untyped-def]
    """Two long 'meetings'; each question's evidence is one passage of its own meeting."""
    root = tmp_path / "meetings"
    (root / "qrels").mkdir(parents=True)
    turns = {
        "m1": [f"A: We discussed the budget for item {i} and agreed to fund it." for i in range(30)]
        + ["B: The microphone array failed during the recording and must be replaced."],
        "m2": [f"C: The schedule for task {i} slipped by a week." for i in range(30)]
        + ["D: The microphone vendor promised new headsets next month."],
    }
    corpus = [{"_id": m, "title": "", "text": "\n".join(t), "metadata": {"meeting": m}} for m, t in turns.items()]
    (root / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in corpus))
    queries = [
        {
            "_id": "q1",
            "text": "What happened to the microphone array?",
            "metadata": {"meeting": "m1", "kind": "specific"},
        },
        {
            "_id": "q2",
            "text": "What did the vendor promise about headsets?",
            "metadata": {"meeting": "m2", "kind": "other"},
        },
    ]
    (root / "queries.jsonl").write_text("\n".join(json.dumps(r) for r in queries))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tm1\t1\nq2\tm2\t1\n")
    spans = ["query-id\tcorpus-id\tstart\tend"]
    for qid, meeting, needle in (("q1", "m1", "B: The microphone"), ("q2", "m2", "D: The microphone")):
        text = corpus[0 if meeting == "m1" else 1]["text"]
        start = text.index(needle)
        spans.append(
            f"{qid}\t{meeting}\t{start}\t{text.index(chr(10), start) if chr(10) in text[start:] else len(text)}"
        )
    (root / "qrels" / "test-spans.tsv").write_text("\n".join(spans) + "\n")
    assert load_beir(root).spans["q1"][0][0] == "m1"
    config = EngineConfig(chunk_tokens=32)
    report = run_eval(root, "hybrid", config=config, cache_dir=tmp_path / "cache", scope="meeting", by="kind")
    out = report.to_dict()
    for budget in (500, 1000, 2000):
        assert 0.0 <= out[f"evidence_precision@{budget}"] <= 1.0
    assert out["evidence_recall@500"] == 1.0  # the evidence chunk ranks within the first 500 tokens
    assert out["by"]["specific"]["queries"] == 1 and "evidence_recall@1000" in out["by"]["other"]
    with pytest.raises(Exception, match="no metadata field"):
        run_eval(root, "bm25", config=config, cache_dir=tmp_path / "cache", scope="room")


@pytest.mark.parametrize(
    ("file", "line", "expected"),
    [
        ("corpus.jsonl", '{"_id": "d7", "title": "No text"}', r"corpus.jsonl, line 4: the record has no 'text'"),
        ("corpus.jsonl", "{nope", r"corpus.jsonl, line 4: not valid JSON"),
        ("corpus.jsonl", "[1, 2]", r"corpus.jsonl, line 4: a JSON object is expected"),
        ("queries.jsonl", '{"text": "no id"}', r"queries.jsonl, line 5: the record has no '_id'"),
        ("qrels/test.tsv", "q1 d1 1", r"test.tsv, line 5: expected 3 tab-separated columns"),
        ("qrels/test.tsv", "q1\td1\thigh", r"test.tsv, line 5: score must be a whole number, got 'high'"),
    ],
)
def test_a_malformed_beir_set_names_its_file_and_line(tmp_path: Path, file: str, line: str, expected: str) -> None:
    from waypost.errors import WaypostError

    data = make_dataset(tmp_path / "bad")
    path = data / file
    path.write_text(path.read_text().rstrip("\n") + "\n" + line + "\n")
    with pytest.raises(WaypostError, match=expected):
        list(load_beir(data).corpus())


def test_eval_refuses_a_limit_below_one_and_answers_without_gold(tmp_path: Path, minilm) -> None:  # type: ignore[no-untyped-def]
    from waypost.errors import WaypostError

    data = make_dataset(tmp_path / "tiny")
    for limit in (0, -1):
        with pytest.raises(WaypostError, match="limit must be at least 1"):
            run_eval(data, "bm25", k=5, config=EngineConfig(), cache_dir=tmp_path / "cache", limit=limit)
    with pytest.raises(WaypostError, match=r"metadata\.answer; none of the 3 queries"):
        run_eval(data, "bm25", k=5, config=EngineConfig(), cache_dir=tmp_path / "cache", answer=True)
    assert not (tmp_path / "cache").exists()  # refused before anything was ingested
    assert (
        run_eval(data, "bm25", k=5, config=EngineConfig(), cache_dir=tmp_path / "cache", limit=1).metrics["queries"]
        == 1
    )
    with pytest.raises(WaypostError, match=r"metadata\.answer; none of the 3 queries"):
        run_eval(data, "bm25", k=5, config=EngineConfig(), cache_dir=tmp_path / "cache", answer=True)
