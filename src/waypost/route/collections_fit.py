"""Fitting stage 1 (which collection answers a query) on labelled queries: ``waypost router train-collections``.

Each labelled query names the collection that answers it: from a JSONL file, or from the feedback users
recorded on hits (``labelled_from_feedback``), or both. The selector's signal weights are fitted by a
conditional logit (a softmax over the collections the query's filters allow, by maximum likelihood) and
the queries become the learned selector's exemplars. The result is the JSON profile that
``EngineConfig(collection_selector="learned:PATH")`` (``--collections-profile PATH``) reads."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt
from scipy.optimize import minimize

from waypost.errors import InvalidInputError, WaypostError
from waypost.filters.model import Filter, from_obj
from waypost.progress import track
from waypost.route.collections import SIGNALS, EmbeddingCollectionSelector, restrict_by_fields

if TYPE_CHECKING:
    from waypost.engine import Engine

Array = npt.NDArray[np.float64]
L2 = 1e-3  # ridge on the weights: keeps a signal that never varies from drifting
FOLDS = 5


class QueryWithFilters(Protocol):
    """What the signals and the filter mask read of a query."""

    @property
    def text(self) -> str: ...

    @property
    def filters(self) -> Filter | None: ...


@dataclass(frozen=True)
class LabelledQuery:
    text: str
    collection: str
    filters: Filter | None = None


def read_labelled(path: str | Path) -> list[LabelledQuery]:
    """JSONL, one object per line: ``{"query": TEXT, "collection": NAME}``, optionally ``"filters"`` (a filter
    as ``--where-json`` takes it). Blank lines are skipped; any other bad line is refused with its number."""
    out: list[LabelledQuery] = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise WaypostError(f"cannot read labelled queries {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{path} is not UTF-8 text (byte {exc.start})") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"{path}:{number}: not JSON ({exc.msg})") from None
        if not isinstance(raw, dict):
            raise InvalidInputError(f"{path}:{number}: expected an object with 'query' and 'collection'")
        text, name = raw.get("query"), raw.get("collection")
        if not isinstance(text, str) or not text.strip() or not isinstance(name, str) or not name:
            raise InvalidInputError(f"{path}:{number}: 'query' and 'collection' must be non-empty strings")
        try:
            flt = from_obj(raw["filters"]) if raw.get("filters") is not None else None
        except WaypostError as exc:  # a FilterError
            raise InvalidInputError(f"{path}:{number}: {exc}") from None
        out.append(LabelledQuery(text, name, flt))
    if not out:
        raise InvalidInputError(f"{path} holds no labelled query")
    return out


@dataclass
class FeedbackLabels:
    """Labelled queries read from recorded feedback, and the queries left out."""

    queries: list[LabelledQuery]
    ambiguous: list[str] = field(default_factory=list)  # found useful in two collections equally often


def labelled_from_feedback(engine: Engine) -> FeedbackLabels:
    """A label per query from the feedback users recorded (``waypost feedback``): the collection where its
    hits were used (or rated above 2.5) most often. A query with as many useful hits in two collections is
    left out; rejected hits say which chunk was wrong, not which collection, and are not counted."""
    votes: dict[str, dict[str, int]] = {}
    for info in engine.collections():
        if not info.chunks:
            continue
        for entry in engine.store.feedback(info.name):
            if entry.useful and entry.query.strip():
                counts = votes.setdefault(entry.query, {})
                counts[info.name] = counts.get(info.name, 0) + 1
    labels: list[LabelledQuery] = []
    ambiguous: list[str] = []
    for query in sorted(votes):
        ranked = sorted(votes[query].items(), key=lambda item: (-item[1], item[0]))
        if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
            ambiguous.append(query)
        else:
            labels.append(LabelledQuery(query, ranked[0][0]))
    return FeedbackLabels(labels, ambiguous)


def merge_labels(given: Sequence[LabelledQuery], learned: Sequence[LabelledQuery]) -> tuple[list[LabelledQuery], int]:
    """``given`` (a file's labels) and ``learned`` (feedback's) together; where both label a query, the file's
    label stands. Returns the labels and how many of feedback's were set aside for the file's."""
    named = {q.text for q in given}
    kept = [q for q in learned if q.text not in named]
    return [*given, *kept], len(learned) - len(kept)


def signal_tensor(
    selector: EmbeddingCollectionSelector,
    queries: Sequence[QueryWithFilters],
    names: Sequence[str],
    vectors: dict[str, dict[str, npt.NDArray[np.float32]]],
    skip_identical: bool,
    show_progress: bool = False,
) -> Array:
    """Every signal of every collection for every query: queries x collections x signals. ``vectors``:
    query text -> embedding model -> its vector (embedded once)."""
    rows = []
    for q in track(list(queries), show_progress, "collection signals"):
        found = selector.signals(q.text, names, vectors.get(q.text), skip_identical)
        rows.append([[found[n][s] for s in SIGNALS] for n in names])
    return np.asarray(rows, dtype=np.float64).reshape(len(queries), len(names), len(SIGNALS))


def allowed_mask(engine: Engine, queries: Sequence[QueryWithFilters], names: Sequence[str]) -> npt.NDArray[np.bool_]:
    """Which collections each query's filters allow (a filter on a field a collection lacks rules it out)."""
    mask = np.ones((len(queries), len(names)), dtype=bool)
    for i, q in enumerate(queries):
        allowed, _why = restrict_by_fields(engine, names, q.filters)
        mask[i] = [n in allowed for n in names]
    return mask


def fit_logit(x: Array, mask: npt.NDArray[np.bool_], gold: npt.NDArray[np.int64], l2: float = L2) -> Array:
    """Weights of a conditional logit (softmax over the allowed collections), by maximum likelihood."""

    def loss(w: Array) -> tuple[float, Array]:
        logits = np.where(mask, x @ w, -1e9)
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        n = len(gold)
        nll = -np.log(p[np.arange(n), gold] + 1e-12).mean() + l2 * float(w @ w)
        expected = (p[:, :, None] * x).sum(axis=1)
        grad = (expected - x[np.arange(n), gold]).mean(axis=0) + 2 * l2 * w
        return float(nll), grad

    return np.asarray(minimize(loss, np.ones(x.shape[2]), jac=True, method="L-BFGS-B").x, dtype=np.float64)


def top_choice(x: Array, mask: npt.NDArray[np.bool_], w: Array) -> npt.NDArray[np.int64]:
    return np.asarray(np.where(mask, x @ w, -1e9).argmax(axis=1), dtype=np.int64)


@dataclass
class CollectionFit:
    selector: EmbeddingCollectionSelector  # fitted weights, the queries as exemplars
    queries: int
    train_accuracy: float
    cv_accuracy: float | None  # weights fitted without the fold (None: too few queries to fold)
    per_collection: dict[str, dict[str, float]] = field(default_factory=dict)
    unlabelled: list[str] = field(default_factory=list)  # collections no query names: chosen on signals alone

    def summary(self) -> dict[str, Any]:
        return {
            "queries": self.queries,
            "collections": sorted(self.per_collection),
            "train_accuracy": self.train_accuracy,
            "cv_accuracy": self.cv_accuracy,
            "per_collection": self.per_collection,
            "unlabelled": self.unlabelled,
            "weights": self.selector.weights,
        }


def fit_collections(
    engine: Engine,
    queries: Sequence[LabelledQuery],
    exemplars: bool = True,
    folds: int = FOLDS,
    show_progress: bool = False,
) -> CollectionFit:
    """Fit the stage-1 weights on ``queries`` over the store's collections with chunks. With ``exemplars``
    the queries also become exemplars (each query's own exemplar signal leaves itself out)."""
    names = sorted(info.name for info in engine.collections() if info.chunks)
    unknown = sorted({q.collection for q in queries} - set(names))
    if unknown:
        raise InvalidInputError(
            f"labelled queries name collections this store has no chunks in: {unknown}; it has {names}"
        )
    if len(names) < 2:
        raise InvalidInputError("choosing a collection needs at least two collections with chunks")
    labels: dict[str, str] = {}
    for q in queries:
        if labels.setdefault(q.text, q.collection) != q.collection:
            raise InvalidInputError(f"{q.text!r} is labelled both {labels[q.text]!r} and {q.collection!r}")
    mask = allowed_mask(engine, queries, names)  # checked before the long part
    gold = np.asarray([names.index(q.collection) for q in queries], dtype=np.int64)
    if not mask[np.arange(len(gold)), gold].all():
        bad = next(q for i, q in enumerate(queries) if not mask[i, gold[i]])
        raise InvalidInputError(f"the filters of {bad.text!r} rule out its own collection {bad.collection!r}")
    groups: dict[str, list[str]] = {}
    for q in queries:
        groups.setdefault(q.collection, []).append(q.text)
    selector = EmbeddingCollectionSelector(engine, exemplars=groups if exemplars else None)
    vectors = _query_vectors(engine, queries, names, show_progress)
    x = signal_tensor(selector, queries, names, vectors, True, show_progress)
    used = [i for i, s in enumerate(SIGNALS) if exemplars or s != "exemplar"]
    w = np.zeros(len(SIGNALS))
    w[used] = fit_logit(x[:, :, used], mask, gold)
    selector.weights = {s: round(float(v), 3) for s, v in zip(SIGNALS, w, strict=True)}
    chosen = top_choice(x, mask, w)
    per: dict[str, dict[str, float]] = {}
    for name in names:
        rows = gold == names.index(name)
        if rows.any():
            per[name] = {"queries": int(rows.sum()), "accuracy": round(float(np.mean(chosen[rows] == gold[rows])), 4)}
    return CollectionFit(
        selector,
        len(queries),
        round(float(np.mean(chosen == gold)), 4),
        cross_validated_accuracy(x[:, :, used], mask, gold, folds),
        per,
        [n for n in names if n not in per],
    )


def _query_vectors(
    engine: Engine, queries: Sequence[LabelledQuery], names: Sequence[str], show_progress: bool
) -> dict[str, dict[str, npt.NDArray[np.float32]]]:
    """Every query embedded once per embedding model of the collections, as a query (as the router does)."""
    texts = sorted({q.text for q in queries})
    out: dict[str, dict[str, npt.NDArray[np.float32]]] = {t: {} for t in texts}
    for model in sorted({engine.store.collection(n).embed_model for n in names}):
        embedder = engine.embedder(model)
        for text in track(texts, show_progress, f"embedding queries ({model})"):
            out[text][model] = np.asarray(embedder.embed_query(text), dtype=np.float32)
    return out


def cross_validated_accuracy(
    x: Array, mask: npt.NDArray[np.bool_], gold: npt.NDArray[np.int64], folds: int = FOLDS
) -> float | None:
    """Top-1 accuracy with the weights fitted without each fold (None below two queries per fold). The
    signals are computed once: a held-out query stays an exemplar of its collection for the other folds'
    queries, so with exemplars the figure leans slightly optimistic."""
    n = len(gold)
    if n < 2 * folds:
        return None
    order = np.random.default_rng(0).permutation(n)
    right = 0
    for k in range(folds):
        held = order[k::folds]
        kept = np.setdiff1d(order, held)
        w = fit_logit(x[kept], mask[kept], gold[kept])
        right += int(np.sum(top_choice(x[held], mask[held], w) == gold[held]))
    return round(right / n, 4)
