"""Community reports written by an LLM (GraphRAG's community summaries).

The LLM reads what the extractive reporter finds (the key members, the strongest relations, the sentences
naming most members) and writes a title and a short summary; without a title the extractive one stays. The
report keeps that material under the summary, so ranking a report by its words never loses a member's name,
and it cites the same chunk rows as the extractive one. Replies come through the provider's cache, keyed by
the prompt, so a rebuild over unchanged communities replays them; a failed call or a reply with no summary
falls back to the extractive report and is counted in ``usage.fallbacks``. Tokens and cost add up in
``usage``.
"""

from __future__ import annotations

import re

from waypost.graph.communities import ExtractiveReporter
from waypost.graph.graph import Community, KnowledgeGraph
from waypost.llm.accounting import PriceTable, QueryMetadata
from waypost.llm.base import GenerationParams, LLMError, LLMProvider, Message
from waypost.llm.cache import derived_from

REPORT_PROMPT = (
    "Below are entities of a knowledge graph that belong together, the relations between them and sentences "
    "that mention them. Write a report on what connects them. Use only the material given; keep names and "
    "numbers. Reply in this format:\nTitle: <a short title>\nSummary: <two to four sentences>"
)
TITLE_CHARS = 120
_TITLE = re.compile(r"^\W*title\W*:\s*", re.IGNORECASE)
_HEADING = re.compile(r"^(?:#+\s|\*\*.+\*\*$)")
_SUMMARY = re.compile(r"^\W*(?:summary|report)\W*:\s*", re.IGNORECASE)


class LLMReporter:
    """``report`` returns (title, text, cited rows) like every ``CommunityReporter``."""

    def __init__(
        self,
        llm: LLMProvider,
        fallback: ExtractiveReporter | None = None,
        prices: PriceTable | None = None,
        max_tokens: int = 200,
    ) -> None:
        self.llm = llm
        self.fallback = fallback or ExtractiveReporter()
        self.prices = prices or PriceTable()
        self.max_tokens = max_tokens
        self.usage = QueryMetadata(strategy="community reports")

    @property
    def name(self) -> str:
        return f"llm:{self.llm.model_id}"

    def report(self, graph: KnowledgeGraph, community: Community) -> tuple[str, str, list[int]]:
        title, material, rows = self.fallback.report(graph, community)
        body = material.split("\n", 1)[1] if "\n" in material else material
        messages: list[Message] = [{"role": "user", "content": f"{REPORT_PROMPT}\n\n{body}"}]
        sources = {row for m in community.members for row in graph.entities[m].rows}
        try:
            with derived_from(rows=sources | set(rows)):  # cached as derived from every member's chunk rows
                completion = self.llm.complete(messages, GenerationParams(max_tokens=self.max_tokens, temperature=0.0))
        except LLMError as exc:
            self.usage.add_fallback(f"community {community.id}: {exc}")
            return title, material, rows
        self.usage.record(completion, self.prices)
        written = parse_report(completion.text)
        if written is None:
            self.usage.add_fallback(f"community {community.id}: no summary in {completion.text[:80]!r}")
            return title, material, rows
        written_title, summary = written
        title = written_title or title
        return title, f"{title}\n{summary}\n{body}", rows


def parse_report(reply: str) -> tuple[str, str] | None:
    """(title, summary) from a reply: the title is the line labelled ``Title:`` or a heading (``# ...``,
    ``**...**``) on the first line, else ""; the summary is the rest (its ``Summary:`` label dropped).
    None when the reply has no summary."""
    lines = [line.strip() for line in reply.strip().splitlines() if line.strip()]
    titled = next((i for i, line in enumerate(lines) if _TITLE.match(line)), None)
    if titled is not None:
        title, rest = _TITLE.sub("", lines[titled]), lines[:titled] + lines[titled + 1 :]
        summed = next((i for i, line in enumerate(rest) if _SUMMARY.match(line)), None)
        rest = rest[summed:] if summed is not None else rest
    elif lines and _HEADING.match(lines[0]):
        title, rest = lines[0], lines[1:]
    else:
        title, rest = "", lines
    title = title.strip(" *#\"'").strip()
    summary = " ".join(_SUMMARY.sub("", line) for line in rest).strip()
    if not summary:
        return None
    if len(title) > TITLE_CHARS:
        title = title[:TITLE_CHARS].rsplit(" ", 1)[0] + "…"
    return title, summary


__all__ = ["LLMReporter", "parse_report"]
