"""Per-query accounting: stage latencies, LLM calls, tokens and estimated cost."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from waypost.llm.base import Completion

KEPT_FALLBACKS = 100  # reasons an accumulator that lives as long as a tree or graph keeps (every one is logged)

logger = logging.getLogger("waypost.llm")

# USD per million tokens (prompt, completion). Local models cost nothing; extend or override per deployment.
DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
}


@dataclass
class PriceTable:
    prices: dict[str, tuple[float, float]] = field(default_factory=lambda: dict(DEFAULT_PRICES))

    def price(self, model: str) -> tuple[float, float] | None:
        """Exact name first, else the longest known prefix (``gpt-4o-2024-08-06`` prices as ``gpt-4o``)."""
        name = model.split(":", 1)[-1]
        if name in self.prices:
            return self.prices[name]
        prefixes = [p for p in self.prices if name.startswith(p)]
        return self.prices[max(prefixes, key=len)] if prefixes else None

    def cost(self, model: str, prompt_tokens: int, completion_tokens: int) -> float:
        prompt, completion = self.price(model) or (0.0, 0.0)
        return (prompt_tokens * prompt + completion_tokens * completion) / 1_000_000


@dataclass
class QueryMetadata:
    strategy: str
    timings_ms: dict[str, float] = field(default_factory=dict)
    llm_calls: int = 0
    llm_cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    fallbacks: list[str] = field(default_factory=list)

    def add_fallback(self, reason: str, keep: int = KEPT_FALLBACKS) -> None:
        """A fallback in background work (tree summaries, graph extraction and reports), whose accounting
        lives as long as the tree or graph: logged as a warning, and only the most recent ``keep`` kept."""
        logger.warning("%s: %s", self.strategy, reason)
        self.fallbacks.append(reason)
        if len(self.fallbacks) > keep:
            del self.fallbacks[: len(self.fallbacks) - keep]

    def record(self, completion: Completion, prices: PriceTable) -> None:
        self.llm_calls += 1
        self.llm_cache_hits += int(completion.cached)
        if not completion.cached:
            self.prompt_tokens += completion.prompt_tokens
            self.completion_tokens += completion.completion_tokens
            self.cost_usd += prices.cost(completion.model, completion.prompt_tokens, completion.completion_tokens)

    @property
    def total_ms(self) -> float:
        return sum(self.timings_ms.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "timings_ms": {k: round(v, 3) for k, v in self.timings_ms.items()},
            "total_ms": round(self.total_ms, 3),
            "llm_calls": self.llm_calls,
            "llm_cache_hits": self.llm_cache_hits,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": round(self.cost_usd, 6),
            "fallbacks": self.fallbacks,
        }
