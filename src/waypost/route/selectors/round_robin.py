"""Round-robin over the runnable pipelines: a control for benchmarks, never a default."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Sequence

from waypost.route.base import Choice, Features, Pipeline


class RoundRobinSelector:
    name = "round-robin"

    def __init__(self) -> None:
        self._counter = itertools.count()
        self._lock = threading.Lock()

    def select(self, query: str, features: Features, candidates: Sequence[Pipeline]) -> Choice:
        if not candidates:
            from waypost.errors import WaypostError

            raise WaypostError("no runnable pipeline to choose from")
        with self._lock:
            turn = next(self._counter)
        chosen = candidates[turn % len(candidates)]
        ranking = [(candidates[(turn + i) % len(candidates)], 0.0) for i in range(len(candidates))]
        confidence = 1.0 / len(candidates)
        return Choice(chosen, confidence, f"turn {turn}: each runnable pipeline in order", self.name, ranking)
