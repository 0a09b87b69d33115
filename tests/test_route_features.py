"""Router features: every name present and finite, cheap, and reading what the query says."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.route_corpus import QUERIES, make_engine
from waypost.base import Embedder
from waypost.engine import Engine
from waypost.route.features import FEATURE_NAMES, extract_features, query_features


@pytest.fixture
def engine(tmp_path: Path, minilm: Embedder) -> Iterator[Engine]:
    engine = make_engine(tmp_path / "store", minilm)
    yield engine
    engine.close()


def test_every_feature_is_present_and_finite(engine: Engine) -> None:
    ctx = engine.collection("c").context()
    for query in QUERIES:
        found = extract_features(query, ctx, k=5)
        assert set(found.features) == set(FEATURE_NAMES)
        assert all(math.isfinite(v) for v in found.features.values())
        assert found.first_stage.hits and found.first_stage.explanation.strategy == "hybrid"


def test_first_stage_is_the_hybrid_result(engine: Engine) -> None:
    coll = engine.collection("c")
    found = extract_features(QUERIES[0], coll.context(), k=5, fusion=engine.config.fusion)
    plain = coll.retrieve(QUERIES[0], "hybrid", 5)
    assert [h.chunk.text for h in found.first_stage.hits] == [h.chunk.text for h in plain.hits]


def test_features_read_the_query() -> None:
    names = query_features('Who is older, Odile Brask or Tomas Vell? Compare "their" careers in parse_config')
    assert names["q_who"] == 1 and names["q_how"] == 0
    assert names["entities"] == 4  # Odile, Brask, Tomas, Vell; not "Who", not "Compare" after "?"
    assert names["comparison_cues"] >= 2 and names["quoted"] == 1 and names["code_tokens"] >= 1
    summary = query_features("Summarize the main points of the discussion about the budget")
    assert summary["summary_cues"] >= 2 and summary["comparison_cues"] == 0
    assert query_features("Does it rain?")["q_yesno"] == 1


def test_filters_and_rare_terms_come_from_the_collection(engine: Engine) -> None:
    ctx = engine.collection("c").context()
    plain = extract_features("barley soup", ctx).features
    filtered = extract_features("biography from 2021", ctx).features
    assert plain["filter_conditions"] == 0 and plain["filter_selectivity"] == 0
    assert filtered["filter_conditions"] >= 1 and 0 < filtered["filter_selectivity"] < 1
    rare = extract_features("Lunmark lighthouse", ctx).features
    common = extract_features("council session", ctx).features
    assert rare["idf_max"] > common["idf_max"]
    assert plain["metadata_fields"] == 2 and plain["doc_tokens_log"] > 0
