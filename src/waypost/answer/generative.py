"""LLM answers grounded in numbered passages, with [n] citations mapped back to document spans."""

from __future__ import annotations

import re

from waypost.answer.model import Citation
from waypost.llm.base import Message
from waypost.types import Hit

CANNOT = "I cannot answer this from the documents."
SYSTEM = (
    "You answer questions using only the numbered passages you are given. "
    "After each claim, cite the passage it comes from as [1], [2] and so on. "
    f"If the passages do not contain the answer, reply exactly: {CANNOT}"
)
_CITE = re.compile(r"\[(\d+(?:\s*[,\u2013-]\s*\d+)*)\]")


def build_messages(question: str, hits: list[Hit], max_chars: int = 1200) -> list[Message]:
    passages = []
    for i, hit in enumerate(hits, start=1):
        text = " ".join(hit.chunk.text.split())[:max_chars]
        title = hit.provenance.document_title
        passages.append(f"[{i}] {title}: {text}" if title else f"[{i}] {text}")
    user = "Passages:\n" + "\n".join(passages) + f"\n\nQuestion: {question}\nAnswer with citations:"
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def _numbers(marker: str) -> list[int]:
    """``1``, ``1, 3`` or ``2-4`` -> the passage numbers they name."""
    out: list[int] = []
    for part in re.split(r"\s*,\s*", marker.replace("\u2013", "-").strip()):
        lo, _, hi = (p.strip() for p in part.partition("-"))
        if hi:
            out.extend(range(int(lo), int(hi) + 1))
        elif lo:
            out.append(int(lo))
    return out


def parse_citations(text: str, hits: list[Hit]) -> tuple[str, list[Citation]]:
    """Renumber cited passages in order of first use. Markers naming no passage are dropped when they
    look like passage numbers (up to twice the passage count); anything else in brackets, such as a
    year, is left alone."""
    mapping: dict[int, int] = {}
    citations: list[Citation] = []
    limit = 2 * len(hits)

    def renumber(m: re.Match[str]) -> str:
        numbers = _numbers(m.group(1))
        if any(n > limit for n in numbers):
            return m.group(0)  # "[2020]" is a year, not a citation
        kept: list[int] = []
        for n in numbers:
            if 1 <= n <= len(hits):
                if n not in mapping:
                    mapping[n] = len(mapping) + 1
                    hit = hits[n - 1]
                    citations.append(
                        Citation(
                            mapping[n],
                            hit.document_id,
                            hit.provenance.document_title,
                            hit.chunk.start,
                            hit.chunk.end,
                            hit.chunk.text,
                        )
                    )
                if mapping[n] not in kept:
                    kept.append(mapping[n])
        return "".join(f"[{k}]" for k in kept)

    clean = _CITE.sub(renumber, text)
    clean = re.sub(r"[ \t]+([.,;:!?])", r"\1", re.sub(r"[ \t]{2,}", " ", clean))
    return clean.strip(), citations


def is_refusal(text: str) -> bool:
    """The reply opens with the refusal sentence the prompt asks for (not merely mentions "cannot")."""
    words = " ".join(re.findall(r"[a-z']+", text.lower()))
    return words.startswith(" ".join(re.findall(r"[a-z']+", CANNOT.lower()))) or words.startswith(
        "i can't answer this from the documents"
    )
