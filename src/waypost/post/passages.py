"""Passage assembly: a ranked list of chunks becomes a list of coherent passages, with one of three policies.

- grow: anchored on each retrieved chunk in rank order, take the neighbour (same section) that is more
  relevant to the query, as long as it is at least ``keep`` times as relevant as the anchor and the
  passage stays within ``tokens``;
- auto-merge: retrieved chunks of one section become one passage: the whole section when it fits in
  ``tokens``, else the stretch from the first to the last of them when that fits;
- small-to-big: each retrieved chunk is widened to ``window`` neighbours on each side (same section).

Overlapping passages of one document are merged when they fit together; otherwise the later one keeps only
chunks not returned yet, so no chunk is returned twice. A passage is a hit whose chunk is the exact span it
covers (so answers cite it and evaluation measures it like any hit), with ``hit.passage`` saying how it
was made."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import overload

import numpy as np
import numpy.typing as npt

from waypost.context import SearchContext
from waypost.errors import WaypostError
from waypost.index.dense import QueryScores
from waypost.index.topk import Positions
from waypost.post.evidence import SectionRef
from waypost.types import Chunk, Hit, PassageRef, RetrievalResult


class PassagePolicy(StrEnum):
    GROW = "grow"
    AUTO_MERGE = "auto-merge"
    SMALL_TO_BIG = "small-to-big"


@dataclass(frozen=True)
class PassageConfig:
    policy: PassagePolicy = PassagePolicy.GROW
    tokens: int = 1024  # the longest passage (qmsum train: 512 gave 0.468, 768 0.501, 1024 0.535)
    keep: float = 0.3  # grow: a neighbour joins while this relevant relative to the anchor (train: .1-.7 within .008)
    window: int = 1  # small-to-big: neighbours taken on each side
    alpha: float = 0.4  # dense share of the relevance that growth follows (hybrid's default)

    def check(self) -> None:
        if self.tokens < 1:
            raise WaypostError("passage tokens must be positive")
        if not 0.0 <= self.keep <= 1.0:
            raise WaypostError("passage keep must be between 0 and 1")
        if self.window < 0:
            raise WaypostError("passage window must be zero or more")


class Relevance:
    """Each position's relevance to the query in [0, 1]: dense and BM25, each scaled by its maximum over the
    collection and blended with ``alpha``; computed for the positions asked (the dense side reads just
    those vectors in a collection searched by graph candidates)."""

    def __init__(self, dense: QueryScores, lexical: npt.NDArray[np.float64], alpha: float) -> None:
        self._dense = dense
        self._lexical = lexical
        self._alpha = alpha
        self._dense_top = dense.max()
        self._lexical_top = float(lexical.max()) if lexical.size else 0.0

    def at(self, positions: Positions | Sequence[int]) -> npt.NDArray[np.float64]:
        positions = np.asarray(positions, dtype=np.int64)
        dense = _scaled(self._dense.at(positions).astype(np.float64), self._dense_top)
        lexical = _scaled(np.asarray(self._lexical[positions], dtype=np.float64), self._lexical_top)
        out: npt.NDArray[np.float64] = self._alpha * dense + (1 - self._alpha) * lexical
        return out

    @overload
    def __getitem__(self, positions: int) -> float: ...

    @overload
    def __getitem__(self, positions: Positions | Sequence[int]) -> npt.NDArray[np.float64]: ...

    def __getitem__(self, positions: int | Positions | Sequence[int]) -> float | npt.NDArray[np.float64]:
        if isinstance(positions, (int, np.integer)):
            return float(self.at(np.asarray([positions], dtype=np.int64))[0])
        return self.at(positions)


def _scaled(values: npt.NDArray[np.float64], top: float) -> npt.NDArray[np.float64]:
    return np.clip(values / top, 0.0, 1.0) if top > 0 else np.zeros_like(values)


def relevance(ctx: SearchContext, query: str, dense_share: float) -> Relevance:
    """Each position's relevance to the query (``Relevance``), the dense share ``dense_share`` scaled down
    where the embedder covers the query's language poorly."""
    _language, weight, _note = ctx.dense_weight(query)
    return Relevance(ctx.dense(query), ctx.lexical_scores(query), dense_share * weight)


@dataclass
class _Draft:
    document_id: str
    positions: list[int]  # in chunk order
    anchor: int
    score: float
    source: Hit


class PassageAssembler:
    def __init__(self, ctx: SearchContext, config: PassageConfig | None = None) -> None:
        self.ctx = ctx
        self.config = config or PassageConfig()
        self.config.check()
        self.graph = ctx.evidence()
        self._documents: dict[str, str] = {}  # document texts read for multi-chunk spans

    def assemble(self, query: str, result: RetrievalResult, k: int | None = None) -> RetrievalResult:
        t0 = time.perf_counter()
        cfg = self.config
        if any(h.passage is not None for h in result.hits):  # a passage strategy's result: not taken apart
            result.explanation.notes.append("passages: the strategy returned passages already; kept as they were")
            return RetrievalResult(result.hits[:k] if k is not None else result.hits, result.explanation)
        anchors = self._positions(result.hits)
        scores = relevance(self.ctx, query, cfg.alpha) if cfg.policy is PassagePolicy.GROW else None
        drafts: list[_Draft] = []
        covered: set[int] = set()
        if cfg.policy is PassagePolicy.AUTO_MERGE:
            drafts = self._auto_merge(anchors)
        else:
            for hit, pos in anchors:
                if pos is None:
                    drafts.append(_Draft(hit.document_id, [], -1, hit.score, hit))  # not live: kept as it was
                    continue
                if pos in covered:
                    continue
                grown = self._grow(pos, scores) if scores is not None else self._window(pos)
                covered.update(grown)
                drafts.append(_Draft(hit.document_id, grown, pos, hit.score, hit))
        hits = self._merge(drafts, scores)
        if k is not None:
            hits = hits[:k]
        explanation = result.explanation
        explanation.timings_ms["passages"] = (time.perf_counter() - t0) * 1000
        explanation.notes.append(
            f"passages: {cfg.policy.value}, {len(result.hits)} chunks -> {len(hits)} passages, at most {cfg.tokens} "
            "tokens each" + (f", keep={cfg.keep}" if cfg.policy is PassagePolicy.GROW else "")
            + (f", window={cfg.window}" if cfg.policy is PassagePolicy.SMALL_TO_BIG else "")
        )  # fmt: skip
        return RetrievalResult(hits, explanation)

    # -- anchors ----------------------------------------------------------------------------------------
    def _positions(self, hits: list[Hit]) -> list[tuple[Hit, int | None]]:
        at = self.graph.positions(hits)
        return list(zip(hits, at, strict=True))

    # -- policies ---------------------------------------------------------------------------------------
    def _grow(self, anchor: int, scores: Relevance) -> list[int]:
        section = self.graph.get_parent(anchor)
        if section is None:
            return [anchor]
        order = section.positions
        lo = hi = order.index(anchor)
        used = self.graph.tokens([anchor])
        floor = self.config.keep * float(scores[anchor])
        while True:
            options = [i for i in (lo - 1, hi + 1) if 0 <= i < len(order)]
            options = [i for i in options if float(scores[order[i]]) >= floor]
            options = [i for i in options if used + self.graph.tokens([order[i]]) <= self.config.tokens]
            if not options:
                break
            best = max(options, key=lambda i: float(scores[order[i]]))
            used += self.graph.tokens([order[best]])
            lo, hi = min(lo, best), max(hi, best)
        return list(order[lo : hi + 1])

    def _window(self, anchor: int) -> list[int]:
        section = self.graph.get_parent(anchor)
        if section is None:
            return [anchor]
        order = section.positions
        at = order.index(anchor)
        lo, hi = max(0, at - self.config.window), min(len(order) - 1, at + self.config.window)
        while hi > lo and self.graph.tokens(order[lo : hi + 1]) > self.config.tokens:  # shrink to fit
            if hi - at >= at - lo:
                hi -= 1
            else:
                lo += 1
        return list(order[lo : hi + 1])

    def _auto_merge(self, anchors: list[tuple[Hit, int | None]]) -> list[_Draft]:
        """Retrieved chunks grouped by section: the section whole when it fits, else stretches from the
        first to the last member that fit, opened by the best member not yet inside one."""
        drafts: list[_Draft] = []
        groups: dict[SectionRef, list[tuple[Hit, int]]] = {}  # by the section itself: a heading may repeat
        for hit, pos in anchors:
            section = self.graph.get_parent(pos) if pos is not None else None
            if pos is None or section is None:
                drafts.append(_Draft(hit.document_id, [], -1, hit.score, hit))  # not live: kept as it was
            else:
                groups.setdefault(section, []).append((hit, pos))
        for section, members in groups.items():
            document_id = section.document_id
            order = list(section.positions)
            if len(members) > 1 and self.graph.tokens(order) <= self.config.tokens:
                hit, pos = members[0]
                drafts.append(_Draft(document_id, order, pos, hit.score, hit))
                continue
            opened: list[tuple[_Draft, int, int]] = []  # draft, first and last index into ``order``
            for hit, pos in members:
                at = order.index(pos)
                for n, (draft, lo, hi) in enumerate(opened):
                    lo2, hi2 = min(lo, at), max(hi, at)
                    if self.graph.tokens(order[lo2 : hi2 + 1]) <= self.config.tokens:
                        opened[n] = (draft, lo2, hi2)
                        break
                else:
                    opened.append((_Draft(document_id, [], pos, hit.score, hit), at, at))
            for draft, lo, hi in opened:
                draft.positions = order[lo : hi + 1]
                drafts.append(draft)
        rank = {id(hit): i for i, (hit, _pos) in enumerate(anchors)}
        drafts.sort(key=lambda d: rank.get(id(d.source), len(rank)))  # in retrieved order (scores of a
        # reranked head and an untouched tail do not compare)
        return drafts

    # -- output -----------------------------------------------------------------------------------------
    def _merge(self, drafts: list[_Draft], scores: Relevance | None) -> list[Hit]:
        """Passages in anchor order; one overlapping an earlier passage of its document joins it when the two
        fit together (else it keeps only what that one lacks, see ``_without_repeats``)."""
        kept: list[_Draft] = []
        for d in drafts:
            if not d.positions:
                kept.append(d)
                continue
            for other in kept:
                if other.document_id != d.document_id or not other.positions:
                    continue
                if set(other.positions) & set(d.positions):
                    union = sorted(set(other.positions) | set(d.positions), key=self._chunk_index)
                    if self.graph.tokens(union) <= self.config.tokens or set(d.positions) <= set(other.positions):
                        other.positions = union
                        break
            else:
                kept.append(d)
        return [self._hit(d, scores) for d in self._without_repeats(kept)]

    def _without_repeats(self, drafts: list[_Draft]) -> list[_Draft]:
        """Each chunk in one passage only: a passage that overlaps an earlier one it could not join keeps
        its run of chunks not yet returned (the one holding its anchor, else the longest), or goes."""
        taken: set[int] = set()
        out: list[_Draft] = []
        for d in drafts:
            if not d.positions:
                out.append(d)
                continue
            runs: list[list[int]] = [[]]
            for p in d.positions:
                if p in taken:
                    runs.append([])
                else:
                    runs[-1].append(p)
            runs = [r for r in runs if r]
            if not runs:
                continue
            run = next((r for r in runs if d.anchor in r), max(runs, key=len))
            if run != d.positions:
                d.positions = run
                d.anchor = d.anchor if d.anchor in run else run[0]
            taken.update(run)
            out.append(d)
        return out

    def _chunk_index(self, position: int) -> int:
        stored = self.graph.chunk(position)
        return stored.chunk.index if stored is not None else 0

    def _hit(self, draft: _Draft, scores: Relevance | None) -> Hit:
        if not draft.positions:
            return draft.source
        chunks = [self.graph.chunk(p) for p in draft.positions]
        stored = [c for c in chunks if c is not None]
        stored.sort(key=lambda s: s.chunk.index)
        first, last = stored[0].chunk, stored[-1].chunk
        text = self._span_text(first.document_id, first.start, last.end, [s.chunk for s in stored])
        span = Chunk(
            first.document_id, first.index, text, first.start, last.end,
            sum(s.chunk.token_count for s in stored), first.section, first.language,
        )  # fmt: skip
        anchor = self.graph.chunk(draft.anchor)
        anchor_id = anchor.chunk.id if anchor is not None else draft.source.chunk.id
        if scores is not None and scores[draft.anchor] > 0:
            rel = [float(scores[p]) / float(scores[draft.anchor]) for p in draft.positions]
            coherence = round(min(1.0, sum(rel) / len(rel)), 4)
        else:
            coherence = 1.0
        ref = PassageRef(self.config.policy.value, tuple(s.chunk.id for s in stored), anchor_id, draft.score, coherence)
        return replace(draft.source, chunk=span, passage=ref)

    def _span_text(self, document_id: str, start: int, end: int, chunks: list[Chunk]) -> str:
        """The document's own text over the span (what lies between chunks included), so it is exact."""
        if len(chunks) == 1:
            return chunks[0].text
        if document_id not in self._documents:
            found = self.ctx.store.get_document(self.ctx.collection, document_id)
            self._documents[document_id] = found.text if found is not None else ""
        text = self._documents[document_id]
        return text[start:end] if text else " ".join(c.text for c in chunks)
