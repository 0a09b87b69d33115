"""Query planning: what a query asks for before any retrieval runs (``QueryPlan``), and running a plan.

``RulePlanner`` reads the query's wording (``route.plan_rules``); ``LLMPlanner`` asks an LLM for the
sub-queries and falls back to the rules on any failure. ``run_plan`` runs a plan's sub-queries
concurrently, fuses them by reciprocal rank and applies the text constraints as post-filters;
``type_filter`` turns the document types it names into a metadata filter."""

from __future__ import annotations

import contextvars
import json
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from pydantic import BaseModel, Field

from waypost.errors import InvalidInputError
from waypost.filters.catalog import FieldCatalog, is_text
from waypost.filters.model import Condition, Filter, Op
from waypost.llm.accounting import PriceTable, QueryMetadata
from waypost.llm.base import GenerationParams, LLMProvider, Message
from waypost.llm.structured import complete_structured
from waypost.route import plan_hints, plan_rules
from waypost.route.base import Planner, QueryPlan
from waypost.route.execute import interleave_results
from waypost.text.analyzers import normalize
from waypost.types import Hit, RetrievalResult

logger = logging.getLogger("waypost.route.planner")

MAX_WORKERS = 4  # sub-queries in flight at once; a plan has at most plan_rules.MAX_SUB_QUERIES (+ the query)
MODES = ("precision", "balanced", "recall")
MAX_SPLIT_CHARS = 1_000  # longer queries are not split nor expanded


class RulePlanner:
    """Plans from the query's own words: splits only questions with several parts (names joined by
    and/or that share a question, explicit comparisons, several questions in one), and states the
    constraints, expansions and mode the wording gives."""

    name = "rules"

    def plan(self, query: str) -> QueryPlan:
        if not isinstance(query, str):
            raise InvalidInputError(f"a query is text, not {type(query).__name__}")
        short = len(query) <= MAX_SPLIT_CHARS  # a pasted document is no multi-part question
        subs, split_reason = plan_rules.sub_queries(query) if short else ([], "")
        include, exclude = plan_rules.include_exclude(query)
        mode, mode_reason = plan_hints.mode(query, include)
        reasons = [f"split: {split_reason}"] if split_reason else []
        if mode_reason:
            reasons.append(f"{mode}: {mode_reason}")
        return QueryPlan(
            query=query,
            sub_queries=subs,
            expansions=plan_hints.expansions(query) if short else [],
            must_include=include,
            must_exclude=exclude,
            date_range=plan_hints.date_range(query),
            document_types=plan_hints.document_types(query),
            collections=plan_hints.collections(query),
            mode=mode,
            planner=self.name,
            reasoning="; ".join(reasons),
        )


class _LLMPlan(BaseModel):
    sub_queries: list[str] = Field(default_factory=list, max_length=plan_rules.MAX_SUB_QUERIES)
    mode: str = "balanced"
    must_include: list[str] = Field(default_factory=list)
    must_exclude: list[str] = Field(default_factory=list)
    reasoning: str = ""


_PROMPT = """You plan searches over a document collection. Split the question into independent search
queries ONLY if it has several parts (a comparison of named things, a list of named things sharing one
question, or several questions). A single question gets an empty list. Keep each sub-query short and
self-contained (repeat the shared predicate). mode is "precision" (exact lookups), "recall" (asks for
all/every/a list/a summary) or "balanced". must_include / must_exclude: words the question explicitly
requires or excludes (quoted phrases, "without X", "not about X"), else empty.

Reply with only JSON: {{"sub_queries": [...], "mode": "...", "must_include": [...], "must_exclude": [...],
"reasoning": "one short sentence"}}

Question: {query}"""


class LLMPlanner:
    """Sub-queries, mode and text constraints from an LLM (JSON, parsed tolerantly); dates, document types
    and collections from the rules. Invalid output falls back to the rule plan and says so in ``reasoning``."""

    name = "llm"

    def __init__(self, llm: LLMProvider, fallback: Planner | None = None, prices: PriceTable | None = None) -> None:
        self.llm = llm
        self.fallback = fallback or RulePlanner()
        self.prices = prices or PriceTable()
        self.last_metadata = QueryMetadata(strategy="planner")  # accounting of the latest plan's LLM calls

    def plan(self, query: str) -> QueryPlan:
        rules = self.fallback.plan(query)
        metadata = QueryMetadata(strategy="planner")
        self.last_metadata = metadata
        messages: list[Message] = [{"role": "user", "content": _PROMPT.format(query=query)}]
        result = complete_structured(
            self.llm,
            messages,
            _LLMPlan,
            metadata,
            self.prices,
            GenerationParams(max_tokens=256),
            step="planner",
        )
        problem = result.error or ""
        if result.value is not None:
            value = result.value
            subs = _clean_list(value.sub_queries, limit=300)
            if value.mode not in MODES:
                problem = f"mode {value.mode!r} is not one of {', '.join(MODES)}"
            elif len(subs) == 1 or any(normalize(s) == normalize(query) for s in subs):
                subs = []  # one sub-query is the question itself: nothing to split
            if not problem:
                return replace(
                    rules,
                    sub_queries=subs,
                    mode=value.mode,
                    must_include=_clean_list(value.must_include, limit=80),
                    must_exclude=_clean_list(value.must_exclude, limit=80),
                    planner=self.name,
                    reasoning=f"llm: {value.reasoning.strip()[:200]}" if value.reasoning.strip() else "llm",
                )
        logger.info("LLM planner fell back to rules: %s", problem)
        why = f"LLM plan invalid ({problem[:160]}); used the rule plan"
        return replace(rules, reasoning=f"{why}; {rules.reasoning}" if rules.reasoning else why)


def _clean_list(items: list[str], limit: int) -> list[str]:
    out = [" ".join(str(s).split())[:limit] for s in items]
    return list(dict.fromkeys(s for s in out if s))


# -- running a plan --------------------------------------------------------------------------------


def _contains(hit: Hit, phrase: str) -> bool:
    """Whole-word, case- and accent-insensitive containment in the hit's title and text."""
    haystack = f" {' '.join(normalize(hit.provenance.document_title + ' ' + hit.chunk.text).split())} "
    needle = " ".join(normalize(phrase).split())
    return bool(needle) and (f" {needle} " in haystack or _word_boundary(haystack, needle))


def _word_boundary(haystack: str, needle: str) -> bool:
    start = haystack.find(needle)
    while start >= 0:
        before = haystack[start - 1] if start > 0 else " "
        after = haystack[start + len(needle)] if start + len(needle) < len(haystack) else " "
        if not before.isalnum() and not after.isalnum():
            return True
        start = haystack.find(needle, start + 1)
    return False


def apply_constraints(plan: QueryPlan, result: RetrievalResult) -> RetrievalResult:
    """``must_exclude`` drops every hit whose title or text contains one of its phrases; ``must_include``
    keeps only hits containing all of its phrases. Either leaves the hits as they are, with a note, when it
    would drop them all: a constraint every hit breaks is more likely the user's wording than an empty
    answer."""
    hits = result.hits
    notes = result.explanation.notes
    if plan.must_exclude:
        kept = [h for h in hits if not any(_contains(h, p) for p in plan.must_exclude)]
        if kept or not hits:
            notes.append(f"must_exclude {plan.must_exclude}: dropped {len(hits) - len(kept)} hits")
            hits = kept
        else:
            notes.append(f"must_exclude {plan.must_exclude}: every hit contains them; kept the hits unfiltered")
    if plan.must_include:
        kept = [h for h in hits if all(_contains(h, p) for p in plan.must_include)]
        if kept or not hits:
            notes.append(f"must_include {plan.must_include}: dropped {len(hits) - len(kept)} hits")
            hits = kept
        else:
            notes.append(f"must_include {plan.must_include}: no hit contains them; kept the hits unfiltered")
    result.hits = hits
    return result


def type_filter(plan: QueryPlan, catalog: FieldCatalog) -> tuple[Filter | None, str]:
    """The plan's document types ("in the PDFs") as a filter on the one text field whose live values name
    them; values match case-insensitively, as filters do (the loaders' ``format``: "pdf"). None, and why,
    when no field or several hold them: the wording then names a topic more likely than a type."""
    if not plan.document_types:
        return None, ""
    holding: dict[str, list[str]] = {}
    for name in catalog.fields:  # a lookup per type and field: never every value of a field
        if is_text(catalog.field_kind(name)):
            found = [t for t in plan.document_types if len(catalog.positions(name, t))]
            if found:
                holding[name] = found
    types = ", ".join(plan.document_types)
    if len(holding) != 1:
        where = "no field holds them" if not holding else f"{len(holding)} fields hold them"
        return None, f"document types {types}: not applied ({where})"
    name, values = next(iter(holding.items()))
    condition = Condition(name, Op.EQ, values[0]) if len(values) == 1 else Condition(name, Op.IN, values)
    return condition, f"document types {types}: filtered on {condition}"


def run_plan(plan: QueryPlan, run: Callable[[str], RetrievalResult], k: int) -> RetrievalResult:
    """Run ``plan``: the query alone when it has no sub-queries; else the query and its sub-queries
    concurrently (a small thread pool), interleaved by rank (the query first) and deduplicated by chunk. Then the
    text constraints are applied as post-filters on hit text (``apply_constraints``); give ``run`` a depth
    beyond ``k`` when the plan has them. Expansions, the date range and document types are not applied
    here (the router filters on document types: ``type_filter``). The plan is recorded in the notes."""
    if k < 1:
        raise InvalidInputError(f"k must be at least 1, got {k}")
    if not plan.sub_queries:
        result = run(plan.query)
    else:
        queries = list(dict.fromkeys([plan.query, *plan.sub_queries]))
        with ThreadPoolExecutor(max_workers=min(MAX_WORKERS, len(queries)), thread_name_prefix="waypost-plan") as pool:
            # each part runs in a copy of this context: the search's query vectors (``one_search``) reach it
            futures = [pool.submit(contextvars.copy_context().run, run, q) for q in queries]
            results = [f.result() for f in futures]
        result = interleave_results(plan.query, results, max(k, max(len(r.hits) for r in results)))
        result.explanation.notes.append(f"sub-queries: {json.dumps(plan.sub_queries, ensure_ascii=False)}")
    if plan.must_include or plan.must_exclude:
        result = apply_constraints(plan, result)
    result.hits = result.hits[:k]
    result.explanation.notes.append("plan: " + json.dumps(plan.to_dict(), ensure_ascii=False))
    return result
