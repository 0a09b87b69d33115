"""``waypost rerank train DATASET``: training queries from a BEIR-layout set's training split (its qrels,
and its gold spans where it has them), candidates from the same cached eval store ``waypost eval`` uses."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from waypost.engine import Collection, Engine, EngineConfig
from waypost.evaluation.beir import load_beir
from waypost.evaluation.runner import default_cache_dir, eval_store_dir, prepare, scope_filter
from waypost.post.rerank.profile import RerankProfile
from waypost.post.rerank.train import TrainingGroup, TrainingQuery, feedback_queries, fit_profile, training_group
from waypost.progress import track
from waypost.retrieval.registry import make_retriever


def collect_groups(
    collection: Collection,
    queries: Sequence[TrainingQuery],
    strategy: str = "hybrid",
    depth: int = 30,
    params: dict[str, object] | None = None,
    show_progress: bool = False,
) -> list[TrainingGroup]:
    """Candidates, features and labels of every query that has both a relevant and a less relevant one."""
    groups: list[TrainingGroup] = []
    for q in track(queries, show_progress, "rerank training queries"):
        ctx = collection.context()
        result = make_retriever(strategy, ctx, collection.engine.config.fusion, params).retrieve(
            q.text, depth, q.filters
        )
        group = training_group(ctx, q, result.hits)
        if group is not None:
            groups.append(group)
    return groups


def dataset_groups(
    dataset_dir: str | Path,
    split: str = "train",
    config: EngineConfig | None = None,
    cache_dir: Path | None = None,
    scope: str | None = None,
    strategy: str = "hybrid",
    depth: int = 30,
    limit: int | None = None,
    show_progress: bool = False,
) -> list[TrainingGroup]:
    dataset = load_beir(dataset_dir, split)
    config = config or EngineConfig()
    cache_dir = cache_dir or default_cache_dir()
    if config.embed_cache is None:
        config.embed_cache = cache_dir / "embedding-cache.sqlite"
    with Engine(eval_store_dir(dataset, config, cache_dir), config) as engine:
        collection, _ingest = prepare(dataset, engine, show_progress)
        queries = [
            TrainingQuery(
                q.text,
                scope_filter(q, scope),
                {d: float(g) for d, g in dataset.qrels.get(q.id, {}).items() if g > 0},
                list(dataset.spans.get(q.id, [])),
            )
            for q in (dataset.queries[:limit] if limit else dataset.queries)
        ]
        return collect_groups(collection, queries, strategy, depth, show_progress=show_progress)


def train_profile(
    name: str,
    dataset_dir: str | Path | None = None,
    split: str = "train",
    config: EngineConfig | None = None,
    cache_dir: Path | None = None,
    scope: str | None = None,
    strategy: str = "hybrid",
    depth: int = 30,
    limit: int | None = None,
    feedback_store: Path | None = None,
    feedback_collection: str = "default",
    show_progress: bool = False,
) -> RerankProfile:
    """A profile fitted to a dataset's training split, to a store's recorded feedback, or to both."""
    groups: list[TrainingGroup] = []
    sources: list[str] = []
    if dataset_dir is not None:
        groups += dataset_groups(dataset_dir, split, config, cache_dir, scope, strategy, depth, limit, show_progress)
        sources.append(f"{Path(dataset_dir).name} {split} qrels")
    if feedback_store is not None:
        with Engine(feedback_store, EngineConfig(embed_model=config.embed_model if config else None)) as engine:
            collection = engine.collection(feedback_collection)
            entries = engine.store.feedback(feedback_collection)
            groups += collect_groups(
                collection, feedback_queries(entries), strategy, depth, show_progress=show_progress
            )
            sources.append(f"{len(entries)} feedback entries of {feedback_store}:{feedback_collection}")
    return fit_profile(groups, name, " + ".join(sources) + f" ({strategy}, depth {depth})")
