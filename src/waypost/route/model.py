"""The learned gain model (a ``GainPredictor``): from a query's features, each pipeline's gain in its
set's metric over the default pipeline (hybrid). A multi-output random forest fitted with scikit-learn,
exported by hand to JSON as flat tree arrays (no pickle) and evaluated in pure numpy (all trees walked at
once, well under a millisecond). A profile may hold a second forest, the prior, that reads only the
collection's features: the gain is then the prior plus the query forest scaled by ``shrink`` (how far the
query's own features move the collection's expectation, chosen by cross-validation). A profile knows the
collections it was trained on: for a collection unlike all of them (``unfamiliar``) it does not extrapolate,
and the heuristic rules choose instead. Confidence is the predicted margin of the best pipeline over the
default (over the runner-up when the default is best), mapped by an isotonic fit on out-of-fold
training predictions to the probability that the choice is oracle-correct (ties count as correct)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from waypost.errors import WaypostError
from waypost.route.base import Choice, Features, Pipeline

FORMAT = "waypost-gain-model/2"
READABLE_FORMATS = ("waypost-gain-model/1", FORMAT)  # /1: one forest, no prior
DEFAULT_PROFILE = Path(__file__).parent / "profiles" / "default.json"  # shipped; what ``auto`` loads by default
TIE = 0.005  # predicted gains this close count as a tie, broken toward the cheaper pipeline
Array = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
FuseValue = Callable[[int, str, str], float]  # (training row, label a, label b) -> metric of their RRF


def _same(value: float) -> float:
    return value


# A collection's features (``route.features.COLLECTION_FEATURES``) on a comparable scale, and how far a
# collection may be from one the profile was trained on, on that scale, and still count as familiar.
FAMILIAR_WITHIN: dict[str, tuple[Callable[[float], float], float]] = {
    "doc_tokens_log": (_same, 0.5),  # documents up to 1.65x longer or shorter
    "chunks_per_doc": (math.log1p, 0.3),
    "metadata_fields": (math.log1p, 0.5),  # no field and one field differ; five and six do not
    "size_log": (_same, 1.0),  # up to 2.7x more or fewer chunks
}


@dataclass
class Forest:
    """Trees as flat arrays: children (-1 at a leaf), split feature and threshold, per-node output values."""

    roots: IntArray
    left: IntArray
    right: IntArray
    feature: IntArray
    threshold: Array
    values: Array  # (nodes, outputs)
    depth: int

    def predict(self, x: Array) -> Array:
        node = self.roots.copy()
        for _ in range(self.depth):
            go_left = x[self.feature[node]] <= self.threshold[node]
            nxt = np.where(go_left, self.left[node], self.right[node])
            node = np.where(nxt >= 0, nxt, node)
        out: Array = self.values[node].mean(axis=0)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "roots": self.roots.tolist(),
            "left": self.left.tolist(),
            "right": self.right.tolist(),
            "feature": self.feature.tolist(),
            "threshold": self.threshold.tolist(),  # exact: a rounded split moves queries between leaves
            "values": self.values.tolist(),
            "depth": self.depth,
        }

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Forest:
        return cls(
            np.asarray(raw["roots"], dtype=np.int64),
            np.asarray(raw["left"], dtype=np.int64),
            np.asarray(raw["right"], dtype=np.int64),
            np.asarray(raw["feature"], dtype=np.int64),
            np.asarray(raw["threshold"], dtype=np.float64),
            np.asarray(raw["values"], dtype=np.float64).reshape(len(raw["left"]), -1),
            int(raw["depth"]),
        )

    @classmethod
    def empty(cls, outputs: int) -> Forest:
        """One leaf predicting no gain."""
        zero = np.zeros(1, dtype=np.int64)
        return cls(zero, zero - 1, zero - 1, zero, np.zeros(1), np.zeros((1, outputs)), 0)

    @classmethod
    def from_sklearn(cls, estimators: Sequence[Any]) -> Forest:
        roots, left, right, feature, threshold, values = [], [], [], [], [], []
        offset, depth = 0, 0
        for est in estimators:
            tree = est.tree_
            n = tree.node_count
            roots.append(offset)
            leaf = tree.children_left == -1
            left.append(np.where(leaf, -1, tree.children_left + offset))
            right.append(np.where(leaf, -1, tree.children_right + offset))
            feature.append(np.where(leaf, 0, tree.feature))
            threshold.append(np.where(leaf, 0.0, tree.threshold))
            values.append(tree.value.reshape(n, -1))
            depth = max(depth, int(tree.max_depth))
            offset += n
        return cls(
            np.asarray(roots, dtype=np.int64),
            np.concatenate(left).astype(np.int64),
            np.concatenate(right).astype(np.int64),
            np.concatenate(feature).astype(np.int64),
            np.concatenate(threshold).astype(np.float64),
            np.concatenate(values).astype(np.float64),
            depth,
        )


@dataclass
class GainModel:
    """A trained router profile. ``pipelines`` are the candidates it knows (the default among them),
    ``costs`` their latency class (ties go to the cheaper)."""

    feature_names: list[str]
    pipelines: list[Pipeline]
    default: Pipeline
    forest: Forest  # outputs: the gain of each non-default pipeline, in ``pipelines`` order
    costs: dict[str, float]
    calibration: tuple[list[float], list[float]]  # margin -> P(oracle-correct), increasing
    threshold: float = 0.0
    low_confidence: str = "default"
    info: dict[str, Any] = field(default_factory=dict)  # how it was trained (sets, sizes, CV scores)
    prior: Forest | None = None  # gains expected from the collection's features alone
    shrink: float = 1.0  # weight of ``forest`` (the query's features) added to the prior
    familiar: dict[str, dict[str, float]] = field(default_factory=dict)  # trained collection -> its features

    @property
    def others(self) -> list[Pipeline]:
        return [p for p in self.pipelines if p != self.default]

    def vector(self, features: Features) -> Array:
        return np.asarray([float(features.get(name, 0.0)) for name in self.feature_names], dtype=np.float64)

    def predict(self, features: Features) -> dict[str, float]:
        x = np.nan_to_num(self.vector(features))
        gains = self.shrink * self.forest.predict(x)
        if self.prior is not None:
            gains = gains + self.prior.predict(x)
        out = {self.default.label: 0.0}
        out.update({p.label: float(g) for p, g in zip(self.others, gains, strict=True)})
        return out

    def unfamiliar(self, features: Features) -> str | None:
        """Why the query's collection is unlike every collection the profile was trained on; None when it is
        like one of them (or the profile does not say which it was trained on)."""
        if not self.familiar:
            return None
        nearest, closest = next(iter(self.familiar)), math.inf
        for name, trained in self.familiar.items():
            gap = 0.0
            for feature, value in trained.items():
                scale, within = FAMILIAR_WITHIN[feature]
                distance = abs(scale(float(features.get(feature, 0.0))) - scale(value)) / within
                gap = max(gap, distance if math.isfinite(distance) else math.inf)  # NaN is no match
            if gap <= 1.0:
                return None
            if gap < closest:
                nearest, closest = name, gap
        return f"the collection is unlike the {len(self.familiar)} this profile was trained on (nearest: {nearest})"

    def ranking(self, gains: Mapping[str, float], allowed: set[str] | None = None) -> list[tuple[str, float]]:
        """Labels best first; gains within ``TIE`` of the best are ordered cheapest first."""
        items = [(label, g) for label, g in gains.items() if allowed is None or label in allowed]
        if not items:
            return []
        best = max(g for _, g in items)

        def key(item: tuple[str, float]) -> tuple[int, float, float]:
            label, gain = item
            if gain >= best - TIE:
                return (0, self.costs.get(label, 1.0), -gain)
            return (1, 0.0, -gain)

        return sorted(items, key=key)

    def margin(self, gains: Mapping[str, float], allowed: set[str] | None = None) -> float:
        """How far the choice is predicted ahead: of the default when it picks another pipeline (what the
        low-confidence fallback gives up), of the runner-up when it picks the default."""
        ranked = self.ranking(gains, allowed)
        if len(ranked) < 2:
            return 1.0
        top_label, top = ranked[0]
        if top_label != self.default.label and self.default.label in dict(ranked):
            return max(0.0, top)
        return max(0.0, top - max(g for _, g in ranked[1:]))

    def confidence(self, gains: Mapping[str, float], allowed: set[str] | None = None) -> float:
        xs, ys = self.calibration
        return float(np.interp(self.margin(gains, allowed), xs, ys))

    def choose(self, features: Features, candidates: Sequence[Pipeline]) -> Choice:
        """The pipeline for a query among ``candidates`` (those it knows; the default if none), with the
        low-confidence policy applied."""
        why = self.unfamiliar(features)
        if why is not None:
            from waypost.route.selectors.heuristic import heuristic_instead

            return heuristic_instead("learned", why, "", features, candidates)
        by_label = {p.label: p for p in candidates}
        gains = self.predict(features)
        allowed = set(by_label) & set(gains)
        ranked = self.ranking(gains, allowed)
        if not ranked:
            return Choice(self.default, 0.0, "no candidate the model knows; the default", "learned")
        conf = self.confidence(gains, allowed)
        scores = [(by_label[label], g) for label, g in ranked]
        top = by_label[ranked[0][0]]
        reason = f"predicted gain {ranked[0][1]:+.3f} over {self.default.label}"
        if conf < self.threshold and top != self.default:
            if self.low_confidence == "fuse" and len(ranked) > 1:
                fused = Pipeline.fusion([top, by_label[ranked[1][0]]])
                return Choice(
                    fused,
                    conf,
                    f"{reason}; confidence {conf:.2f} < {self.threshold:.2f}: fuse the top two",
                    "learned",
                    scores,
                )
            if self.default.label in by_label:
                return Choice(
                    self.default,
                    conf,
                    f"{reason}; confidence {conf:.2f} < {self.threshold:.2f}: the default",
                    "learned",
                    scores,
                )
        return Choice(top, conf, reason, "learned", scores)

    # -- JSON ---------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "feature_names": self.feature_names,
            "pipelines": [p.to_dict() for p in self.pipelines],
            "default": self.default.to_dict(),
            "costs": self.costs,
            "calibration": [list(self.calibration[0]), list(self.calibration[1])],
            "threshold": self.threshold,
            "low_confidence": self.low_confidence,
            "info": self.info,
            "forest": self.forest.to_dict(),
            "shrink": self.shrink,
            "familiar": self.familiar,
            "prior": None if self.prior is None else self.prior.to_dict(),
        }

    def to_json(self, path: str | Path | None = None) -> str:
        text = json.dumps(self.to_dict(), separators=(",", ":"))
        if path is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(text, encoding="utf-8")
        return text

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> GainModel:
        if not isinstance(raw, Mapping):
            raise WaypostError(f"not a waypost router profile (a JSON {type(raw).__name__}, not an object)")
        if raw.get("format") not in READABLE_FORMATS:
            expected = " or ".join(map(repr, READABLE_FORMATS))
            raise WaypostError(f"not a waypost router profile (format {raw.get('format')!r}, expected {expected})")
        prior = raw.get("prior")
        try:
            familiar = {
                str(n): {str(k): float(v) for k, v in f.items() if k in FAMILIAR_WITHIN}
                for n, f in (raw.get("familiar") or {}).items()
            }
        except (AttributeError, TypeError, ValueError):
            raise WaypostError("a router profile's 'familiar' maps collections to their features") from None
        if any(not features for features in familiar.values()):  # an empty entry would match every collection
            raise WaypostError("a router profile's 'familiar' entry names no collection feature this version reads")
        try:
            xs, ys = raw["calibration"]
            return cls(
                list(raw["feature_names"]),
                [Pipeline.from_dict(p) for p in raw["pipelines"]],
                Pipeline.from_dict(raw["default"]),
                Forest.from_dict(raw["forest"]),
                {str(k): float(v) for k, v in raw["costs"].items()},
                ([float(x) for x in xs], [float(y) for y in ys]),
                float(raw["threshold"]),
                str(raw["low_confidence"]),
                dict(raw.get("info") or {}),
                None if prior is None else Forest.from_dict(prior),
                float(raw.get("shrink", 1.0)),
                familiar,
            )
        except KeyError as exc:
            raise WaypostError(f"a router profile needs {exc.args[0]!r}") from None
        except (AttributeError, TypeError, ValueError, IndexError) as exc:
            raise WaypostError(f"a router profile holds a malformed value: {exc}") from None

    @classmethod
    def load(cls, path: str | Path) -> GainModel:
        try:
            raw = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise WaypostError(f"cannot read router profile {path}: {exc}") from None
        try:
            return cls.from_dict(raw)
        except WaypostError as exc:
            raise WaypostError(f"{path}: {exc}") from None


def default_model() -> GainModel | None:
    """The profile shipped with the package (``route/profiles/default.json``), or ``None`` without one."""
    return GainModel.load(DEFAULT_PROFILE) if DEFAULT_PROFILE.exists() else None
