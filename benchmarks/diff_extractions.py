"""Every extraction of a catalogue's rule extractor, saved to compare two versions of the code.

The catalogue's metadata (one row per document of a BEIR-layout set, default netflix) is indexed with
``MetadataIndex.build``; its own queries (as written and lower-cased) and the questions of other sets (which are
not catalogue queries) go through ``FilterExtractor.extract``. ``--out`` saves them; ``--compare`` reports the
queries whose conditions differ from a saved run. The clock is pinned, so relative dates compare.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=<older checkout>/src .venv/bin/python benchmarks/diff_extractions.py \
        --out /tmp/extractions-old.json
    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src .venv/bin/python benchmarks/diff_extractions.py \
        --compare /tmp/extractions-old.json
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
from datetime import date
from pathlib import Path

from waypost.filters.extract import FilterExtractor
from waypost.index.metadata import MetadataIndex

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
OTHERS = ("hotpotqa-100", "scifact", "xquad-th", "qmsum")
TODAY = date(2026, 11, 27)


def lines(path: Path) -> list[dict[str, object]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def extractions(catalogue: Path, others: list[Path]) -> dict[str, dict[str, list[str]]]:
    rows = [dict(doc.get("metadata") or {}) for doc in lines(catalogue / "corpus.jsonl")]  # type: ignore[call-overload]
    extractor = FilterExtractor(MetadataIndex.build(rows), today=lambda: TODAY)

    def read(text: str) -> list[str]:
        return sorted(str(c) for c in extractor.extract(text).conditions)

    own: dict[str, list[str]] = {}
    for q in lines(catalogue / "queries.jsonl"):
        for text in (str(q["text"]), str(q["text"]).lower()):
            own[text] = read(text)
    other: dict[str, list[str]] = {}
    for path in others:
        for q in lines(path / "queries.jsonl"):
            found = read(str(q["text"]))
            if found:  # a question that is no catalogue query got a filter
                other[str(q["text"])] = found
    return {"catalogue": own, "others": other}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--catalogue", type=Path, default=DATA / "netflix")
    parser.add_argument("--other", type=Path, action="append", default=None, help="another set (repeat)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--compare", type=Path, default=None, help="a run saved with --out")
    args = parser.parse_args()
    now = extractions(args.catalogue, args.other or [DATA / name for name in OTHERS])
    if args.out is not None:
        args.out.write_text(json.dumps(now, indent=0), encoding="utf-8")
    summary: dict[str, object] = {part: len(found) for part, found in now.items()}
    if args.compare is not None:
        before = json.loads(args.compare.read_text(encoding="utf-8"))
        for part in ("catalogue", "others"):
            texts = sorted(set(before[part]) | set(now[part]))
            summary[f"{part}_changed"] = [
                {"query": t, "before": before[part].get(t, []), "now": now[part].get(t, [])}
                for t in texts
                if before[part].get(t, []) != now[part].get(t, [])
            ]
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
