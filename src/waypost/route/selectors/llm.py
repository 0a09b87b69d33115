"""The LLM selector: a prompt lists the runnable pipelines with one line each; the reply's
``STRATEGY / CONFIDENCE / REASONING`` is parsed tolerantly (junk around it, any case, markdown, a
near-miss spelling, the list number). A name that is not among the candidates is refused (no invented
destinations); an unusable reply or a failed call falls back to the next selectors (learned, then
heuristic), and the reasoning says so."""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

from waypost.errors import WaypostError
from waypost.llm.base import GenerationParams, LLMProvider, Message
from waypost.route.base import Choice, Features, Pipeline, PipelineSelector
from waypost.route.selectors.common import by_preference, describe, fallback

logger = logging.getLogger("waypost.route")

SYSTEM = (
    "You route search queries. Choose the one retrieval pipeline, from the numbered list, that will find "
    "the best evidence for the query. Answer in exactly three lines:\n"
    "STRATEGY: <a name from the list>\nCONFIDENCE: <a number from 0 to 1>\nREASONING: <one sentence>"
)
_FIELD = re.compile(r"^[\s>*_#`-]*(strategy|pipeline|confidence|reasoning|reason)\s*[*_`]*\s*[:=]\s*(.*)$", re.I)
_NUMBER = re.compile(r"[-+]?\d*\.?\d+")
NEAR_MISS = 0.8  # difflib ratio a misspelt name needs to count as a candidate's


@dataclass
class ParsedReply:
    name: str
    confidence: float | None
    reasoning: str


def build_prompt(query: str, candidates: Sequence[Pipeline]) -> list[Message]:
    lines = [f"{i}. {p.label}: {describe(p)}" for i, p in enumerate(candidates, start=1)]
    user = "Pipelines:\n" + "\n".join(lines) + f"\n\nQuery: {query}"
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def parse_reply(text: str) -> ParsedReply | None:
    """The three fields of a reply, or None when it names no strategy."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        m = _FIELD.match(line.strip())
        if m:
            key = m.group(1).lower()
            key = {"pipeline": "strategy", "reason": "reasoning"}.get(key, key)
            fields.setdefault(key, m.group(2).strip())
    name = fields.get("strategy", "").strip().strip("*_`'\"[]().,;").strip()
    if not name:
        return None
    confidence = None
    raw = fields.get("confidence", "")
    number = _NUMBER.search(raw)
    if number:
        value = float(number.group(0))
        value = value / 100 if "%" in raw or value > 1 else value
        confidence = min(1.0, max(0.0, value))
    return ParsedReply(name, confidence, fields.get("reasoning", "").strip())


def match_candidate(name: str, candidates: Sequence[Pipeline]) -> Pipeline | None:
    """The candidate ``name`` means: its label in any case, its list number, or a near-miss spelling."""
    key = _normal(name)
    by_key = {_normal(p.label): p for p in candidates}
    if key in by_key:
        return by_key[key]
    if key.isdigit() and 1 <= int(key) <= len(candidates):
        return candidates[int(key) - 1]
    leading = re.match(r"^(\d+)\W", name.strip())  # "2. hybrid+passages"
    if leading and 1 <= int(leading.group(1)) <= len(candidates):
        rest = _normal(name.strip()[leading.end() :])
        numbered = candidates[int(leading.group(1)) - 1]
        if not rest or rest == _normal(numbered.label):
            return numbered
    close = difflib.get_close_matches(key, list(by_key), n=1, cutoff=NEAR_MISS)
    return by_key[close[0]] if close else None


def _normal(name: str) -> str:
    return re.sub(r"[\s_]+", "-", name.strip().lower()).strip("-")


class LLMSelector:
    name = "llm"

    def __init__(
        self, llm: LLMProvider, fallbacks: Sequence[PipelineSelector] = (), params: GenerationParams | None = None
    ) -> None:
        self.llm = llm
        self.fallbacks = list(fallbacks)
        self.params = params or GenerationParams(max_tokens=120)

    def select(self, query: str, features: Features, candidates: Sequence[Pipeline]) -> Choice:
        try:
            reply = self.llm.complete(build_prompt(query, candidates), self.params).text
        except WaypostError as exc:
            return self._fall_back(query, features, candidates, f"the LLM failed ({exc})")
        parsed = parse_reply(reply)
        if parsed is None:
            return self._fall_back(query, features, candidates, f"the LLM named no strategy in {reply[:80]!r}")
        chosen = match_candidate(parsed.name, candidates)
        if chosen is None:
            why = f"the LLM chose {parsed.name!r}, not a runnable pipeline"
            return self._fall_back(query, features, candidates, why)
        confidence = 0.5 if parsed.confidence is None else parsed.confidence
        reasoning = parsed.reasoning or "(the LLM gave no reason)"
        ranking = [(p, confidence if p == chosen else 0.0) for p in by_preference(chosen, candidates)]
        return Choice(chosen, confidence, reasoning, self.name, ranking)

    def _fall_back(self, query: str, features: Features, candidates: Sequence[Pipeline], why: str) -> Choice:
        logger.info("LLM selector fell back: %s", why)
        for selector in self.fallbacks:
            try:
                choice = selector.select(query, features, candidates)
            except WaypostError as exc:
                why += f"; {selector.name} failed ({exc})"
                continue
            choice.reasoning = f"{why}: fell back to {choice.selector}: {choice.reasoning}"
            choice.selector = f"{self.name}>{choice.selector}"
            return choice
        chosen = fallback(candidates)
        return Choice(chosen, 0.0, f"{why}: fell back to the default", self.name)
