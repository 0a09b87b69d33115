"""How ``strategy="auto"`` routes: which selector, which trained profile, which pipelines it may pick."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from waypost.errors import WaypostError
from waypost.route.base import Pipeline

SELECTORS = ("learned", "heuristic", "embedding", "llm", "round-robin")
PLANNERS = ("none", "rules", "llm")


@dataclass
class RouterConfig:
    selector: str = "learned"  # learned (heuristic when no profile loads) | heuristic | embedding | llm | round-robin
    profile: Path | None = None  # a trained router profile (JSON); None: the one shipped with the package
    exemplars: Path | None = None  # example queries per pipeline for the embedding selector; None: shipped
    build_on_first_use: bool = False  # may pick a pipeline whose tree or graph is not built (the query builds it)
    pool: tuple[Pipeline, ...] | None = None  # the pipelines it chooses among; None: every registered strategy
    planner: str = "rules"  # none | rules (multi-part questions become sub-queries) | llm (rules as fallback)
    corrective: bool = True  # grade each result and retry a poor one (route/corrective.py)
    corrective_profile: Path | None = None  # the quality model's JSON; None: the one shipped
    max_retries: int = 2
    # grade and retry only choices the selector is unsure of (and any empty result, however sure). On the mixed
    # workload's training split, grading the learned router's choices below 0.8 kept 230 retries that lost 9.2
    # points in all (qmsum above all: the grade prefers hybrid's chunks to raptor-collapsed's, which hold more
    # evidence in 1,000 tokens); a confident metadata pick returns few filtered hits, which the grade reads as
    # poor. 0.5: only coin-flip choices.
    correct_below: float = 0.5

    def check(self) -> None:
        if self.selector not in SELECTORS:
            raise WaypostError(f"router selector must be one of {', '.join(SELECTORS)}, not {self.selector!r}")
        if self.planner not in PLANNERS:
            raise WaypostError(f"router planner must be one of {', '.join(PLANNERS)}, not {self.planner!r}")
        if not 0.0 <= self.correct_below <= 1.01:
            raise WaypostError(f"router correct_below is a confidence in [0, 1], not {self.correct_below!r}")
        if self.max_retries < 0:
            raise WaypostError("router max_retries must be zero or more")
