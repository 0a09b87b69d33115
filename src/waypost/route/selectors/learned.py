"""The learned selector: a trained gain model (``route.base.GainPredictor``, a JSON profile) predicts each
pipeline's gain over the default; the best runnable one wins, near-ties going to the cheaper; below the
model's confidence threshold its low-confidence policy applies (the default, or the top two fused). On a
collection unlike every one the profile was trained on, the heuristic rules choose instead."""

from __future__ import annotations

from collections.abc import Sequence

from waypost.route.base import Choice, Features, GainPredictor, Pipeline
from waypost.route.candidates import pipeline_cost
from waypost.route.selectors.common import fallback
from waypost.route.selectors.heuristic import heuristic_instead

TIE_EPSILON = 0.005  # predicted gains this close count as equal (metric points in [0, 1])


class LearnedSelector:
    name = "learned"

    def __init__(self, model: GainPredictor, epsilon: float = TIE_EPSILON) -> None:
        self.model = model
        self.epsilon = epsilon

    def select(self, query: str, features: Features, candidates: Sequence[Pipeline]) -> Choice:
        why = self.model.unfamiliar(features)
        if why is not None:  # the profile never saw a collection like this one: it does not extrapolate
            return heuristic_instead(self.name, why, query, features, candidates)
        predicted = self.model.predict(features)
        default_label = self.model.default.label
        gains = {p: predicted.get(p.label, 0.0 if p.label == default_label else None) for p in candidates}
        known = {p: g for p, g in gains.items() if g is not None}
        if not known:
            chosen = self.model.default if self.model.default in candidates else fallback(candidates)
            return Choice(chosen, 0.0, "the profile knows none of the runnable pipelines: the default", self.name)
        ranking = self._rank(known)
        confidence = float(self.model.confidence({p.label: g for p, g in known.items()}))
        best, gain = ranking[0]
        reason = f"predicted gain {gain:+.3f} over {default_label}"
        if len(ranking) > 1:
            reason += f" (next {ranking[1][0].label} {ranking[1][1]:+.3f})"
        if confidence >= self.model.threshold or best == self.model.default:
            return Choice(best, confidence, reason, self.name, ranking)
        below = f"confidence {confidence:.2f} below {self.model.threshold:.2f}"
        if self.model.low_confidence == "fuse" and len(ranking) > 1:
            fused = Pipeline.fusion([best, ranking[1][0]])
            return Choice(fused, confidence, f"{reason}; {below}: the top two fused", self.name, ranking)
        default = self.model.default if self.model.default in candidates else fallback(candidates)
        return Choice(default, confidence, f"{reason}; {below}: the reliability default", self.name, ranking)

    def _rank(self, gains: dict[Pipeline, float]) -> list[tuple[Pipeline, float]]:
        """Best gain first; within ``epsilon`` of a better one, the cheaper pipeline goes first."""
        order = sorted(gains.items(), key=lambda item: (-item[1], pipeline_cost(item[0])))
        out: list[tuple[Pipeline, float]] = []
        while order:
            top = order[0][1]
            tied = [item for item in order if item[1] >= top - self.epsilon]
            tied.sort(key=lambda item: (pipeline_cost(item[0]), -item[1]))
            out.append(tied[0])
            order.remove(tied[0])
        return out
