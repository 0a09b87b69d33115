"""Training queries from the feedback users recorded on a store's own collections (``waypost feedback``),
for ``waypost router train --feedback``.

Each query with a useful hit (used, or rated above 2.5 of 5) becomes a training query of that hit's
collection; the documents of its useful hits still in the collection are its relevant documents, scored
by nDCG@10 at document level. Rejected hits say which chunk was wrong and add nothing beyond that."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from waypost.engine import Engine
from waypost.errors import InvalidInputError
from waypost.evaluation.mixed import NDCG10, MixedQuery, SetSpec, Workload

MIN_QUERIES = 10  # fewer is no basis for choosing among pipelines

__all__ = ["MIN_QUERIES", "feedback_workload"]


def feedback_workload(engine: Engine, collections: Sequence[str] = ()) -> Workload:
    """The store's feedback as a training workload: one set per collection with useful feedback (those
    named in ``collections``, or all)."""
    sets: list[SetSpec] = []
    queries: list[MixedQuery] = []
    for info in engine.collections():
        if not info.chunks or (collections and info.name not in collections):
            continue
        relevant: dict[str, dict[str, int]] = {}
        live: dict[str, bool] = {}
        for entry in engine.store.feedback(info.name):
            if not entry.useful or not entry.query.strip():
                continue
            if entry.document_id not in live:
                live[entry.document_id] = engine.store.get_document(info.name, entry.document_id) is not None
            if live[entry.document_id]:
                relevant.setdefault(entry.query, {})[entry.document_id] = 1
        if not relevant:
            continue
        sets.append(SetSpec(info.name, engine.path, NDCG10))
        for text, gold in sorted(relevant.items()):
            digest = hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]
            queries.append(MixedQuery(f"{info.name}/fb-{digest}", info.name, info.name, text, NDCG10, gold))
    if len(queries) < MIN_QUERIES:
        raise InvalidInputError(
            f"{len(queries)} queries have useful feedback in this store; training a router needs {MIN_QUERIES} "
            "at least (record it with `waypost feedback QUERY DOC#INDEX`)"
        )
    return Workload.of_queries(sets, queries)
