"""A small invented corpus for the router's tests: a few long reports, short notes with metadata, and
facts about invented people (entities for multi-hop questions)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from waypost.base import Embedder
from waypost.engine import Engine, EngineConfig
from waypost.route.base import Choice, Features, Pipeline
from waypost.types import Document

REPORT = " ".join(
    f"In session {i} the council of Varnholt discussed the harbour budget, the ferry timetable and the "
    f"new library wing; member Odile Brask argued for repairs while Tomas Vell asked for a vote."
    for i in range(1, 13)
)
DOCS = [
    Document("report-1", REPORT, "Varnholt council minutes", metadata={"kind": "minutes", "year": 2019}),
    Document(
        "brask",
        "Odile Brask was born in Lunmark in 1961 and trained as a marine engineer before joining the council.",
        "Odile Brask",
        metadata={"kind": "biography", "year": 2020},
    ),
    Document(
        "vell",
        "Tomas Vell was born in Harrow Bay in 1974; he ran the ferry company for twenty years.",
        "Tomas Vell",
        metadata={"kind": "biography", "year": 2021},
    ),
    Document(
        "lunmark",
        "Lunmark is a fishing town on the northern coast, known for its lighthouse and its salt works.",
        "Lunmark",
        metadata={"kind": "place", "year": 2018},
    ),
    Document(
        "recipe",
        "Slow-cooked barley soup: simmer pearl barley with leeks, carrots and thyme for ninety minutes.",
        "Barley soup",
        metadata={"kind": "recipe", "year": 2022},
    ),
    Document(
        "code",
        "Call parse_config() before open_store(); the loader reads settings.toml and raises ConfigError.",
        "Loader notes",
        metadata={"kind": "manual", "year": 2023},
    ),
]
QUERIES = [
    "Where was Odile Brask born?",
    "Summarize the discussion about the harbour budget",
    "Who is older, Odile Brask or Tomas Vell?",
    'what does "parse_config()" raise',
    "barley soup minutes",
    "biography from 2021",
    "Is Lunmark on the coast?",
    "how long does the soup simmer",
]


def make_engine(path: Path, embedder: Embedder, config: EngineConfig | None = None) -> Engine:
    engine = Engine(path, config or EngineConfig(chunk_tokens=40, background_index_work=False))
    engine.register_embedder(embedder)
    engine.collection("c", create=True).add(DOCS)
    return engine


class Always:
    """A selector that always picks ``pipeline`` with ``confidence``, the rest of the pool after it."""

    name = "fixed"

    def __init__(self, pipeline: Pipeline, confidence: float = 0.9) -> None:
        self.pipeline = pipeline
        self.confidence = confidence

    def select(self, query: str, features: Features, candidates: Sequence[Pipeline]) -> Choice:
        rest = [(p, 0.0) for p in candidates if p != self.pipeline]
        return Choice(self.pipeline, self.confidence, "fixed", self.name, [(self.pipeline, 1.0), *rest])
