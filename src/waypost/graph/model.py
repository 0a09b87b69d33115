"""What extraction yields per chunk, and the extractor contract every extractor meets."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class ChunkInput:
    """A chunk to extract from: its text and its document's title (the entity the chunk is about)."""

    text: str
    title: str = ""


@dataclass(frozen=True)
class ExtractedEntity:
    name: str
    label: str  # NER label (PERSON, ORG, ...), "phrase" for noun phrases, "title" for the document's title
    sentence: str  # the sentence it was found in (an entity's description is built from these)


@dataclass(frozen=True)
class ExtractedRelation:
    source: str  # entity names, as in the chunk's entities
    target: str
    label: str  # the connecting text (co-occurrence) or the predicate (OpenIE)
    weight: float = 1.0


@dataclass
class ChunkExtraction:
    entities: list[ExtractedEntity] = field(default_factory=list)
    relations: list[ExtractedRelation] = field(default_factory=list)


ExtractProgress = Callable[[int], None]  # called with how many chunks were just done


class Extractor(Protocol):
    """Turns chunks into entities and relations. ``name`` identifies the extractor and its settings: a
    graph built by one extractor is rebuilt, not mixed, when another is configured."""

    name: str

    def extract(self, chunks: Sequence[ChunkInput], progress: ExtractProgress | None = None) -> list[ChunkExtraction]:
        """One extraction per chunk, in order."""
        ...


_EDGE_PUNCT = re.compile(r"^[\W_]+|[\W_]+$")
_SPACE = re.compile(r"\s+")
_ARTICLE = re.compile(r"^(?:the|a|an)\s+")
_POSSESSIVE = re.compile(r"['’]s$")


def entity_key(name: str) -> str:
    """The form under which names count as one entity: NFKC, case-folded, spaces collapsed, edge
    punctuation, a leading article and a trailing possessive removed."""
    text = unicodedata.normalize("NFKC", name).casefold().strip()
    text = _SPACE.sub(" ", text)
    text = _POSSESSIVE.sub("", text)
    text = _EDGE_PUNCT.sub("", text)
    text = _ARTICLE.sub("", text)
    return text.strip()
