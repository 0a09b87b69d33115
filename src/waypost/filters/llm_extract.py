"""Filter extraction by an LLM, checked against the collection's real fields and values.

The model sees each field with its kind and some of its values and answers in JSON. Every field,
operator and string value it returns must exist in the collection; any miss, malformed reply or
provider failure falls back to the rule-based ``FilterExtractor`` and the fallback is recorded.
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, Field

from waypost.filters.dates import format_day, period
from waypost.filters.extract import Extraction, FilterExtractor
from waypost.filters.model import Condition, Filter, Op, all_of
from waypost.llm.accounting import PriceTable, QueryMetadata
from waypost.llm.base import GenerationParams, LLMProvider, Message
from waypost.llm.structured import complete_structured


class FilterSpec(BaseModel):
    field: str
    op: Literal["eq", "in", "ne", "nin", "gt", "gte", "lt", "lte"]
    value: str | int | float | list[str | int | float]


class ExtractionReply(BaseModel):
    filters: list[FilterSpec] = Field(default_factory=list)
    query: str = ""


class InvalidExtraction(ValueError):
    pass


class LLMFilterExtractor:
    def __init__(
        self, llm: LLMProvider, fallback: FilterExtractor, prices: PriceTable | None = None, max_examples: int = 12
    ) -> None:
        self.llm = llm
        self.fallback = fallback
        self.prices = prices or PriceTable()
        self.max_examples = max_examples

    def schema_text(self) -> str:
        index = self.fallback.index
        lines = []
        for name in index.fields:
            dates = index.date_range(name) if index.field_kind(name) == "date" else None
            if dates is not None:
                lo, hi = format_day(dates[0]), format_day(dates[1])
                lines.append(f"- {name}: date from {lo} to {hi} (compare with YYYY-MM-DD, YYYY-MM or a year)")
                continue
            rng = index.numeric_range(name)
            if rng is not None:
                lines.append(f"- {name}: number from {rng[0]:g} to {rng[1]:g}")
                continue
            values = index.values(name)
            if 0 < len(values) <= 300:
                top = sorted(values, key=lambda v: -values[v])[: self.max_examples]
                more = f" (and {len(values) - len(top)} more)" if len(values) > len(top) else ""
                lines.append(f"- {name}: text, one of {json.dumps(top)}{more}")
        return "\n".join(lines)

    def messages(self, query: str) -> list[Message]:
        system = (
            "You turn a search request into metadata filters. Fields:\n" + self.schema_text() + "\n"
            'Reply with JSON only: {"filters": [{"field": "...", "op": "eq|in|ne|nin|gt|gte|lt|lte", "value": ...}], '
            '"query": "the words of the request that are not filters"}. Use only the fields and values listed; '
            'ne and nin exclude values ("not from Spain": country ne Spain).'
        )
        return [{"role": "system", "content": system}, {"role": "user", "content": query}]

    def _validate(self, reply: ExtractionReply) -> list[Condition]:
        index = self.fallback.index
        conds: list[Condition] = []
        for spec in reply.filters:
            kind = index.field_kind(spec.field)
            if kind is None:
                raise InvalidExtraction(f"unknown field {spec.field!r}")
            op = Op(spec.op)
            values = spec.value if isinstance(spec.value, list) else [spec.value]
            if kind == "date":
                if any(period(v) is None for v in values):
                    raise InvalidExtraction(f"{spec.field} needs dates, got {spec.value!r}")
            elif kind == "number":
                if not all(isinstance(v, (int, float)) for v in values):
                    raise InvalidExtraction(f"{spec.field} needs numbers, got {spec.value!r}")
            else:
                known = {k.casefold(): k for k in index.values(spec.field)}
                if op not in (Op.EQ, Op.IN, Op.NE, Op.NIN) or any(str(v).casefold() not in known for v in values):
                    raise InvalidExtraction(f"{spec.field} has no value {spec.value!r}")
                values = [known[str(v).casefold()] for v in values]
            if op not in (Op.IN, Op.NIN) and len(values) != 1:
                raise InvalidExtraction(f"{spec.field} {op.value} takes one value, got {spec.value!r}")
            value = values if op in (Op.IN, Op.NIN) else values[0]
            conds.append(Condition(spec.field, op, value))
        return conds

    def extract(self, query: str, metadata: QueryMetadata | None = None) -> Extraction:
        metadata = metadata if metadata is not None else QueryMetadata("filters")
        result = complete_structured(
            self.llm,
            self.messages(query),
            ExtractionReply,
            metadata,
            self.prices,
            GenerationParams(max_tokens=256),
            step="filter extraction",
        )
        if result.value is not None:
            try:
                conds = self._validate(result.value)
            except (InvalidExtraction, ValueError) as exc:
                metadata.fallbacks.append(f"filter extraction: {exc}; used the rule-based extractor")
            else:
                flt: Filter | None = all_of(list(conds))
                notes = [f"LLM -> {c}" for c in conds]
                return Extraction(flt, result.value.query.strip(), notes)
        else:
            metadata.fallbacks[-1] += "; used the rule-based extractor"
        return self.fallback.extract(query)
