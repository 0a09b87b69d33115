"""The LLM extractor: OpenIE-style ``[subject, predicate, object]`` triples asked of an LLM, one chunk a call.

The reply is JSON, ``{"entities": [...], "triples": [[s, p, o], ...]}``, found and repaired by
``complete_structured`` (one retry with the validation error) and read tolerantly: triples as lists, as pairs
(``related to``) or as objects (``subject``/``predicate``/``object``, ``head``/``relation``/``tail``, ...), names
as strings or numbers, respelled as the text writes them; empty, overlong and self-referencing triples are
dropped. A chunk whose reply holds no usable triple,
or whose call fails, is extracted by the ``fallback`` extractor instead (counted in ``fallbacks``).

Results are cached by a hash of the chunk's text and title, the model and the prompt version: in memory and,
with ``cache_path``, in a small SQLite table of JSON rows (one transaction a chunk), so re-extracting an
unchanged chunk never asks the LLM again. A reply that could not be used is cached as "use the fallback"; a
provider failure is not cached, so the chunk is asked again next time. Tokens and cost add up in ``accounting``.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pydantic import BaseModel, field_validator, model_validator

from waypost.errors import WaypostError
from waypost.graph.model import (
    ChunkExtraction,
    ChunkInput,
    ExtractedEntity,
    ExtractedRelation,
    Extractor,
    ExtractProgress,
    entity_key,
)
from waypost.llm.accounting import PriceTable, QueryMetadata
from waypost.llm.base import GenerationParams, LLMProvider, Message
from waypost.llm.cache import derived_from
from waypost.llm.structured import complete_structured
from waypost.store.files import connect_cache

PROMPT_VERSION = "v1"
MAX_NAME_CHARS = 80  # longer "names" are clauses, not entities
MAX_NAME_WORDS = 10
MAX_PREDICATE_WORDS = 12
SENTENCE_FALLBACK_CHARS = 200
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n{2,}")
_QUOTES = "\"'`“”‘’«»"

_SUBJECT_KEYS = ("subject", "subj", "s", "head", "source", "from", "entity1")
_PREDICATE_KEYS = ("predicate", "pred", "p", "relation", "rel", "label", "verb", "relationship")
_OBJECT_KEYS = ("object", "obj", "o", "tail", "target", "to", "entity2")
_TRIPLE_LISTS = ("triples", "triplets", "relations", "relationships", "facts", "edges")
_ENTITY_LISTS = ("entities", "nodes", "names")

_SYSTEM = (
    "Extract facts from the text as JSON: "
    '{"entities": [names], "triples": [[subject, predicate, object], ...]}. '
    "Use short names as written in the text. Reply with JSON only."
)
_EXAMPLE_TEXT = "Marie Curie was born in Warsaw. She won the Nobel Prize in Physics in 1903."
_EXAMPLE_REPLY = (
    '{"entities": ["Marie Curie", "Warsaw", "Nobel Prize in Physics"], "triples": '
    '[["Marie Curie", "born in", "Warsaw"], ["Marie Curie", "won", "Nobel Prize in Physics"]]}'
)


def _clean_name(value: Any) -> str:
    """A name on one line without surrounding quotes; ``""`` for what is no name (empty, overlong, not text)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return ""
    text = " ".join(str(value).split()).strip(_QUOTES + " ")
    if not entity_key(text) or len(text) > MAX_NAME_CHARS or len(text.split()) > MAX_NAME_WORDS:
        return ""
    return text


def _clean_predicate(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return ""
    words = str(value).strip(_QUOTES + " ").split()
    return " ".join(words[:MAX_PREDICATE_WORDS])


def _first(item: dict[str, Any], keys: tuple[str, ...]) -> Any:
    folded = {str(k).casefold(): v for k, v in item.items()}
    return next((folded[k] for k in keys if k in folded), None)


def _triple(item: Any) -> tuple[str, str, str] | None:
    """``[s, p, o]`` (extra items ignored), a pair ``[s, o]`` (related, no predicate), or an object with
    subject/predicate/object-like keys; ``None`` if either end is no name."""
    if isinstance(item, (list, tuple)) and len(item) >= 3:
        s, p, o = item[0], item[1], item[2]
    elif isinstance(item, (list, tuple)) and len(item) == 2:
        s, p, o = item[0], "", item[1]
    elif isinstance(item, dict):
        s, p, o = _first(item, _SUBJECT_KEYS), _first(item, _PREDICATE_KEYS), _first(item, _OBJECT_KEYS)
    else:
        return None
    subject, obj = _clean_name(s), _clean_name(o)
    if not subject or not obj or entity_key(subject) == entity_key(obj):
        return None
    return subject, _clean_predicate(p) or "related to", obj


class TriplesReply(BaseModel):
    """What the model is asked for; validation fails (and ``complete_structured`` asks again) when no triple
    with two usable ends is left."""

    entities: list[str] = []
    triples: list[tuple[str, str, str]]

    @model_validator(mode="before")
    @classmethod
    def _tolerant(cls, data: Any) -> Any:
        """A bare list of triples, or other names for the two lists (``relations``, ``nodes``, ...)."""
        if isinstance(data, list):
            return {"triples": data}
        if isinstance(data, dict):
            triples = _first(data, _TRIPLE_LISTS)
            entities = _first(data, _ENTITY_LISTS)
            if triples is None and isinstance(data.get("triple"), list):
                triples = [data["triple"]]
            elif triples is None and _first(data, _SUBJECT_KEYS) is not None:
                triples = [data]  # one triple as an object (the first of a bare list, as JSON is found)
            return {"entities": entities if isinstance(entities, list) else [], "triples": triples}
        return data

    @field_validator("entities", mode="before")
    @classmethod
    def _names(cls, value: Any) -> Any:
        """Strings, numbers or ``{"name": ...}``; anything else is dropped."""
        if not isinstance(value, list):
            return []
        names: list[str] = []
        for item in value:
            if isinstance(item, dict):
                item = _first(item, ("name", "text", "entity", "label"))
            name = _clean_name(item)
            if name:
                names.append(name)
        return names

    @field_validator("triples", mode="before")
    @classmethod
    def _triples(cls, value: Any) -> Any:
        if not isinstance(value, list):
            raise ValueError("triples must be a list of [subject, predicate, object]")
        if len(value) >= 3 and all(not isinstance(v, (list, tuple, dict)) for v in value):
            value = [value]  # one triple, not wrapped in a list
        found = [t for t in (_triple(item) for item in value) if t is not None]
        if not found:
            raise ValueError("no [subject, predicate, object] triple with a short name at both ends")
        return list(dict.fromkeys(found))


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def _sentence_of(name: str, sentences: list[str], default: str) -> str:
    """The first sentence that mentions ``name`` (case-insensitively), else ``default``."""
    needle = name.casefold()
    return next((s for s in sentences if needle in s.casefold()), default)


def to_extraction(
    chunk: ChunkInput, triples: Sequence[tuple[str, str, str]], names: Sequence[str] = ()
) -> ChunkExtraction:
    """Entities (label ``llm``, or ``title`` for the document's title) and one relation per triple, the ends
    spelled as their entity; the title is related to each entity by ``mentions`` (weight 0.5), as the offline
    extractor does."""
    sentences = _sentences(chunk.text)
    default = " ".join(chunk.text[:SENTENCE_FALLBACK_CHARS].split())
    title = " ".join(chunk.title.split())
    title_key = entity_key(title)
    result = ChunkExtraction()
    spelling: dict[str, str] = {title_key: title} if title_key else {}  # entity key -> its one spelling
    titled = False

    def entity(name: str) -> str:
        nonlocal titled
        key = entity_key(name)
        if key == title_key:
            if not titled:
                titled = True
                result.entities.append(ExtractedEntity(title, "title", _sentence_of(title, sentences, default)))
        elif key not in spelling:
            written = re.search(re.escape(name), chunk.text, re.IGNORECASE)
            name = written.group() if written else name  # as the text spells it ("tides" -> "Tides")
            spelling[key] = name
            result.entities.append(ExtractedEntity(name, "llm", _sentence_of(name, sentences, default)))
        return spelling[key]

    related: set[tuple[str, str, str]] = set()
    for subject, predicate, obj in triples:
        source, target = entity(subject), entity(obj)
        triple = (entity_key(source), predicate.casefold(), entity_key(target))
        if triple[0] != triple[2] and triple not in related:  # "the Warsaw" and "Warsaw": one entity, related once
            related.add(triple)
            result.relations.append(ExtractedRelation(source, target, predicate, 1.0))
    for name in names:
        entity(name)
    if title_key:
        if not titled:
            result.entities.append(ExtractedEntity(title, "title", sentences[0] if sentences else default))
        for key, name in spelling.items():
            if key != title_key:
                result.relations.append(ExtractedRelation(title, name, "mentions", 0.5))
    return result


def _to_json(extraction: ChunkExtraction | None) -> str:
    if extraction is None:
        return json.dumps({"fallback": True})
    return json.dumps(
        {
            "entities": [[e.name, e.label, e.sentence] for e in extraction.entities],
            "relations": [[r.source, r.target, r.label, r.weight] for r in extraction.relations],
        },
        ensure_ascii=False,
    )


def _from_json(text: str) -> ChunkExtraction | None:
    data = json.loads(text)
    if data.get("fallback"):
        return None
    return ChunkExtraction(
        [ExtractedEntity(str(n), str(label), str(s)) for n, label, s in data["entities"]],
        [ExtractedRelation(str(s), str(t), str(label), float(w)) for s, t, label, w in data["relations"]],
    )


def _copy(extraction: ChunkExtraction) -> ChunkExtraction:
    return ChunkExtraction(list(extraction.entities), list(extraction.relations))


_MISSING = object()


class LLMExtractor:
    """Triples from an LLM, one call (two with the retry) per chunk; ``fallback`` where that gives nothing.

    Counters: ``llm_chunks`` (extracted from a fresh reply), ``cache_hits`` (answered from this extractor's
    cache, no LLM call), ``fallbacks`` (chunks the fallback extracted, cached "use the fallback" included);
    ``accounting`` holds LLM calls, tokens, cost, time and the reasons for each fallback; ``usage()`` all of it.
    """

    def __init__(
        self,
        llm: LLMProvider,
        fallback: Extractor,
        prices: PriceTable | None = None,
        *,
        max_tokens: int = 384,
        max_chars: int = 3000,
        cache_path: str | Path | None = None,
        workers: int = 1,
        memory_items: int = 100_000,
    ) -> None:
        if workers < 1:
            raise WaypostError(f"the LLM extractor needs at least one worker, got {workers}")
        self.llm = llm
        self.fallback = fallback
        self.prices = prices or PriceTable()
        self.max_tokens = max_tokens
        self.max_chars = max_chars  # the chunk text sent is cut to this many characters
        self.workers = workers
        self.memory_items = memory_items
        self.name = f"llm:{llm.model_id}:{PROMPT_VERSION}"
        self.accounting = QueryMetadata(strategy="graph-extract")
        self.llm_chunks = 0
        self.cache_hits = 0
        self.fallbacks = 0
        self._memory: dict[str, ChunkExtraction | None] = {}  # None: the reply was unusable, use the fallback
        self._lock = threading.Lock()
        self.cache_path = Path(cache_path) if cache_path is not None else None
        self._conn: sqlite3.Connection | None = None
        if self.cache_path is not None:
            self.cache_path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = connect_cache(self.cache_path)
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS llm_extractions "
                "(key TEXT PRIMARY KEY, extractor TEXT NOT NULL, result TEXT NOT NULL, created_at REAL NOT NULL)"
            )

    # -- the prompt ----------------------------------------------------------------------------------
    def messages(self, chunk: ChunkInput) -> list[Message]:
        """One worked example: a 135M model keeps to the format only when shown it."""
        text = " ".join(chunk.text.split())
        if len(text) > self.max_chars:
            cut = text[: self.max_chars]
            space = cut.rfind(" ")
            text = cut[:space] if space > self.max_chars // 2 else cut
        title = " ".join(chunk.title.split())
        body = f"Title: {title}\nText: {text}" if title else f"Text: {text}"
        return [
            {"role": "system", "content": _SYSTEM},
            {"role": "user", "content": f"Text: {_EXAMPLE_TEXT}\nJSON:"},
            {"role": "assistant", "content": _EXAMPLE_REPLY},
            {"role": "user", "content": f"{body}\nJSON:"},
        ]

    def key(self, chunk: ChunkInput) -> str:
        """The cache key: the chunk's text and title, the model, the prompt version and the reply budget."""
        payload = json.dumps(
            [PROMPT_VERSION, self.llm.model_id, self.max_tokens, self.max_chars, chunk.title, chunk.text],
            ensure_ascii=False,
        )
        return hashlib.sha256(payload.encode()).hexdigest()

    # -- the cache -----------------------------------------------------------------------------------
    def _cached(self, key: str) -> object:
        """The cached extraction, ``None`` for "use the fallback", or ``_MISSING``."""
        with self._lock:
            if key in self._memory:
                return self._memory[key]
            if self._conn is None:
                return _MISSING
            row = self._conn.execute("SELECT result FROM llm_extractions WHERE key=?", (key,)).fetchone()
        if row is None:
            return _MISSING
        try:
            value = _from_json(row[0])
        except (ValueError, KeyError, TypeError):
            return _MISSING  # a damaged row is asked again and overwritten
        self._remember(key, value)
        return value

    def _remember(self, key: str, value: ChunkExtraction | None) -> None:
        with self._lock:
            if len(self._memory) >= self.memory_items:
                self._memory.pop(next(iter(self._memory)))
            self._memory[key] = value

    def _store(self, key: str, value: ChunkExtraction | None) -> None:
        self._remember(key, value)
        if self._conn is None:
            return
        with self._lock:  # one statement in autocommit mode: each chunk's row lands whole or not at all
            self._conn.execute(
                "INSERT OR REPLACE INTO llm_extractions VALUES (?,?,?,?)",
                (key, self.name, _to_json(value), time.time()),
            )

    # -- extraction ----------------------------------------------------------------------------------
    def _ask(self, chunk: ChunkInput) -> ChunkExtraction | None:
        """The chunk's extraction from the cache or the LLM; ``None`` when the fallback must extract it."""
        if not chunk.text.strip():
            return to_extraction(chunk, [])  # nothing to ask about: the title alone
        key = self.key(chunk)
        hit = self._cached(key)
        if hit is not _MISSING:
            with self._lock:
                self.cache_hits += 1
            return _copy(hit) if isinstance(hit, ChunkExtraction) else None
        usage = QueryMetadata(strategy="graph-extract")
        t0 = time.perf_counter()
        with derived_from(texts=[chunk.text]):  # the LLM cache entry goes when no chunk holds this text
            reply = complete_structured(
                self.llm,
                self.messages(chunk),
                TriplesReply,
                usage,
                self.prices,
                GenerationParams(max_tokens=self.max_tokens, temperature=0.0),
                step="graph-extract",
            )
        elapsed = (time.perf_counter() - t0) * 1000
        extraction = None
        if reply.value is not None and reply.value.triples:  # the schema asks for at least one
            extraction = to_extraction(chunk, reply.value.triples, reply.value.entities)
        self._account(usage, elapsed, extraction is not None)
        if extraction is not None or usage.llm_calls >= reply.attempts:
            # a reply that could not be used is cached like a good one (asking again gives the same);
            # a provider failure (fewer replies than attempts) is not: the chunk is asked again next time
            self._store(key, extraction)
        return _copy(extraction) if extraction is not None else None

    def _account(self, usage: QueryMetadata, elapsed_ms: float, ok: bool) -> None:
        with self._lock:
            total = self.accounting
            total.llm_calls += usage.llm_calls
            total.llm_cache_hits += usage.llm_cache_hits
            total.prompt_tokens += usage.prompt_tokens
            total.completion_tokens += usage.completion_tokens
            total.cost_usd += usage.cost_usd
            for reason in usage.fallbacks:
                total.add_fallback(reason)
            total.timings_ms["llm"] = total.timings_ms.get("llm", 0.0) + elapsed_ms
            self.llm_chunks += int(ok)

    def _asked(self, chunks: Sequence[ChunkInput]) -> Iterator[ChunkExtraction | None]:
        if self.workers == 1 or len(chunks) < 2:
            yield from map(self._ask, chunks)
            return
        pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="waypost-graph-llm")
        try:
            yield from pool.map(self._ask, chunks)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def extract(self, chunks: Sequence[ChunkInput], progress: ExtractProgress | None = None) -> list[ChunkExtraction]:
        out: list[ChunkExtraction] = []
        for chunk, extraction in zip(chunks, self._asked(chunks), strict=True):
            if extraction is None:  # the fallback runs here, in the caller's thread (spaCy is not thread-safe)
                extraction = self.fallback.extract([chunk])[0]
                with self._lock:
                    self.fallbacks += 1
            out.append(extraction)
            if progress is not None:
                progress(1)
        return out

    def usage(self) -> dict[str, Any]:
        """The accounting as a dict, with the chunk counters."""
        with self._lock:
            data = self.accounting.to_dict()
            data.update(llm_chunks=self.llm_chunks, cache_hits=self.cache_hits, fallback_chunks=self.fallbacks)
        return data

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
