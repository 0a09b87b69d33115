"""``waypost bench mixed``: the oracle, best-fixed and gap arithmetic on a hand-made outcome table, the
offline scoring of a fused pipeline, and the command end to end on two tiny invented sets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_runner import Cli
from tests.mixed_sets import write_sets
from waypost.evaluation.mixed import RECALL5, MixedQuery, Workload, default_workload
from waypost.evaluation.mixed_bench import (
    BenchResult,
    best_single,
    foreign_id,
    gap_closed,
    mean_by_set,
    oracle_values,
    scored_rows,
    value_of,
)
from waypost.evaluation.outcomes import HitRow, Outcome, OutcomeCache, interleave_hits, outcome_table, score
from waypost.route.base import Pipeline
from waypost.route.execute import interleave_results
from waypost.types import Chunk, Explanation, Hit, Provenance, RetrievalResult

VALUES = {  # query -> (set, hybrid, bm25, dense)
    "A/q1": ("A", 0.5, 0.8, 0.2),
    "A/q2": ("A", 0.6, 0.4, 0.6),
    "B/q3": ("B", 0.3, 0.1, 0.9),
    "B/q4": ("B", 0.5, 0.5, 0.7),
}
LABELS = ("hybrid", "bm25", "dense")


def query(qid: str, s: str) -> MixedQuery:
    return MixedQuery(qid, s, s, "text", RECALL5, {"d1": 1, "d2": 1})


def hand_table() -> tuple[list[MixedQuery], list[Outcome]]:
    queries = [query(qid, row[0]) for qid, row in VALUES.items()]
    outcomes = [
        Outcome(qid, row[0], row[0], label, value, 1.0, 1)
        for qid, row in VALUES.items()
        for label, value in zip(LABELS, row[1:], strict=True)
    ]
    return queries, outcomes


def test_oracle_best_fixed_and_gap_arithmetic() -> None:
    queries, outcomes = hand_table()
    table = outcome_table(outcomes)
    fixed: dict[str, dict[str, float]] = {"A": {}, "B": {}}
    for label in LABELS:
        for s, v in mean_by_set(queries, {qid: row[label].value for qid, row in table.items()}).items():
            fixed[s][label] = v
    assert fixed["A"] == pytest.approx({"hybrid": 0.55, "bm25": 0.6, "dense": 0.4})
    assert fixed["B"] == pytest.approx({"hybrid": 0.4, "bm25": 0.3, "dense": 0.8})
    oracle = mean_by_set(queries, oracle_values(table))
    assert oracle == pytest.approx({"A": 0.7, "B": 0.8})
    assert best_single(fixed, ["A", "B"]) == "dense"  # 0.6 on average, against hybrid 0.475 and bm25 0.45
    assert gap_closed(0.7, 0.6, 0.75) == pytest.approx(2 / 3)
    assert gap_closed(0.6, 0.6, 0.6) == 0.0  # no headroom: nothing to close
    auto = {"A": 0.65, "B": 0.75}
    result = BenchResult(
        ["A", "B"], {"A": RECALL5, "B": RECALL5}, fixed, oracle, auto, {}, "dense", 0.5, 0.0, 1.0, 2.0, None
    )
    assert result.averages()["best_single"] == pytest.approx(0.6)
    out = result.to_json()
    assert out["datasets"]["A"]["best_fixed_pipeline"] == "bm25" and out["datasets"]["B"]["best_fixed"] == 0.8
    assert out["datasets"]["A"]["oracle"] == 0.7 and out["datasets"]["B"]["auto"] == 0.75


def test_a_fused_choice_is_scored_from_the_stored_hits() -> None:
    q = query("A/q1", "A")
    row = {
        "bm25": Outcome(q.id, "A", "A", "bm25", 0.5, 1.0, 1, [("d1", 0, 10, 5), ("x", 0, 10, 5)]),
        "dense": Outcome(q.id, "A", "A", "dense", 0.5, 1.0, 1, [("d2", 0, 10, 5), ("y", 0, 10, 5)]),
    }
    fused = Pipeline.fusion([Pipeline.of("bm25"), Pipeline.of("dense")])
    assert value_of(q, row, fused) == 1.0  # each finds one of the two gold documents; the fusion both
    assert value_of(q, row, Pipeline.of("bm25")) == 0.5


def test_the_mixed_workload_interleaves_six_sets_and_scopes_qmsum() -> None:
    data = Path("../shared/data")
    if not (data / "qmsum").exists():
        pytest.skip("the shared data sets are not next to this checkout")
    workload: Workload = default_workload(data)
    test = workload.queries("test", limit=20)
    assert {q.set for q in test} == {s.name for s in workload.sets} and len(workload.sets) == 6
    assert [q.set for q in test[:12]] != sorted(q.set for q in test[:12])  # interleaved
    assert all(q.filters is not None for q in test if q.set == "qmsum")
    assert all(q.filters is None for q in test if q.set != "qmsum")
    train_ids = {q.id for q in workload.queries("train")}
    assert not train_ids & {q.id for q in workload.queries("test")}
    assert sum(q.set == "scifact" for q in workload.queries("train")) == 300


def test_bench_mixed_json_on_two_invented_sets(tmp_path: Path, cli: Cli) -> None:
    sets = write_sets(tmp_path / "data")
    args = ["bench", "mixed", "--store", tmp_path / "store", "--pipelines", "bm25", "--pipelines", "dense"]
    for s in sets:
        args += ["--dataset", s]
    res = cli(*args, "--table", "--json", "--report", tmp_path / "report")
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    assert set(out) == {
        "collection_accuracy",
        "strategy_accuracy",
        "oracle_gap_closed",
        "router_p95_ms",
        "auto_p95_ms",
        "datasets",
    }
    assert set(out["datasets"]) == {"islands", "recipes"}
    for row in out["datasets"].values():
        assert set(row) == {"metric", "auto", "best_fixed", "best_fixed_pipeline", "oracle", "fixed"}
        assert set(row["fixed"]) == {"hybrid", "bm25", "dense"}
        assert row["oracle"] >= row["best_fixed"] >= min(row["fixed"].values())
        assert row["oracle"] >= row["auto"]  # --table: auto is one fixed pipeline's outcome per query
    assert 0.0 <= out["strategy_accuracy"] <= 1.0 and out["router_p95_ms"] > 0
    for name in ("index.html", "sets.png", "choices.png", "confusion.png", "retries.png"):
        assert (tmp_path / "report" / name).stat().st_size > 0


def test_the_outcome_cache_survives_a_line_cut_short(tmp_path: Path) -> None:
    cache = OutcomeCache(tmp_path / "outcomes.jsonl")
    done = Outcome("A/q1", "A", "A", "bm25", 0.5, 3.0, 7, [("d1", 0, 10, 5)])
    cache.add([done])
    with (tmp_path / "outcomes.jsonl").open("a") as fh:
        fh.write('{"query_id": "A/q2", "set": "A", "coll')  # the run was killed mid-write
    again = OutcomeCache(tmp_path / "outcomes.jsonl")
    assert again.get("bm25", "A/q1", 7) == done
    assert again.get("bm25", "A/q1", 8) is None  # another generation of the collection: computed again
    assert len(again.rows) == 1


def test_bench_mixed_runs_auto_end_to_end_by_default(tmp_path: Path, cli: Cli) -> None:
    """Without --table, auto goes through Engine.search: the collection is chosen, not given, and every
    routed query leaves a route record."""
    sets = write_sets(tmp_path / "data")
    args = ["bench", "mixed", "--store", tmp_path / "store", "--pipelines", "bm25"]
    for s in sets:
        args += ["--dataset", s]
    res = cli(*args, "--json", "--report", tmp_path / "report")
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["collection_accuracy"] is not None and out["collection_accuracy"] > 0.5
    assert out["auto_p95_ms"] > 0
    info = json.loads((tmp_path / "report" / "bench.json").read_text())["info"]
    assert info["auto_mode"] == "live"
    assert "auto, routing only (no planner or corrective loop)" in info["controls"]
    assert set(info["corrective"]["by_set"]) == {"islands", "recipes"}
    assert 0.0 <= info["corrective"]["retried_share"] <= 1.0
    assert "Retried" in (tmp_path / "report" / "index.html").read_text()


def test_interleaving_stored_hit_rows_matches_the_planner_s_interleaving() -> None:
    """Offline scoring of a split question interleaves stored hits exactly as the router interleaves results."""
    lists: list[list[HitRow]] = [
        [("a", 0, 5, 5), ("b", 0, 5, 5), ("c", 0, 5, 5)],
        [("b", 0, 5, 5), ("d", 0, 5, 5), ("a", 5, 9, 4), ("e", 0, 3, 3)],
        [("d", 0, 5, 5), ("f", 0, 2, 2)],
    ]

    def result(rows: list[HitRow]) -> RetrievalResult:
        hits = [Hit(Chunk(d, 0, "x", s, e, n), 1.0, "hybrid", Provenance("c", d, "test")) for d, s, e, n in rows]
        return RetrievalResult(hits, Explanation("hybrid", "q", "q", None, None, {}))

    for k in (1, 4, 10):
        live = interleave_results("q", [result(rows) for rows in lists], k).hits
        expected = [(h.document_id, h.chunk.start, h.chunk.end, h.chunk.token_count) for h in live]
        assert interleave_hits(lists, k) == expected
    assert interleave_hits(lists, 4) == [("a", 0, 5, 5), ("b", 0, 5, 5), ("d", 0, 5, 5), ("f", 0, 2, 2)]


def test_another_collection_s_document_never_matches_the_set_s_gold() -> None:
    from waypost.types import Chunk, Explanation, Hit, Provenance, RetrievalResult

    query = MixedQuery("s/q1", "s", "papers", "a claim", RECALL5, {"doc1": 1})
    own = [(foreign_id("papers", "papers", "doc1"), 0, 10, 5)]
    other = [(foreign_id("meetings", "papers", "doc1"), 0, 10, 5)]
    assert score(query, own) == 1.0 and score(query, other) == 0.0

    def fused(collection: str) -> RetrievalResult:  # what bench mixed reads of an end-to-end result
        hit = Hit(Chunk("doc1", 0, "a claim", 0, 7, 2), 1.0, "hybrid", Provenance(collection, "Doc 1", "doc1.txt"))
        return RetrievalResult([hit], Explanation("fuse", query.text, query.text))

    assert score(query, scored_rows(fused("papers"), "papers")) == 1.0
    assert score(query, scored_rows(fused("meetings"), "papers")) == 0.0


def test_the_report_in_table_mode_and_a_confusion_plot_of_no_query(tmp_path: Path) -> None:
    from waypost.evaluation.mixed_bench import BenchResult
    from waypost.evaluation.mixed_report import plot_confusion, write_report

    result = BenchResult(
        sets=["a"], metrics={"a": RECALL5}, fixed={"a": {"hybrid": 0.5}}, oracle={"a": 1.0}, auto={"a": 0.5},
        controls={}, best_single="hybrid", strategy_accuracy=1.0, oracle_gap_closed=0.0, router_p95_ms=1.0,
        auto_p95_ms=2.0, collection_accuracy=None, choices=[("a", "hybrid", "hybrid")], retries=[0],
        info={"auto_mode": "table"},
    )  # fmt: skip
    assert write_report(result, tmp_path / "report").exists()
    assert (tmp_path / "report" / "retries.png").stat().st_size > 0
    result.choices = []
    plot_confusion(result, tmp_path / "empty.png")  # imshow of an empty grid raised TypeError
    assert (tmp_path / "empty.png").stat().st_size > 0
