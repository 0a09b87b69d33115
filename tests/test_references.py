import numpy as np

from waypost.index.references import reference_targets
from waypost.retrieval.fusion import FusionConfig, follow_references

TITLES = {"nolan": "Christopher Nolan", "lond": "London", "love": "love", "water": "Water", "film": "Inception"}
TEXTS = [
    "Inception is a 2010 film directed by Christopher Nolan.",  # film -> nolan
    "Christopher Nolan was born in London and loves water.",  # nolan -> lond (water is lower-case here)
    "London is the capital.",
    "All you need is love.",
    "Water covers most of Earth.",
]
DOCS = ["film", "nolan", "lond", "love", "water"]


def test_links_follow_titles_case_sensitively() -> None:
    targets = reference_targets(TEXTS, DOCS, TITLES)
    assert targets[0].tolist() == [1]
    assert targets[1].tolist() == [2]
    assert [t.tolist() for t in targets[2:]] == [[], [], []]  # no self links, no lower-case words


def test_follow_references_boosts_the_second_hop_and_respects_the_mask() -> None:
    targets = reference_targets(TEXTS, DOCS, TITLES)

    def links(seeds: np.ndarray) -> list[np.ndarray]:
        return [targets[int(s)] for s in seeds]

    positions, scores = np.array([0, 3]), np.array([1.0, 0.5], dtype=np.float32)
    cfg = FusionConfig(reference_weight=0.6, reference_seeds=1)
    pos, sc, stage = follow_references(positions, scores, links, cfg, None)
    assert pos.tolist() == [0, 1, 3] and sc.tolist() == [1.0, 0.6000000238418579, 0.5]
    assert stage == {1: (1, 0.6)}
    mask = np.array([True, False, True, True, True])
    pos, _, stage = follow_references(positions, scores, links, cfg, mask)
    assert pos.tolist() == [0, 3] and stage == {}
    off = FusionConfig(reference_weight=0.0)
    assert follow_references(positions, scores, links, off, None)[0].tolist() == [0, 3]
