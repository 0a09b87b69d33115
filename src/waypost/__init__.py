"""waypost: a local-first adaptive retrieval engine."""

from waypost.engine import Collection, Engine, EngineConfig, open_store
from waypost.errors import WaypostError
from waypost.filters.model import And, Condition, Op, Or
from waypost.types import Chunk, Document, Hit, RetrievalResult

__all__ = [
    "And",
    "Chunk",
    "Collection",
    "Condition",
    "Document",
    "Engine",
    "EngineConfig",
    "Hit",
    "Op",
    "Or",
    "RetrievalResult",
    "WaypostError",
    "open_store",
]
__version__ = "0.1.0"
