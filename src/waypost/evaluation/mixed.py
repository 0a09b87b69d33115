"""The mixed workload of ``waypost bench mixed``: six BEIR-layout sets as collections of one store, their
queries interleaved by a fixed shuffle, each carrying only what a user would send (the query text, and
for qmsum the meeting it is about, as a filter).

Splits (the router is trained on ``train`` only, never on ``test``):
- scifact: ``qrels/train.tsv`` (a fixed sample of 300 of its 919 queries, seed 26) and ``qrels/test.tsv``;
- qmsum: its own ``qrels/train.tsv`` (a fixed sample of 250 of 502, seed 26) and ``qrels/test.tsv``;
- hotpotqa-100, netflix, xquad-th, fiction-multihop: ``qrels/test.tsv`` cut in two by
  ``evaluation.splits.query_split`` (a stable hash of the query id); xquad-th's train half is sampled to
  300 (seed 26) to keep one training pass short on 2 cores.
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from waypost.engine import Engine, EngineConfig
from waypost.errors import WaypostError
from waypost.evaluation.beir import BeirDataset, Span, load_beir, load_corpus
from waypost.evaluation.splits import query_split
from waypost.filters.model import Condition, Op
from waypost.retrieval.registry import strategy as strategy_spec
from waypost.route.base import Pipeline

log = logging.getLogger("waypost.evaluation.mixed")

SEED = 26
NDCG10, RECALL5, EVIDENCE1000 = "ndcg@10", "recall@5", "evidence_recall@1000"


@dataclass(frozen=True)
class SetSpec:
    """One set of the workload: its collection name, where its files are, the metric it reports, and how
    its queries split (``own_split``: it ships ``qrels/train.tsv``)."""

    name: str
    path: Path
    metric: str
    own_split: bool = False
    scope: str | None = None  # a query metadata field sent as an equality filter on the same document field
    train_sample: int | None = None  # a fixed sample of the training queries (None: all)


@dataclass(frozen=True)
class MixedQuery:
    id: str  # "<set>/<query id>": unique over the workload
    set: str
    collection: str
    text: str
    metric: str
    gold: dict[str, int]
    spans: tuple[Span, ...] = ()
    filters: Condition | None = None


@dataclass
class Workload:
    sets: list[SetSpec]
    seed: int = SEED
    _cache: dict[str, list[MixedQuery]] = field(default_factory=dict, repr=False)

    @classmethod
    def of_queries(cls, sets: list[SetSpec], train: list[MixedQuery]) -> Workload:
        """A workload of given training queries and no test split (``evaluation.feedback``)."""
        return cls(sets, _cache={"train": list(train), "test": []})

    def spec(self, name: str) -> SetSpec:
        for spec in self.sets:
            if spec.name == name:
                return spec
        raise WaypostError(f"the mixed workload has no set {name!r}")

    def queries(self, split: str, limit: int | None = None) -> list[MixedQuery]:
        """Every query of ``split`` over all sets (``limit``: at most that many per set), interleaved by a
        fixed shuffle."""
        if split not in ("train", "test"):
            raise WaypostError(f"a split is train or test, not {split!r}")
        if split not in self._cache:
            rows = [q for spec in self.sets for q in set_queries(spec, split, self.seed)]
            random.Random(self.seed).shuffle(rows)
            self._cache[split] = rows
        rows = self._cache[split]
        if limit is None:
            return list(rows)
        seen: dict[str, int] = {}
        out = []
        for q in rows:
            seen[q.set] = seen.get(q.set, 0) + 1
            if seen[q.set] <= limit:
                out.append(q)
        return out


def default_sets(data: Path, repo_data: Path) -> list[SetSpec]:
    """The six sets of the issue: ``data`` holds the shared sets, ``repo_data`` the repository's own."""
    return [
        SetSpec("scifact", data / "scifact", NDCG10, own_split=True, train_sample=300),
        SetSpec("hotpotqa-100", data / "hotpotqa-100", RECALL5),
        SetSpec("netflix", data / "netflix", NDCG10),
        SetSpec("qmsum", data / "qmsum", EVIDENCE1000, own_split=True, scope="meeting", train_sample=250),
        SetSpec("xquad-th", data / "xquad-th", NDCG10, train_sample=300),
        SetSpec("fiction-multihop", repo_data / "fiction-multihop", RECALL5),
    ]


def default_workload(data: str | Path | None = None, repo_data: str | Path | None = None) -> Workload:
    """``data`` defaults to ``../shared/data`` from the current directory; ``repo_data`` to the
    repository's ``benchmarks/data`` (found from the current directory, else from this file)."""
    data_dir = Path(data) if data is not None else Path.cwd().parent / "shared" / "data"
    if repo_data is None:
        here = Path.cwd() / "benchmarks" / "data"
        repo_data = here if here.exists() else Path(__file__).resolve().parents[3] / "benchmarks" / "data"
    return Workload(default_sets(data_dir, Path(repo_data)))


def set_queries(spec: SetSpec, split: str, seed: int = SEED) -> list[MixedQuery]:
    dataset = load_beir(spec.path, split if spec.own_split else "test")
    queries = dataset.queries if spec.own_split else [q for q in dataset.queries if query_split(q.id) == split]
    if split == "train" and spec.train_sample is not None and len(queries) > spec.train_sample:
        queries = sorted(random.Random(seed).sample(queries, spec.train_sample), key=lambda q: q.id)
    out = []
    for q in queries:
        flt = None
        if spec.scope is not None:
            if spec.scope not in q.metadata:
                raise WaypostError(f"{spec.name}: query {q.id!r} has no {spec.scope!r} to scope it")
            flt = Condition(spec.scope, Op.EQ, q.metadata[spec.scope])
        out.append(
            MixedQuery(
                f"{spec.name}/{q.id}",
                spec.name,
                spec.name,
                q.text,
                spec.metric,
                dataset.qrels.get(q.id, {}),
                tuple(dataset.spans.get(q.id, [])),
                flt,
            )
        )
    return out


def runnable(engine: Engine, collection: str, pipeline: Pipeline) -> bool:
    """Whether ``pipeline`` can run on ``collection`` without building anything or calling an LLM."""
    col = engine.collection(collection)
    for name in pipeline.strategies():
        spec = strategy_spec(name)
        if spec.needs_llm and engine.llm() is None:
            return False
        if spec.needs_tree and not col.tree().exists():
            return False
        if spec.needs_graph and not col.graph().exists():
            return False
    return True


def prepare(
    store_path: str | Path,
    workload: Workload,
    config: EngineConfig | None = None,
    pipelines: Sequence[Pipeline] | None = None,
    show_progress: bool = False,
) -> dict[str, Any]:
    """Ingest each set whose collection is missing or incomplete (a collection holding as many documents
    as the corpus is left alone), then build the trees and graphs ``pipelines`` need (all: both) where
    missing. Returns what it did."""
    specs = [strategy_spec(s) for p in pipelines for s in p.strategies()] if pipelines is not None else None
    need_tree = specs is None or any(s.needs_tree for s in specs)
    need_graph = specs is None or any(s.needs_graph for s in specs)
    engine = Engine(store_path, config or EngineConfig())
    done: dict[str, Any] = {}
    try:
        for spec in workload.sets:
            corpus: BeirDataset = load_corpus(spec.path)
            size = corpus.corpus_size()
            col = engine.collection(spec.name, create=True)
            step: dict[str, Any] = {}
            if col.info.documents != size:
                report = col.add(corpus.corpus(), show_progress=show_progress, total=size)
                step["ingested"] = size
                step["failures"] = len(report.failures)
            if need_tree and not col.tree().exists():
                col.tree().get()
                step["tree"] = "built"
            if need_graph and not col.graph().exists():
                col.graph().get(show_progress=show_progress)
                step["graph"] = "built"
            done[spec.name] = step or "ready"
            log.info("mixed set %s: %s", spec.name, done[spec.name])
    finally:
        engine.close()
    return done


def with_sets(workload: Workload, names: list[str]) -> Workload:
    """The workload restricted to the named sets (same order and seed)."""
    unknown = set(names) - {s.name for s in workload.sets}
    if unknown:
        raise WaypostError(f"the mixed workload has no set {', '.join(sorted(unknown))}")
    return replace(workload, sets=[s for s in workload.sets if s.name in names], _cache={})


def workload_from_dirs(dirs: list[str | Path], metric: str = NDCG10, scope: str | None = None) -> Workload:
    """A workload of arbitrary BEIR-layout sets (``waypost router train DATASET...``): each set is a
    collection named after its folder; sets ship a ``qrels/train.tsv`` or are split by query id."""
    sets = []
    for raw in dirs:
        path = Path(raw)
        if not (path / "qrels" / "test.tsv").exists() and not (path / "qrels" / "train.tsv").exists():
            raise WaypostError(f"{path} is not a BEIR-layout dataset (no qrels/test.tsv or qrels/train.tsv)")
        own = (path / "qrels" / "train.tsv").exists() and (path / "qrels" / "test.tsv").exists()
        spans = (path / "qrels" / "test-spans.tsv").exists()
        sets.append(SetSpec(path.name, path, EVIDENCE1000 if spans else metric, own_split=own, scope=scope))
    return Workload(sets)


def describe(workload: Workload) -> str:
    return json.dumps([{"set": s.name, "metric": s.metric, "path": str(s.path)} for s in workload.sets])


def default_store() -> Path:
    """Where ``waypost bench mixed`` keeps its store."""
    return Path.home() / ".cache" / "waypost" / "mixed" / "store"


def mixed_pool() -> list[Pipeline]:
    """The pool ``bench mixed`` trains and scores (``--pipelines`` changes it): the strategies that win on
    some set of this workload, kept to eight so a full pass fits on 2 cores. ``waypost router train``
    without ``--pipelines`` takes every registered strategy instead (``route.candidates.default_pool``)."""
    return [
        Pipeline.of("hybrid"),
        Pipeline.of("bm25"),
        Pipeline.of("dense"),
        Pipeline.of("metadata"),
        Pipeline.of("hybrid", passages={}),
        Pipeline.of("raptor-collapsed"),
        Pipeline.of("hipporag"),
        Pipeline.of("graph-local"),
    ]
