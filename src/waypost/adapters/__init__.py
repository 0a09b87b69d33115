"""Framework adapters (extras): ``WaypostRetriever`` for LangChain (``waypost[langchain]``) and
``WaypostLlamaRetriever`` for LlamaIndex (``waypost[llamaindex]``). Each works over a local store or a server.
The frameworks are imported only when their adapter is first asked for."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from waypost.adapters.source import LocalSource, RemoteSource, Source, SourceHit, as_source

if TYPE_CHECKING:
    from waypost.adapters.langchain import WaypostRetriever
    from waypost.adapters.llamaindex import WaypostLlamaRetriever

LAZY = {
    "WaypostRetriever": "waypost.adapters.langchain",
    "WaypostLlamaRetriever": "waypost.adapters.llamaindex",
}

__all__ = [
    "LocalSource",
    "RemoteSource",
    "Source",
    "SourceHit",
    "WaypostLlamaRetriever",
    "WaypostRetriever",
    "as_source",
]


def __getattr__(name: str) -> Any:
    if name in LAZY:
        return getattr(import_module(LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
