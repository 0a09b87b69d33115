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
_CITE = re.compile(r"\[(\d+)\]")


def build_messages(question: str, hits: list[Hit], max_chars: int = 1200) -> list[Message]:
    passages = []
    for i, hit in enumerate(hits, start=1):
        text = " ".join(hit.chunk.text.split())[:max_chars]
        title = hit.provenance.document_title
        passages.append(f"[{i}] {title}: {text}" if title else f"[{i}] {text}")
    user = "Passages:\n" + "\n".join(passages) + f"\n\nQuestion: {question}\nAnswer with citations:"
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def parse_citations(text: str, hits: list[Hit]) -> tuple[str, list[Citation]]:
    """Renumber the passages the model cited, in order of first use; drop numbers that name no passage."""
    mapping: dict[int, int] = {}
    citations: list[Citation] = []
    for m in _CITE.finditer(text):
        n = int(m.group(1))
        if 1 <= n <= len(hits) and n not in mapping:
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

    def renumber(m: re.Match[str]) -> str:
        n = int(m.group(1))
        return f"[{mapping[n]}]" if n in mapping else ""

    return _CITE.sub(renumber, text).strip(), citations


def is_refusal(text: str) -> bool:
    """The reply opens with the refusal sentence the prompt asks for (not merely mentions "cannot")."""
    words = " ".join(re.findall(r"[a-z']+", text.lower()))
    return words.startswith(" ".join(re.findall(r"[a-z']+", CANNOT.lower()))) or words.startswith(
        "i can't answer this from the documents"
    )
