"""Two tiny invented BEIR-layout sets for the router training and mixed-benchmark tests: short facts
about invented islands (one document answers each question) and invented recipes (a keyword set)."""

from __future__ import annotations

import json
from pathlib import Path

from waypost.evaluation.splits import query_split

ISLANDS = [
    ("orrin", "Orrin Island", "Orrin Island is a volcanic island whose capital Vessa exports basalt and wool."),
    ("tamsk", "Tamsk", "Tamsk is a flat coral atoll; its people fish for tuna and build reed boats."),
    ("gellow", "Gellow", "Gellow lies in a cold strait; a lighthouse built in 1842 guards its northern cape."),
    ("brynna", "Brynna", "Brynna is famous for its salt marshes and for the heron festival held each spring."),
    ("quell", "Quell Isle", "Quell Isle has a single mountain, Mount Arvid, and a monastery that brews cider."),
    ("pirra", "Pirra", "Pirra trades copper with the mainland and keeps an old observatory on its hill."),
]
ISLAND_QUESTIONS = [
    ("i1", "Which island exports basalt and wool?", "orrin"),
    ("i2", "Where do people build reed boats and fish for tuna?", "tamsk"),
    ("i3", "Which island has a lighthouse from 1842?", "gellow"),
    ("i4", "What island holds a heron festival in spring?", "brynna"),
    ("i5", "Which isle has a monastery that brews cider?", "quell"),
    ("i6", "Where is copper traded and an observatory kept?", "pirra"),
    ("i7", "What is the capital of Orrin Island?", "orrin"),
    ("i8", "Which atoll is made of coral?", "tamsk"),
    ("i9", "Name the mountain of Quell Isle.", "quell"),
    ("i10", "Which island has salt marshes?", "brynna"),
]
RECIPES = [
    ("r-barley", "Barley soup", "Simmer pearl barley with leeks, carrots and thyme for ninety minutes."),
    ("r-flatbread", "Flatbread", "Knead flour, water and salt; bake the flatbread on a hot stone."),
    ("r-pickles", "Pickles", "Pack cucumbers with dill and garlic in brine for two weeks."),
    ("r-stew", "Lamb stew", "Brown lamb shoulder, add turnips and rosemary, and stew slowly."),
    ("r-tart", "Plum tart", "Lay sliced plums over almond cream in a butter crust and bake."),
    ("r-broth", "Fish broth", "Boil fish bones with fennel and bay leaves, then strain the broth."),
]
RECIPE_QUESTIONS = [
    ("c1", "barley leeks thyme", "r-barley"),
    ("c2", "flatbread hot stone", "r-flatbread"),
    ("c3", "cucumbers dill brine", "r-pickles"),
    ("c4", "lamb turnips rosemary", "r-stew"),
    ("c5", "plums almond cream", "r-tart"),
    ("c6", "fish bones fennel", "r-broth"),
    ("c7", "pearl barley soup", "r-barley"),
    ("c8", "garlic pickles", "r-pickles"),
    ("c9", "stew lamb shoulder", "r-stew"),
    ("c10", "strain broth bay leaves", "r-broth"),
]


def write_set(root: Path, docs: list[tuple[str, str, str]], questions: list[tuple[str, str, str]]) -> Path:
    (root / "qrels").mkdir(parents=True)
    with (root / "corpus.jsonl").open("w") as fh:
        for doc_id, title, text in docs:
            fh.write(json.dumps({"_id": doc_id, "title": title, "text": text}) + "\n")
    with (root / "queries.jsonl").open("w") as fh:
        for qid, text, _ in questions:
            fh.write(json.dumps({"_id": qid, "text": text}) + "\n")
    with (root / "qrels" / "test.tsv").open("w") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        for qid, _, doc_id in questions:
            fh.write(f"{qid}\t{doc_id}\t1\n")
    splits = {query_split(qid) for qid, _, _ in questions}
    assert splits == {"train", "test"}, "the invented query ids must fall on both sides of the split"
    return root


def write_sets(tmp_path: Path) -> list[Path]:
    return [
        write_set(tmp_path / "islands", ISLANDS, ISLAND_QUESTIONS),
        write_set(tmp_path / "recipes", RECIPES, RECIPE_QUESTIONS),
    ]
