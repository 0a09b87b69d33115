"""How ``strategy="auto"`` routes: which selector, which trained profile, which pipelines it may pick."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from waypost.errors import WaypostError
from waypost.route.base import Pipeline

SELECTORS = ("learned", "heuristic", "embedding", "llm", "round-robin")


@dataclass
class RouterConfig:
    selector: str = "learned"  # learned (heuristic when no profile loads) | heuristic | embedding | llm | round-robin
    profile: Path | None = None  # a trained router profile (JSON); None: the one shipped with the package
    exemplars: Path | None = None  # example queries per pipeline for the embedding selector; None: shipped
    build_on_first_use: bool = False  # may pick a pipeline whose tree or graph is not built (the query builds it)
    pool: tuple[Pipeline, ...] | None = None  # the pipelines it chooses among; None: every registered strategy

    def check(self) -> None:
        if self.selector not in SELECTORS:
            raise WaypostError(f"router selector must be one of {', '.join(SELECTORS)}, not {self.selector!r}")
