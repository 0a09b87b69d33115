"""Fit the corrective loop's quality model and retry policy on TRAINING queries of the mixed workload.

For each training query of each set this runs three cheap pipelines (hybrid first; bm25 and dense as the
retries a router would rank next), records each result's quality signals and realized metric, then:
- cross-validates (folds over queries): correlation of the quality score with the metric on held-out
  queries, and the loop replayed on them (thresholds chosen on the training folds): retry rate and mean
  metric with and without it;
- fits on every row and writes the JSON profile (the shipped default).

    PYTHONPATH=src OPENBLAS_NUM_THREADS=1 python benchmarks/fit_corrective.py \\
        --store ~/.cache/waypost/mixed/store --data ../shared/data \\
        --out src/waypost/route/profiles/corrective.json --report /tmp/corrective-fit.json

Only training queries are read: scifact and qmsum's ``qrels/train.tsv``; for the other sets, the queries
``evaluation.splits.query_split`` puts in train. The store is opened read-only in spirit: only retrieval.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import pearsonr, spearmanr

from waypost.engine import Engine, EngineConfig
from waypost.errors import WaypostError
from waypost.evaluation.beir import BeirDataset, Query, load_beir
from waypost.evaluation.metrics import ndcg_at, recall_at
from waypost.evaluation.runner import evidence_metrics
from waypost.evaluation.splits import query_split
from waypost.filters.model import Condition, Op
from waypost.post.passages import PassageConfig
from waypost.route.corrective import QualityEvaluator, Row
from waypost.route.quality_fit import Episode, choose_policy, fit_quality, replay
from waypost.types import RetrievalResult

REPO = Path(__file__).resolve().parents[1]
PIPELINES = ("hybrid", "bm25", "dense")  # the first result, then the retries in the order tried


@dataclass(frozen=True)
class SetSpec:
    name: str
    root: Callable[[Path], Path]
    split: str  # the qrels file read
    hashed: bool  # keep only the queries query_split puts in train
    metric: str  # ndcg@10 | recall@5 | evidence_recall@1000
    scope: str | None = None  # a query metadata field that becomes an EQ filter (the question's meeting)


SETS = [
    SetSpec("fiction-multihop", lambda d: REPO / "benchmarks/data/fiction-multihop", "test", True, "recall@5"),
    SetSpec("xquad-th", lambda d: d / "xquad-th", "test", True, "ndcg@10"),
    SetSpec("hotpotqa-100", lambda d: d / "hotpotqa-100", "test", True, "recall@5"),
    SetSpec("netflix", lambda d: d / "netflix", "test", True, "ndcg@10"),
    SetSpec("qmsum", lambda d: d / "qmsum", "train", False, "evidence_recall@1000", scope="meeting"),
    SetSpec("scifact", lambda d: d / "scifact", "train", False, "ndcg@10"),
]


def realized(spec: SetSpec, dataset: BeirDataset, query: Query, result: RetrievalResult) -> float:
    if spec.metric.startswith("evidence"):
        return evidence_metrics(result.hits, dataset.spans.get(query.id, []))[spec.metric]
    ranked, gold = result.document_ids(), dataset.qrels.get(query.id, {})
    return ndcg_at(ranked, gold, 10) if spec.metric == "ndcg@10" else recall_at(ranked, gold, 5)


def collect(
    engine: Engine, spec: SetSpec, data: Path, limit: int, grade_us: list[float], pipelines: list[str]
) -> list[tuple[str, list[Row]]]:
    dataset = load_beir(spec.root(data), spec.split)
    queries = [q for q in dataset.queries if not spec.hashed or query_split(q.id) == "train"][:limit]
    collection = engine.collection(spec.name)
    evaluator = QualityEvaluator()
    depth = 60 if spec.metric.startswith("evidence") else 30  # chunks: enough for 10 distinct documents
    out: list[tuple[str, list[Row]]] = []
    for q in queries:
        flt = Condition(spec.scope, Op.EQ, q.metadata[spec.scope]) if spec.scope else None
        ctx = collection.context()
        rows: list[Row] = []
        for label in pipelines:
            strategy, _plus, passages = label.partition("+")
            result = collection.retrieve(
                q.text, strategy, k=depth, filters=flt, passages=PassageConfig() if passages else None
            )
            evaluator.signals(q.text, result, ctx, 10, flt)  # warms the query-level signals
            t0 = time.perf_counter()
            signals = evaluator.signals(q.text, result, ctx, 10, flt)
            grade_us.append((time.perf_counter() - t0) * 1e6)
            rows.append((signals, realized(spec, dataset, q, result)))
        out.append((spec.name, rows))
    return out


def episodes_of(items: list[tuple[str, list[Row]]]) -> list[Episode]:
    return [Episode(rows[0], rows[1:]) for _name, rows in items]


def rows_of(items: list[tuple[str, list[Row]]]) -> list[Row]:
    return [row for _name, rows in items for row in rows]


def cross_validate(items: list[tuple[str, list[Row]]], folds: int, policy_folds: int) -> dict[str, Any]:
    order = np.random.default_rng(26).permutation(len(items))
    held: list[tuple[str, list[Row]]] = []
    scored_first: list[Row] = []
    scored_all: list[Row] = []
    replays: list[dict[str, float]] = []
    per_set: dict[str, list[tuple[float, float, bool]]] = {}
    for fold in range(folds):
        test_idx = set(order[fold::folds].tolist())
        train = [it for i, it in enumerate(items) if i not in test_idx]
        test = [it for i, it in enumerate(items) if i in test_idx]
        model = choose_policy(fit_quality(rows_of(train)), episodes_of(train), folds=policy_folds)
        scored_first += [(({"s": model.score(rows[0][0])}), rows[0][1]) for _n, rows in test]
        scored_all += [({"s": model.score(s)}, m) for _n, rows in test for s, m in rows]
        replays.append({**replay(model, episodes_of(test)), "n": len(test)})
        for name, rows in test:
            r = replay(model, [Episode(rows[0], rows[1:])])
            per_set.setdefault(name, []).append((r["without"], r["with"], r["retry_rate"] > 0))
        held += test
    n = sum(r["n"] for r in replays)

    def corr(rows: list[Row]) -> dict[str, float]:
        s, m = [r[0]["s"] for r in rows], [r[1] for r in rows]
        return {
            "pearson": round(float(pearsonr(s, m)[0]), 3),
            "spearman": round(float(spearmanr(s, m)[0]), 3),
        }

    by_set: dict[str, list[Row]] = {}
    for (name, _rows), row in zip(held, scored_first, strict=True):
        by_set.setdefault(name, []).append(row)
    within = {name: corr(rows) for name, rows in sorted(by_set.items()) if len({m for _s, m in rows}) > 1}
    return {
        "queries": n,
        "correlation_first_result_within_set": within,
        "correlation_first_result": corr(scored_first),
        "correlation_all_results": corr(scored_all),
        "without_loop": round(sum(r["without"] * r["n"] for r in replays) / n, 4),
        "with_loop": round(sum(r["with"] * r["n"] for r in replays) / n, 4),
        "retry_rate": round(sum(r["retry_rate"] * r["n"] for r in replays) / n, 4),
        "retries_per_query": round(sum(r["retries_per_query"] * r["n"] for r in replays) / n, 4),
        "per_set": {
            name: {
                "queries": len(v),
                "without_loop": round(statistics.mean(a for a, _b, _r in v), 4),
                "with_loop": round(statistics.mean(b for _a, b, _r in v), 4),
                "retry_rate": round(sum(r for _a, _b, r in v) / len(v), 4),
            }
            for name, v in sorted(per_set.items())
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, default=Path.home() / ".cache/waypost/mixed/store")
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared/data")
    parser.add_argument("--sets", nargs="*", help="set names (default: every set ingested in the store)")
    parser.add_argument("--limit", type=int, default=150, help="training queries per set")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument(
        "--pipelines",
        nargs="+",
        default=list(PIPELINES),
        help="the first, then the retries (STRATEGY or STRATEGY+passages)",
    )
    parser.add_argument(
        "--policy-folds", type=int, default=4, help="parts the policy must gain on (1: the in-sample best, permissive)"
    )
    parser.add_argument("--out", type=Path, help="write the fitted profile here (JSON)")
    parser.add_argument("--report", type=Path, help="write the report here (JSON)")
    parser.add_argument("--rows", type=Path, help="a folder keeping each set's collected rows (reused when present)")
    parser.add_argument(
        "--ingest-log", type=Path, default=Path("/work/mixed/ingest.log"), help="only sets this log lists as ingested"
    )
    args = parser.parse_args(argv)
    engine = Engine(args.store, EngineConfig())
    try:
        present = {c.name for c in engine.collections()}
        wanted = [s for s in SETS if (args.sets is None or s.name in args.sets) and s.name in present]
        items: list[tuple[str, list[Row]]] = []
        grade_us: list[float] = []
        if args.ingest_log is not None and args.ingest_log.exists():  # only sets whose ingest has finished
            done = {line.split()[0] for line in args.ingest_log.read_text().splitlines() if line.strip()}
            wanted = [s for s in wanted if s.name in done]
        for spec in wanted:
            t0 = time.perf_counter()
            tag = "" if args.pipelines == list(PIPELINES) else "-" + "-".join(args.pipelines)
            cached = args.rows / f"{spec.name}-{args.limit}{tag}.json" if args.rows else None
            if cached is not None and cached.exists():
                got = [(n, [(dict(sig), m) for sig, m in rows]) for n, rows in json.loads(cached.read_text())]
            else:
                try:
                    got = collect(engine, spec, args.data, args.limit, grade_us, args.pipelines)
                except WaypostError as exc:  # a collection still being ingested, say
                    print(f"{spec.name}: skipped ({exc})", file=sys.stderr)
                    continue
                if cached is not None:
                    cached.write_text(json.dumps(got))
            items += got
            print(f"{spec.name}: {len(got)} training queries in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    finally:
        engine.close()
    report = cross_validate(items, args.folds, args.policy_folds)
    model = choose_policy(fit_quality(rows_of(items)), episodes_of(items), folds=args.policy_folds)
    report["final"] = {
        "lower": round(model.lower, 4),
        "upper": round(model.upper, 4),
        "retry_ambiguous": model.retry_ambiguous,
        "keep_margin": model.keep_margin,
        "in_sample": replay(model, episodes_of(items)),
        "coef": dict(zip(model.names, (round(c, 3) for c in model.coef), strict=True)),
    }
    if grade_us:
        report["grade_signals_us"] = {
            "p50": round(float(np.percentile(grade_us, 50)), 1),
            "p95": round(float(np.percentile(grade_us, 95)), 1),
        }
    model.info = {
        "sets": sorted({name for name, _rows in items}),
        "queries": len(items),
        "rows": len(items) * len(args.pipelines),
        "pipelines": args.pipelines,
        "cross_validated": {k: v for k, v in report.items() if k not in ("per_set", "final")},
        "command": "benchmarks/fit_corrective.py",
    }
    if args.out:
        model.save(args.out)
    text = json.dumps(report, indent=2)
    if args.report:
        args.report.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
