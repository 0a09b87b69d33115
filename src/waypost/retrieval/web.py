"""Web search as a strategy: a provider protocol with no default provider.

waypost is offline-first, so ``web`` stays unavailable until a provider is registered; choosing it
without one is a clear error, and nothing picks it automatically.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

from waypost.errors import WaypostError
from waypost.ingest.chunker import count_tokens
from waypost.types import Chunk, Explanation, Hit, Provenance, RetrievalResult


@dataclass(frozen=True)
class WebResult:
    url: str
    title: str
    snippet: str


class WebSearchProvider(Protocol):
    name: str

    def search(self, query: str, k: int = 10) -> list[WebResult]: ...


class WebSearchNotConfiguredError(WaypostError):
    pass


_PROVIDERS: dict[str, WebSearchProvider] = {}


def register_web_search(provider: WebSearchProvider) -> None:
    _PROVIDERS[provider.name] = provider


def web_search_provider(name: str | None = None) -> WebSearchProvider:
    if not _PROVIDERS:
        raise WebSearchNotConfiguredError(
            "web search is not configured: waypost ships no web search provider and works offline; "
            "register one with waypost.retrieval.web.register_web_search(provider)"
        )
    if name is None:
        return next(iter(_PROVIDERS.values()))
    try:
        return _PROVIDERS[name]
    except KeyError:
        raise WebSearchNotConfiguredError(f"no web search provider named {name!r}; have {sorted(_PROVIDERS)}") from None


def is_available() -> bool:
    """Routers must check this and never pick ``web`` when it is false."""
    return bool(_PROVIDERS)


class WebRetriever:
    """Wraps a provider's results as hits whose spans are the snippets themselves."""

    name = "web"

    def __init__(self, provider: WebSearchProvider) -> None:
        self.provider = provider

    def retrieve(self, query: str, k: int = 10, filters: object = None) -> RetrievalResult:
        if filters is not None:
            raise WaypostError("metadata filters do not apply to web search")
        t0 = time.perf_counter()
        results = self.provider.search(query, k)
        hits = [
            Hit(
                Chunk(r.url, 0, r.snippet, 0, len(r.snippet), count_tokens(r.snippet)),
                1.0 / rank,
                self.name,
                Provenance("web", r.title, r.url),
            )
            for rank, r in enumerate(results[:k], start=1)
        ]
        timings = {"web_search": (time.perf_counter() - t0) * 1000}
        return RetrievalResult(hits, Explanation(self.name, query, query, None, len(results), timings))
