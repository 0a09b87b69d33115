"""``waypost eval``: ingest a BEIR corpus once (cached), run every test query, report metrics."""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from waypost.base import version_incarnation
from waypost.engine import Collection, Engine, EngineConfig
from waypost.errors import WaypostError
from waypost.evaluation.beir import BeirDataset, Query, Span, load_beir
from waypost.evaluation.metrics import (
    evidence_at_budget,
    ndcg_at,
    percentile,
    precision_at,
    recall_at,
    reciprocal_rank,
)
from waypost.filters.catalog import FieldCatalog
from waypost.filters.model import Condition, Op
from waypost.post.passages import PassageConfig
from waypost.progress import track
from waypost.retrieval.registry import strategy as strategy_spec
from waypost.route.base import AUTO
from waypost.store.backend import database_label
from waypost.types import Hit

COLLECTION = "corpus"


def default_cache_dir() -> Path:
    return Path.home() / ".cache" / "waypost"


BUDGETS = (500, 1000, 2000)  # context budgets (tokens) for evidence recall and precision
SPAN_DEPTH = 60  # chunks retrieved per query for span metrics: more text than the largest budget


@dataclass
class EvalReport:
    dataset: str
    strategy: str
    metrics: dict[str, float]
    ingest: dict[str, Any] = field(default_factory=dict)
    failures: list[dict[str, Any]] = field(default_factory=list)
    by: dict[str, dict[str, float]] = field(default_factory=dict)  # metrics per value of a query field

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"dataset": self.dataset, "strategy": self.strategy, **self.metrics}
        if self.by:
            out["by"] = self.by
        return out


def scope_filter(query: Query, scope: str | None) -> Condition | None:
    """With ``--scope FIELD``: only documents whose FIELD equals the query's own FIELD."""
    if scope is None:
        return None
    if scope not in query.metadata:
        raise WaypostError(f"--scope {scope}: query {query.id!r} has no metadata field {scope!r}")
    return Condition(scope, Op.EQ, query.metadata[scope])


def evidence_metrics(hits: list[Hit], gold: list[Span]) -> dict[str, float]:
    """Evidence recall and precision at each context budget (see ``metrics.evidence_at_budget``)."""
    returned = [(h.chunk.document_id, h.chunk.start, h.chunk.end, max(1, h.chunk.token_count)) for h in hits]
    out: dict[str, float] = {}
    for budget in BUDGETS:
        recall, precision = evidence_at_budget(returned, gold, budget)
        out[f"evidence_recall@{budget}"] = recall
        out[f"evidence_precision@{budget}"] = precision
    return out


def _eval_name(dataset: BeirDataset, config: EngineConfig) -> str:
    model = re.sub(r"[^\w.-]+", "_", config.embed_model or "default")
    return f"{dataset.name}-{dataset.fingerprint()}-{model}-t{config.chunk_tokens}"


def eval_store_dir(dataset: BeirDataset, config: EngineConfig, cache_dir: Path) -> Path:
    """The embedded store of this corpus and config; with ``config.store`` (PostgreSQL), the local working
    directory beside it, one per database."""
    name = _eval_name(dataset, config)
    if config.store is not None:
        name += "-pg-" + hashlib.sha256(database_label(config.store).encode("utf-8")).hexdigest()[:12]
    return cache_dir / "eval" / name


def eval_collection(dataset: BeirDataset, config: EngineConfig) -> str:
    """``corpus`` in the corpus's own embedded store; in a database, which every corpus and config evaluated
    on it shares, a collection named after them."""
    if config.store is None:
        return COLLECTION
    name = _eval_name(dataset, config)
    return name if len(name) <= 128 else f"{name[:100]}-{hashlib.sha256(name.encode()).hexdigest()[:16]}"


def prepare(dataset: BeirDataset, engine: Engine, show_progress: bool) -> tuple[Collection, dict[str, Any]]:
    """The ingested corpus; a marker file makes a second run skip straight to querying (in a database's
    working directory, only for the collection it was written for: the database may be a new one)."""
    name = eval_collection(dataset, engine.config)
    collection = engine.collection(name, create=True)
    incarnation = "" if engine.config.store is None else "-" + version_incarnation(engine.store.version(name))
    marker = engine.path / f"ingested-{dataset.fingerprint()}{incarnation}.json"
    if marker.exists():
        return collection, json.loads(marker.read_text())
    report = collection.add(dataset.corpus(), show_progress=show_progress, total=dataset.corpus_size())
    summary = report.to_dict()
    summary["failed"] = len(report.failures)
    marker.write_text(json.dumps(summary))
    return collection, summary


def ranked_documents(
    collection: Collection,
    query: str,
    strategy: str,
    depth: int,
    filters: Condition | None = None,
    params: Mapping[str, object] | None = None,
    passages: PassageConfig | None = None,
    rerank: str | None = None,
) -> list[str]:
    """The top ``depth`` distinct documents; asks for more chunks while long documents crowd the list."""
    chunks = depth * 3
    while True:
        result = collection.retrieve(
            query, strategy, k=chunks, filters=filters, params=params, passages=passages, rerank=rerank
        )
        ranked = result.document_ids()
        if len(ranked) >= depth or len(result.hits) < chunks:
            return ranked[:depth]
        chunks *= 2


def run_eval(
    dataset_dir: str | Path,
    strategy: str,
    k: int = 100,
    config: EngineConfig | None = None,
    cache_dir: Path | None = None,
    split: str = "test",
    show_progress: bool = False,
    limit: int | None = None,
    answer: bool = False,
    scope: str | None = None,
    by: str | None = None,
    params: Mapping[str, object] | None = None,
    passages: PassageConfig | None = None,
    rerank: str | None = None,
) -> EvalReport:
    """``scope``: restrict each query to documents whose metadata field equals the query's; ``by``:
    also report every metric per value of a query metadata field."""
    if limit is not None and limit < 1:
        raise WaypostError(f"limit must be at least 1 query, got {limit}")
    dataset = load_beir(dataset_dir, split)
    queries = dataset.queries[:limit] if limit is not None else dataset.queries
    if answer:
        check_gold_answers(queries)  # before any ingest or search
    config = config or EngineConfig()
    cache_dir = cache_dir or default_cache_dir()
    if config.embed_cache is None:
        config.embed_cache = cache_dir / "embedding-cache.sqlite"
    engine = Engine(eval_store_dir(dataset, config, cache_dir), config)
    try:
        collection, ingest = prepare(dataset, engine, show_progress)
        depth = max(k, 100)
        # build indexes (and a tree or a graph, for the strategies that use one), load the model
        if strategy not in ("web", AUTO) and strategy_spec(strategy).needs_graph:  # auto picks only what is built
            collection.graph().get(show_progress=show_progress)
        collection.retrieve(queries[0].text if queries else "warm up", strategy, k=10, params=params, rerank=rerank)
        per_query: dict[str, list[float]] = {}
        groups: dict[str, dict[str, list[float]]] = {}
        latencies: list[float] = []
        filter_hits: list[bool] = []
        # Filter accuracy belongs to the strategy that extracts filters.
        wants_filters = strategy == "metadata" and any("constraints" in q.metadata for q in queries)
        extractor = collection.query_filter_extractor() if wants_filters else None
        failures: list[dict[str, Any]] = []
        for q in track(queries, show_progress, f"{strategy} queries"):
            flt = scope_filter(q, scope)
            t0 = time.perf_counter()
            ranked = ranked_documents(collection, q.text, strategy, depth, flt, params, passages, rerank)
            latencies.append((time.perf_counter() - t0) * 1000.0)
            gold = dataset.qrels.get(q.id, {})
            scores = {
                "ndcg@10": ndcg_at(ranked, gold, 10),
                "recall@2": recall_at(ranked, gold, 2),
                "recall@5": recall_at(ranked, gold, 5),
                "recall@10": recall_at(ranked, gold, 10),
                "recall@100": recall_at(ranked, gold, 100),
                f"recall@{k}": recall_at(ranked, gold, k),
                "mrr": reciprocal_rank(ranked, gold),
                "p@10": precision_at(ranked, gold, 10),
            }
            if dataset.spans:
                hits = collection.retrieve(
                    q.text, strategy, k=SPAN_DEPTH, filters=flt, params=params, passages=passages, rerank=rerank
                ).hits
                scores.update(evidence_metrics(hits, dataset.spans.get(q.id, [])))
            for name, value in scores.items():
                per_query.setdefault(name, []).append(value)
                if by is not None:
                    group = str(q.metadata.get(by, "(none)"))
                    groups.setdefault(group, {}).setdefault(name, []).append(value)
            if extractor is not None and "constraints" in q.metadata:
                predicted = canonical_conditions(extractor.extract(q.text).conditions)
                expected = canonical_constraints(q.metadata["constraints"], collection.extractor().index)
                filter_hits.append(predicted == expected)
                if predicted != expected:
                    failures.append(
                        {
                            "query": q.text,
                            "expected": sorted(map(str, expected.items())),
                            "predicted": sorted(map(str, predicted.items())),
                        }
                    )
        metrics = {name: round(sum(v) / len(v), 4) for name, v in per_query.items()}
        by_value = {
            group: {
                **{n: round(sum(v) / len(v), 4) for n, v in table.items()},
                "queries": len(next(iter(table.values()))),
            }
            for group, table in sorted(groups.items())
        }
        metrics["latency_p50_ms"] = round(percentile(latencies, 0.5), 2)
        metrics["latency_p95_ms"] = round(percentile(latencies, 0.95), 2)
        metrics["queries"] = len(queries)
        if answer:
            metrics.update(answer_metrics(collection, queries, strategy, show_progress=show_progress))
        if filter_hits:
            metrics["filter_accuracy"] = round(sum(filter_hits) / len(filter_hits), 4)
        if scope is not None:
            metrics["scope"] = scope  # type: ignore[assignment]
        if rerank:
            metrics["rerank"] = rerank  # type: ignore[assignment]
        if params:
            metrics["params"] = ",".join(f"{k}={v}" for k, v in sorted(params.items()))  # type: ignore[assignment]
        return EvalReport(dataset.name, strategy, metrics, ingest, failures, by_value)
    finally:
        engine.close()


# -- answers ------------------------------------------------------------------------------------
def _normal(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def check_gold_answers(queries: list[Query]) -> None:
    if not any(isinstance(q.metadata.get("answer"), str) and q.metadata["answer"].strip() for q in queries):
        raise WaypostError(
            f"answer metrics need each query's gold answer in metadata.answer; none of the {len(queries)} "
            "queries has one"
        )


def answer_metrics(
    collection: Collection, queries: list[Query], strategy: str, k: int = 5, show_progress: bool = False
) -> dict[str, float]:
    """answer_recall: share of questions whose gold answer is in the answer or in a cited passage;
    answer_text_recall counts only the answer text and the cited spans; answer_supported is the share
    of answers that claim support (``check_gold_answers`` first: a set without gold answers is refused)."""
    found: list[bool] = []  # the definition: in the answer or in a passage it cites
    in_answer: list[bool] = []  # stricter: in the answer text or the cited spans themselves
    supported = 0
    latencies: list[float] = []
    calls = cache_hits = prompt = completion = 0
    cost = 0.0
    fallbacks = 0
    for q in track(queries, show_progress, "answers"):
        gold = q.metadata.get("answer")
        if not isinstance(gold, str) or not gold.strip():
            continue
        t0 = time.perf_counter()
        ans = collection.answer(q.text, strategy, k)
        latencies.append((time.perf_counter() - t0) * 1000)
        passages = [
            h.chunk.text
            for h in ans.hits
            if any(
                c.document_id == h.document_id and h.chunk.start <= c.start and c.end <= h.chunk.end
                for c in ans.citations
            )
        ]
        needle = f" {_normal(gold)} "
        found.append(needle in " " + " ".join(_normal(t) for t in [ans.text, *passages]) + " ")
        in_answer.append(
            needle in " " + " ".join(_normal(t) for t in [ans.text, *(c.text for c in ans.citations)]) + " "
        )
        supported += ans.supported
        meta = ans.metadata
        calls += meta.llm_calls
        cache_hits += meta.llm_cache_hits
        prompt += meta.prompt_tokens
        completion += meta.completion_tokens
        cost += meta.cost_usd
        fallbacks += bool(meta.fallbacks)
    n = max(1, len(found))
    return {
        "answer_recall": round(sum(found) / n, 4),
        "answer_text_recall": round(sum(in_answer) / n, 4),
        "answer_supported": round(supported / n, 4),
        "answer_questions": len(found),
        "answer_latency_p50_ms": round(percentile(latencies, 0.5), 2),
        "answer_latency_p95_ms": round(percentile(latencies, 0.95), 2),
        "answer_llm_calls": calls,
        "answer_llm_cache_hits": cache_hits,
        "answer_prompt_tokens": prompt,
        "answer_completion_tokens": completion,
        "answer_cost_usd": round(cost, 6),
        "answer_fallbacks": fallbacks,
    }


# -- filter accuracy ------------------------------------------------------------------------------
Canonical = dict[tuple[str, str], Any]


def canonical_conditions(conds: list[Condition]) -> Canonical:
    """Extracted conditions as {(field, eq|min|max): value}, integer bounds made inclusive."""
    out: Canonical = {}
    for c in conds:
        v = c.value
        if c.op is Op.EQ and isinstance(v, str):
            out[(c.field, "eq")] = v.casefold()
        elif c.op is Op.EQ:
            out[(c.field, "min")] = out[(c.field, "max")] = v
        elif c.op in (Op.GT, Op.GTE):
            out[(c.field, "min")] = v + 1 if c.op is Op.GT and isinstance(v, int) else v
        elif c.op in (Op.LT, Op.LTE):
            out[(c.field, "max")] = v - 1 if c.op is Op.LT and isinstance(v, int) else v
        elif c.op is Op.IN:
            out[(c.field, "in")] = sorted(str(x).casefold() for x in v)
        elif c.op.negated:
            out[(c.field, "not")] = sorted(str(x).casefold() for x in (v if isinstance(v, list) else [v]))
    return out


def _resolve_field(word: str, index: FieldCatalog) -> str:
    """Map a constraint key's word (``year``, ``country``, ``minutes``) onto a metadata field name."""
    fields = index.fields
    word = word.lower()
    stems = {word, word + "s", word[:-1] + "ies" if word.endswith("y") else word, word.rstrip("s")}
    for f in fields:
        if f.lower() in stems:
            return f
    for f in fields:
        if any(part in stems for part in re.split(r"[_\W]+", f.lower())):
            return f
    return word


def canonical_constraints(constraints: dict[str, Any], index: FieldCatalog) -> Canonical:
    """Gold constraints such as ``{"year_min": 2016, "country": "India"}`` in the same canonical form.

    ``topic`` is the semantic remainder of a query, not a filter, so it is left out.
    """
    out: Canonical = {}
    for key, value in constraints.items():
        if key == "topic":
            continue
        m = re.match(r"^(?:(min|max)_(\w+)|(\w+?)_(min|max))$", key)
        if m:
            bound = m.group(1) or m.group(4)
            word = m.group(2) or m.group(3)
            out[(_resolve_field(word, index), bound)] = value
        else:
            out[(_resolve_field(key, index), "eq")] = str(value).casefold()
    return out
