"""Share of chunks the embedding model would truncate: chunk each shared set as ingest does, then count
each chunk's embedder input (title and headings + text) with the model's own tokenizer.

    PYTHONPATH=src python benchmarks/chunk_window.py [--data ../shared/data] [--budgets 200,64]

Per set and budget it prints the chunks, how many exceed the model's window (special tokens included),
and the same with the model-free estimate alone (``--no-window``: the chunker before it knew the
tokenizer), plus how many documents' chunks differ between the two."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator
from pathlib import Path

from waypost.embeddings.sentence_transformer import SentenceTransformerEmbedder
from waypost.ingest.chunker import Chunker
from waypost.ingest.loaders import load_path
from waypost.types import Document, index_text

SETS = ("scifact", "hotpotqa-100", "netflix", "qmsum", "xquad-en", "xquad-de", "xquad-th", "xquad-zh")


def documents(corpus: Path) -> Iterator[Document]:
    for item in load_path(corpus, corpus.parent):
        if isinstance(item, Document):
            yield item


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    parser.add_argument("--budgets", default="200,64", help="chunk token budgets (200: default; 64: README eval)")
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    embedder = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    window = embedder.max_input_tokens
    rows = []
    for name in args.sets.split(","):
        docs = list(documents(args.data / name / "corpus.jsonl"))
        for budget in (int(b) for b in args.budgets.split(",")):
            row: dict[str, object] = {"set": name, "budget": budget, "documents": len(docs), "window": window}
            per_doc: dict[str, list[list[tuple[int, int]]]] = {}
            for label, chunker in (("estimate", Chunker(budget)), ("window", Chunker(budget, embedder, index_text))):
                started = time.perf_counter()
                inputs, spans = [], []
                for doc in docs:
                    chunks = chunker.chunk(doc.id, doc.text, doc.title)
                    assert all(doc.text[c.start : c.end] == c.text for c in chunks), doc.id
                    inputs.extend(index_text(doc.title, c.section, c.text) for c in chunks)
                    spans.append([(c.start, c.end) for c in chunks])
                counts = embedder.count_input_tokens(inputs)
                over = sum(n > window for n in counts)
                row[f"{label}_chunks"] = len(counts)
                row[f"{label}_over"] = over
                row[f"{label}_share_over"] = round(over / max(1, len(counts)), 5)
                row[f"{label}_max_tokens"] = max(counts, default=0)
                row[f"{label}_seconds"] = round(time.perf_counter() - started, 2)
                per_doc[label] = spans
            row["documents_changed"] = sum(a != b for a, b in zip(per_doc["estimate"], per_doc["window"], strict=True))
            rows.append(row)
            if not args.json:
                print(
                    f"{name:13} budget {budget:3}: {row['window_chunks']:6} chunks, over the {window}-token window "
                    f"{row['window_over']} ({row['window_share_over']:.2%}; longest {row['window_max_tokens']}) | "
                    f"estimate alone: {row['estimate_chunks']} chunks, {row['estimate_over']} over "
                    f"({row['estimate_share_over']:.2%}; longest {row['estimate_max_tokens']}) | "
                    f"documents chunked differently: {row['documents_changed']}",
                    flush=True,
                )
    if args.json:
        print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
