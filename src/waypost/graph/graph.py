"""The knowledge graph in memory: entities, their mentions per chunk row, relations, synonym edges and
communities. ``apply`` takes one change-log step (rows removed, rows added with their extractions) and
records what it touched, so the store writes only that."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from waypost.graph.model import ChunkExtraction, entity_key

FloatArray = npt.NDArray[np.float32]
EmbedNames = Callable[[list[str]], FloatArray]
_WORD = re.compile(r"\w+")
NAMED = "named"  # what ``Entity.kind`` says for NER entities and titles (against "phrase")


@dataclass
class Entity:
    id: int
    key: str
    name: str
    label: str
    vector: FloatArray | None = None
    description: str = ""
    rows: dict[int, int] = field(default_factory=dict)  # chunk row -> mentions in it
    sentences: dict[int, str] = field(default_factory=dict)  # chunk row -> the first sentence naming it

    @property
    def kind(self) -> str:
        return "phrase" if self.label == "phrase" else NAMED


@dataclass
class Relation:
    id: int
    source: int
    target: int
    label: str
    row: int  # the chunk row it was read from
    weight: float = 1.0


@dataclass
class Community:
    id: int
    level: int
    parent: int  # -1 at the top level
    members: list[int]  # entity ids
    title: str = ""
    report: str = ""
    rows: list[int] = field(default_factory=list)  # the chunk rows its report cites
    vector: FloatArray | None = None


@dataclass
class GraphConfig:
    synonym_threshold: float = 0.8  # cosine of two names for a synonym edge
    synonym_neighbours: int = 5  # at most this many synonym edges per entity
    shared_word_limit: int = 200  # a word named by more entities than this does not propose synonyms
    community_max_size: int = 40  # communities larger than this are split one level down
    drift_threshold: float = 0.25  # changed entities / entities at the last Leiden run before a re-run
    description_sentences: int = 3

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GraphConfig:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)


@dataclass
class Touched:
    """What one ``apply`` changed: the store writes these, communities are updated from them."""

    entities: set[int] = field(default_factory=set)  # changed or new (still present)
    new_entities: set[int] = field(default_factory=set)
    dropped_entities: set[int] = field(default_factory=set)
    added_rows: set[int] = field(default_factory=set)
    removed_rows: set[int] = field(default_factory=set)
    synonyms_added: list[tuple[int, int, float]] = field(default_factory=list)
    communities: set[int] = field(default_factory=set)  # communities that lost a member


class KnowledgeGraph:
    def __init__(self, config: GraphConfig | None = None) -> None:
        self.config = config or GraphConfig()
        self.entities: dict[int, Entity] = {}
        self.by_key: dict[str, int] = {}
        self.row_entities: dict[int, list[int]] = {}
        self.row_title: dict[int, int] = {}  # chunk row -> the entity its document's title names
        self.relations: dict[int, Relation] = {}
        self.row_relations: dict[int, list[int]] = {}
        self.synonyms: dict[int, dict[int, float]] = {}
        self.communities: dict[int, Community] = {}
        self.member_of: dict[int, list[int]] = {}  # entity -> the communities holding it, top level first
        self.generation = 0
        self.build_id = ""  # set when stored: updates are written only over the build they started from
        self.next_entity = 0
        self.next_relation = 0
        self.next_community = 0
        self.entities_at_leiden = 0
        self.changed_since_leiden = 0
        self._words: dict[str, set[int]] = {}  # word -> entity ids naming it (synonym candidates)
        self.version = 0  # bumps on every change: derived arrays are cached on it

    def reindex_words(self) -> None:
        """The word index synonym candidates come from (not stored: rebuilt from the names on load)."""
        self._words.clear()
        for e in self.entities.values():
            for word in set(_WORD.findall(e.key)):
                self._words.setdefault(word, set()).add(e.id)

    # -- reading ----------------------------------------------------------------------------------------
    def entity_named(self, name: str) -> Entity | None:
        found = self.by_key.get(entity_key(name))
        return self.entities.get(found) if found is not None else None

    def chunk_rows(self) -> set[int]:
        return set(self.row_entities)

    def neighbours(self, entity: int) -> dict[int, float]:
        """Entities related to ``entity`` (relation weights summed) and its synonyms."""
        out: dict[int, float] = {}
        for rid in self._relations_of(entity):
            r = self.relations[rid]
            other = r.target if r.source == entity else r.source
            out[other] = out.get(other, 0.0) + r.weight
        for other, sim in self.synonyms.get(entity, {}).items():
            out[other] = out.get(other, 0.0) + sim
        return out

    def _relations_of(self, entity: int) -> list[int]:
        e = self.entities.get(entity)
        if e is None:
            return []
        out: list[int] = []
        for row in e.rows:
            for rid in self.row_relations.get(row, []):
                r = self.relations[rid]
                if entity in (r.source, r.target):
                    out.append(rid)
        return out

    def relations_of(self, entity: int) -> list[Relation]:
        return [self.relations[rid] for rid in self._relations_of(entity)]

    # -- changing ---------------------------------------------------------------------------------------
    def apply(
        self,
        removed_rows: Iterable[int],
        added: Sequence[tuple[int, ChunkExtraction]],
        embed: EmbedNames,
        generation: int,
    ) -> Touched:
        touched = Touched()
        for row in removed_rows:
            self._remove_row(int(row), touched)
        for row, extraction in added:
            self._add_row(int(row), extraction, touched)
        touched.entities -= touched.dropped_entities
        touched.new_entities -= touched.dropped_entities
        # named entities carry a name vector (query linking, synonyms); noun phrases are found by their words
        new = sorted(i for i in touched.entities if self.entities[i].kind == NAMED and self.entities[i].vector is None)
        if new:
            vectors = embed([self.entities[i].name for i in new])
            for i, v in zip(new, vectors, strict=True):
                self.entities[i].vector = np.asarray(v, dtype=np.float32)
            touched.synonyms_added = self._link_synonyms(new)
        for i in touched.entities:
            self._describe(self.entities[i])
        self.changed_since_leiden += len(touched.entities) + len(touched.dropped_entities)
        self.generation = generation
        self.version += 1
        return touched

    def _remove_row(self, row: int, touched: Touched) -> None:
        touched.removed_rows.add(row)
        self.row_title.pop(row, None)
        for rid in self.row_relations.pop(row, []):
            self.relations.pop(rid, None)
        for eid in self.row_entities.pop(row, []):
            e = self.entities.get(eid)
            if e is None:
                continue
            e.rows.pop(row, None)
            e.sentences.pop(row, None)
            touched.entities.add(eid)
            if not e.rows:
                self._drop_entity(e, touched)

    def _drop_entity(self, e: Entity, touched: Touched) -> None:
        del self.entities[e.id]
        self.by_key.pop(e.key, None)
        for other in self.synonyms.pop(e.id, {}):
            self.synonyms.get(other, {}).pop(e.id, None)
        for word in set(_WORD.findall(e.key)):
            self._words.get(word, set()).discard(e.id)
        for cid in self.member_of.pop(e.id, []):
            c = self.communities.get(cid)
            if c is not None and e.id in c.members:
                c.members.remove(e.id)
                touched.communities.add(cid)
        touched.dropped_entities.add(e.id)

    def _add_row(self, row: int, extraction: ChunkExtraction, touched: Touched) -> None:
        touched.added_rows.add(row)
        ids: dict[str, int] = {}
        for m in extraction.entities:
            key = entity_key(m.name)
            if not key:
                continue
            eid = self.by_key.get(key)
            if eid is None:
                eid = self.next_entity
                self.next_entity += 1
                self.entities[eid] = Entity(eid, key, m.name, m.label)
                self.by_key[key] = eid
                for word in set(_WORD.findall(key)):
                    self._words.setdefault(word, set()).add(eid)
                touched.new_entities.add(eid)
            e = self.entities[eid]
            if e.label == "phrase" and m.label != "phrase":
                e.label, e.name = m.label, m.name  # a name NER recognises is a better entity than a phrase
            e.rows[row] = e.rows.get(row, 0) + 1
            if row not in e.sentences and m.sentence:
                e.sentences[row] = m.sentence[:400]
            ids[key] = eid
            if m.label == "title":
                self.row_title[row] = eid
            touched.entities.add(eid)
        self.row_entities[row] = list(dict.fromkeys(ids.values()))
        rels: list[int] = []
        for r in extraction.relations:
            a, b = ids.get(entity_key(r.source)), ids.get(entity_key(r.target))
            if a is None or b is None or a == b:
                continue
            rid = self.next_relation
            self.next_relation += 1
            self.relations[rid] = Relation(rid, a, b, r.label[:200], row, float(r.weight))
            rels.append(rid)
        self.row_relations[row] = rels

    def _link_synonyms(self, new: list[int]) -> list[tuple[int, int, float]]:
        """Synonym edges from each new entity to the most similar names sharing a word with it (not a scan
        of every entity: an insert costs what its names' words propose, not the size of the graph)."""
        cfg = self.config
        added: list[tuple[int, int, float]] = []
        for eid in new:
            e = self.entities[eid]
            if e.vector is None:
                continue
            candidates: set[int] = set()
            for word in set(_WORD.findall(e.key)):
                group = self._words.get(word, set())
                if len(group) <= cfg.shared_word_limit:
                    candidates |= group
            candidates.discard(eid)
            others = [c for c in candidates if self.entities[c].vector is not None]
            if not others:
                continue
            matrix = np.stack([self.entities[c].vector for c in others])  # type: ignore[misc]
            sims = matrix @ e.vector
            best = np.argsort(-sims)[: cfg.synonym_neighbours]
            for j in best:
                if sims[j] < cfg.synonym_threshold:
                    break
                other = others[int(j)]
                sim = round(float(sims[j]), 4)
                self.synonyms.setdefault(eid, {})[other] = sim
                self.synonyms.setdefault(other, {})[eid] = sim
                added.append((min(eid, other), max(eid, other), sim))
        return added

    def _describe(self, e: Entity) -> None:
        """An extractive description: the first sentences naming it, from the chunks that still do."""
        picked: list[str] = []
        for row in sorted(e.sentences):
            s = e.sentences[row]
            if s and s not in picked:
                picked.append(s)
            if len(picked) >= self.config.description_sentences:
                break
        e.description = " ".join(picked)[:800]
