"""Collection choice (stage 1 of routing) on the mixed workload: for every query of every set, does the
selector pick the set's own collection? Reports accuracy per set on TEST queries and the selector's
latency; ``--fit`` fits the signal weights (a conditional logit) on TRAIN queries only.

Splits: scifact by ``qrels/train.tsv`` / ``qrels/test.tsv``; qmsum by ``metadata.split``; the other sets
by ``waypost.evaluation.splits.query_split`` (a stable hash of the query id). qmsum queries carry their
meeting as a filter (``meeting == metadata.meeting``), as the mixed workload runs them.

The mixed store is never opened in place (opening runs schema migrations and may save index states):
it is copied first (SQLite backup API plus its index folder) to ``--copy-to``.

    PYTHONPATH=src python benchmarks/bench_collections.py --fit      # fit on train, report on test
    PYTHONPATH=src python benchmarks/bench_collections.py --json

Measured 2026-11-25 (2,001 train / 1,277 test queries, 2 busy cores): test accuracy 99.45% for the
embedding selector (fit without exemplars; these are the shipped DEFAULT_WEIGHTS) and for the learned one
(with the training queries as exemplars); per set 100% fiction-multihop, netflix, qmsum, xquad-th, 98.7%
scifact, 94.2% hotpotqa-100 (52 test queries; its Wikipedia questions about films go to netflix).

Measured again 2026-11-27, after the filter extractor stopped reading stray surnames, stems of names and
percentages as filters (the ``metadata`` signal): the weights shipped until then scored 99.22% on test
(hotpotqa-100 88.5%); they no longer matched what ``--fit`` gives on the current store. Refit on the train
queries and shipped: 99.45% (hotpotqa-100 94.2%, scifact 98.7%, the rest 100%; train 99.6%). With the old
extractor, the same refit scores 99.53%: the refit, not the extractor, is what moved the test figure.

Measured 2026-11-27 night, with the ``rare`` signal (the IDF-weighted share of the query's terms that the best
chunk holds). It was adopted on the train queries alone: the 5-fold cross-validated log loss fell from 0.0419
to 0.0361 (accuracy 99.60% and 99.55%, one netflix query). Test, read after: 99.53% (hotpotqa-100 96.2%,
scifact 99.0%, netflix 97.4%, the rest 100%), log loss 0.0366 against 0.0426. Weighting each set equally in the
fit (the benchmark's mean is over sets) lowered the cross-validated log loss further but cost hotpotqa-100
training queries (3 of 48 wrong out of fold), so the fit stays per query.

Since 2026-11-28 the shipped DEFAULT_WEIGHTS are the ``fields_hold_terms_without_metadata`` fit of
``benchmarks/bench_collection_signals.py`` (words read as field values held; the ``metadata`` signal left out);
``--fit`` here still fits every signal, ``metadata`` included.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from waypost.adapters.source import filter_obj
from waypost.engine import Engine, EngineConfig
from waypost.evaluation.splits import query_split
from waypost.filters.model import Condition, Filter, Op
from waypost.route.collections import (
    DEFAULT_WEIGHTS,
    FUSE_RATIO,
    SIGNALS,
    EmbeddingCollectionSelector,
)
from waypost.route.collections_fit import allowed_mask, signal_tensor
from waypost.route.collections_fit import fit_logit as fit
from waypost.route.collections_fit import top_choice as predict

SETS = ["scifact", "hotpotqa-100", "netflix", "qmsum", "xquad-th", "fiction-multihop"]
DATA = {name: Path("/work/shared/data") / name for name in SETS}
MODEL = ""  # the collections' embedding model (set in main)
DATA["fiction-multihop"] = Path(__file__).resolve().parent / "data" / "fiction-multihop"


@dataclass
class Query:
    set: str
    id: str
    text: str
    split: str
    filters: Filter | None


def load_queries(sets: list[str]) -> list[Query]:
    out: list[Query] = []
    for name in sets:
        root = DATA[name]
        if not (root / "queries.jsonl").exists():
            root = Path("/work/main/benchmarks/data") / name
        scifact_split: dict[str, str] = {}
        if name == "scifact":
            for split in ("train", "test"):
                for line in (root / "qrels" / f"{split}.tsv").read_text().splitlines()[1:]:
                    scifact_split[line.split("\t")[0]] = split
        for line in (root / "queries.jsonl").read_text().splitlines():
            raw = json.loads(line)
            meta = raw.get("metadata") or {}
            if name == "scifact":
                split = scifact_split.get(raw["_id"], "")
            elif "split" in meta:
                split = str(meta["split"])
            else:
                split = query_split(raw["_id"])
            flt = Condition("meeting", Op.EQ, meta["meeting"]) if "meeting" in meta else None
            if split:
                out.append(Query(name, raw["_id"], raw["text"], split, flt))
    return out


def write_labelled(queries: list[Query], folder: Path) -> None:
    """Each split's queries as labelled JSONL: the query, its set's collection and its filter."""
    folder.mkdir(parents=True, exist_ok=True)
    for split in ("train", "test"):
        with (folder / f"{split}.jsonl").open("w", encoding="utf-8") as fh:
            for q in queries:
                if q.split == split:
                    row: dict[str, Any] = {"query": q.text, "collection": q.set}
                    if q.filters is not None:
                        row["filters"] = filter_obj(q.filters)
                    fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def copy_store(source: Path, target: Path) -> None:
    """A consistent copy: the SQLite backup API from a read-only connection, then the index folder."""
    if (target / "store.sqlite").exists():
        return
    target.mkdir(parents=True, exist_ok=True)
    src = sqlite3.connect(f"file:{source / 'store.sqlite'}?mode=ro", uri=True)
    dst = sqlite3.connect(target / "store.sqlite")
    src.backup(dst)
    dst.close()
    src.close()
    if (source / "indexes").exists():
        shutil.copytree(source / "indexes", target / "indexes", dirs_exist_ok=True)


def evaluate(
    x: np.ndarray, mask: np.ndarray, w: np.ndarray, queries: list[Query], names: list[str], gold: np.ndarray
) -> dict[str, Any]:
    """What ``select`` would answer, computed from the signals: top-1 accuracy per set, fused share."""
    logits = np.where(mask, x @ w, -1e9)
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    top = probs.argmax(axis=1)
    fused = (probs >= FUSE_RATIO * probs.max(axis=1, keepdims=True)).sum(axis=1) > 1
    per_set: dict[str, dict[str, Any]] = {}
    wrong = []
    for i, q in enumerate(queries):
        row = per_set.setdefault(q.set, {"queries": 0, "correct": 0, "fused": 0})
        row["queries"] += 1
        row["correct"] += int(top[i] == gold[i])
        row["fused"] += int(fused[i])
        if top[i] != gold[i] and len(wrong) < 30:
            wrong.append(f"{q.set} -> {names[top[i]]} (p={probs[i, top[i]]:.2f}) {q.text[:70]!r}")
    for row in per_set.values():
        row["accuracy"] = round(row["correct"] / row["queries"], 4)
    chosen_p = probs[np.arange(len(top)), top]
    return {
        "collection_accuracy": round(float(np.mean(top == gold)), 4),
        "macro_accuracy": round(float(np.mean([r["accuracy"] for r in per_set.values()])), 4),
        "mean_confidence": round(float(chosen_p.mean()), 4),
        "sets": per_set,
        "wrong_examples": wrong,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", type=Path, default=Path.home() / ".cache/waypost/mixed/store")
    ap.add_argument("--copy-to", type=Path, default=Path("/tmp/waypost-bench-collections/store"))
    ap.add_argument("--fit", action="store_true", help="fit the weights on train queries (else the defaults)")
    ap.add_argument("--limit", type=int, default=0, help="at most this many queries per set and split (0: all)")
    ap.add_argument("--save", type=Path, help="write the learned selector's JSON profile here")
    ap.add_argument("--json", action="store_true")
    ap.add_argument(
        "--write-labelled",
        type=Path,
        help="write the queries as DIR/train.jsonl and DIR/test.jsonl (input of `waypost router train-collections`) "
        "and stop",
    )
    args = ap.parse_args()
    if args.write_labelled is not None:
        write_labelled(load_queries([n for n in SETS if (DATA[n] / "queries.jsonl").exists()]), args.write_labelled)
        return 0

    copy_store(args.store, args.copy_to)
    engine = Engine(args.copy_to, EngineConfig(background_index_work=False))
    names = sorted(info.name for info in engine.collections() if info.name in SETS and info.chunks)
    models = {engine.store.collection(n).embed_model for n in names}
    if len(models) != 1:
        raise SystemExit(f"this benchmark expects one embedding model, found {sorted(models)}")
    global MODEL
    MODEL = models.pop()
    missing = sorted(set(SETS) - set(names))
    if missing:
        print(f"missing collections in the store: {missing}", file=sys.stderr)
    queries = load_queries(names)
    if args.limit:
        seen: Counter[tuple[str, str]] = Counter()
        limited = []
        for q in queries:
            if seen[(q.set, q.split)] < args.limit:
                seen[(q.set, q.split)] += 1
                limited.append(q)
        queries = limited
    train = [q for q in queries if q.split == "train"]
    test = [q for q in queries if q.split == "test"]
    # the query's vector is what the router computes once for its own hybrid pass: embedded up front
    # (batched) and handed over, so the latency below is the selector's own; embedding is reported apart
    started = time.perf_counter()
    texts = sorted({q.text for q in queries})
    matrix = engine.embedder(MODEL).embed_documents(texts)
    embed_ms = (time.perf_counter() - started) * 1000 / max(1, len(texts))
    vectors = dict(zip(texts, matrix, strict=True))

    exemplars: dict[str, list[str]] = {}
    for q in train:  # the learned selector's exemplars: training queries only
        exemplars.setdefault(q.set, []).append(q.text)
    selector = EmbeddingCollectionSelector(engine, exemplars=exemplars)
    for name in names:
        selector.profile(name)  # profiles are made once per version; not part of a query's latency
        selector.exemplar_vectors(name)

    by_model = {text: {MODEL: vector} for text, vector in vectors.items()}
    x_train = signal_tensor(selector, train, names, by_model, skip_identical=True)
    x_test = signal_tensor(selector, test, names, by_model, skip_identical=False)
    mask_train, mask_test = allowed_mask(engine, train, names), allowed_mask(engine, test, names)
    gold_train = np.array([names.index(q.set) for q in train])
    gold_test = np.array([names.index(q.set) for q in test])
    zero_shot = [SIGNALS.index(s) for s in SIGNALS if s != "exemplar"]
    models: dict[str, dict[str, float]] = {"defaults": dict(DEFAULT_WEIGHTS)}
    if args.fit:
        w = np.zeros(len(SIGNALS))
        w[zero_shot] = fit(x_train[:, :, zero_shot], mask_train, gold_train)
        models["embedding"] = {s: round(float(v), 3) for s, v in zip(SIGNALS, w, strict=True)}
        models["learned"] = {
            s: round(float(v), 3) for s, v in zip(SIGNALS, fit(x_train, mask_train, gold_train), strict=True)
        }
    results: dict[str, Any] = {}
    for label, weights in models.items():
        w = np.array([weights.get(s, 0.0) for s in SIGNALS])
        results[label] = {
            "weights": weights,
            "train_accuracy": round(float(np.mean(predict(x_train, mask_train, w) == gold_train)), 4),
            "train_sets": evaluate(x_train, mask_train, w, train, names, gold_train)["sets"],
            **evaluate(x_test, mask_test, w, test, names, gold_test),
        }
    best = "learned" if "learned" in models else "defaults"
    selector.weights = models[best]
    if args.save:
        args.save.write_text(selector.to_json())
    latencies: list[float] = []
    for q in test:  # the whole select() call, as the router makes it (query vector given)
        started = time.perf_counter()
        selector.select(q.text, names, q.filters, {MODEL: vectors[q.text]})
        latencies.append((time.perf_counter() - started) * 1000)
    report = {
        "split": "test",
        "test_queries": len(test),
        "train_queries": len(train),
        "selectors": results,
        "latency_of": best,
        "selector_p50_ms": round(float(np.percentile(latencies, 50)), 2),
        "selector_p95_ms": round(float(np.percentile(latencies, 95)), 2),
        "query_embedding_ms_batched": round(embed_ms, 2),
    }
    engine.close()
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for label, res in results.items():
            print(f"== {label}: test accuracy {res['collection_accuracy']:.4f} (train {res['train_accuracy']:.4f})")
            for name, row in sorted(res["sets"].items()):
                print(f"  {name:18} {row['accuracy']:.4f}  ({row['correct']}/{row['queries']}, fused {row['fused']})")
            for line in res["wrong_examples"][:8]:
                print("    wrong:", line)
        print(
            f"selector ({best}) p50 {report['selector_p50_ms']} ms, p95 {report['selector_p95_ms']} ms;"
            f" query embedding {report['query_embedding_ms_batched']} ms (batched)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
