"""Pipeline selectors without a store: the LLM selector's parsing and fallbacks (a fake LLM), the learned
selector's ties, threshold and low-confidence policies (a hand-built gain model), the heuristic rules."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from waypost.llm.base import Completion, GenerationParams, LLMError, Message
from waypost.route.base import Choice, Features, Pipeline
from waypost.route.candidates import pipeline_cost
from waypost.route.features import FEATURE_NAMES
from waypost.route.selectors.heuristic import HeuristicSelector
from waypost.route.selectors.learned import LearnedSelector
from waypost.route.selectors.llm import LLMSelector, match_candidate, parse_reply
from waypost.route.selectors.round_robin import RoundRobinSelector

HYBRID = Pipeline.of("hybrid")
BM25 = Pipeline.of("bm25")
DENSE = Pipeline.of("dense")
PASSAGES = Pipeline.of("hybrid", passages={})
TREE = Pipeline.of("raptor-collapsed")
GRAPH = Pipeline.of("hipporag")
METADATA = Pipeline.of("metadata")
POOL = [DENSE, BM25, HYBRID, METADATA, PASSAGES]


def features(**values: float) -> Features:
    out = dict.fromkeys(FEATURE_NAMES, 0.0)
    out.update(values)
    return out


class FakeLLM:
    """Replies ``reply`` (or raises), and keeps the prompts."""

    model_id = "fake-router"

    def __init__(self, reply: str | None) -> None:
        self.reply = reply
        self.prompts: list[str] = []

    def complete(self, messages: list[Message], params: GenerationParams | None = None) -> Completion:
        self.prompts.append(messages[-1]["content"])
        if self.reply is None:
            raise LLMError("the server is down")
        return Completion(self.reply, self.model_id)


class FixedGains:
    """A hand-built gain model: fixed gains, confidence from the margin between the best two."""

    def __init__(self, gains: Mapping[str, float], threshold: float = 0.0, low_confidence: str = "default") -> None:
        self.gains = dict(gains)
        self.pipelines = [HYBRID, BM25, DENSE, PASSAGES]
        self.default = HYBRID
        self.threshold = threshold
        self.low_confidence = low_confidence

    def predict(self, features: Features) -> dict[str, float]:
        return dict(self.gains)

    def confidence(self, gains: Mapping[str, float]) -> float:
        top = sorted(gains.values(), reverse=True)
        return min(1.0, 0.5 + 5 * (top[0] - top[1])) if len(top) > 1 else 1.0

    def unfamiliar(self, features: Features) -> str | None:
        return None


# -- LLM ---------------------------------------------------------------------------------------------------
def test_parse_good_and_messy_replies() -> None:
    good = parse_reply("STRATEGY: bm25\nCONFIDENCE: 0.7\nREASONING: an error code")
    assert good is not None and (good.name, good.confidence, good.reasoning) == ("bm25", 0.7, "an error code")
    messy = parse_reply(
        "Sure! Here is my pick.\n\n**Strategy**: `Hybrid+Passages`\n- confidence = 80%\nReason: long docs\n"
    )
    assert messy is not None and messy.name == "Hybrid+Passages" and messy.confidence == 0.8
    assert messy.reasoning == "long docs"
    assert parse_reply("I think hybrid is best.") is None
    assert parse_reply("STRATEGY:\nCONFIDENCE: 0.9") is None


def test_match_candidates_by_case_number_and_near_miss() -> None:
    assert match_candidate("HYBRID", POOL) == HYBRID
    assert match_candidate("hybrid + passages", POOL) == PASSAGES
    assert match_candidate("3", POOL) == HYBRID
    assert match_candidate("4. metadata", POOL) == METADATA
    assert match_candidate("metadta", POOL) == METADATA  # one letter off
    assert match_candidate("hipporag", POOL) is None  # a real strategy, but not a candidate here
    assert match_candidate("web-search", POOL) is None  # invented


def test_llm_choice_lists_only_candidates() -> None:
    llm = FakeLLM("blah\nSTRATEGY: bm25\nCONFIDENCE: 0.65\nREASONING: exact code\nthanks")
    choice = LLMSelector(llm, [HeuristicSelector()]).select("error E1047", features(), POOL)
    assert choice.pipeline == BM25 and choice.confidence == 0.65 and choice.selector == "llm"
    assert choice.reasoning == "exact code"
    assert "hipporag" not in llm.prompts[0] and "bm25" in llm.prompts[0]


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ("STRATEGY: graph-wizard\nCONFIDENCE: 0.99", "not a runnable pipeline"),
        ("STRATEGY: hipporag\nCONFIDENCE: 0.9", "not a runnable pipeline"),
        ("I cannot decide.", "named no strategy"),
        (None, "the LLM failed"),
    ],
)
def test_invalid_llm_output_falls_back_to_learned_and_says_so(reply: str | None, why: str) -> None:
    learned = LearnedSelector(FixedGains({"hybrid": 0.0, "bm25": 0.2, "dense": -0.1}))
    choice = LLMSelector(FakeLLM(reply), [learned, HeuristicSelector()]).select("q", features(), POOL)
    assert choice.pipeline == BM25
    assert choice.selector == "llm>learned"
    assert why in choice.reasoning and "fell back to learned" in choice.reasoning


def test_llm_falls_back_to_heuristic_when_learned_fails() -> None:
    class Broken:
        name = "learned"

        def select(self, query: str, features: Features, candidates: Sequence[Pipeline]) -> Choice:
            from waypost.errors import WaypostError

            raise WaypostError("profile unreadable")

    choice = LLMSelector(FakeLLM("nonsense"), [Broken(), HeuristicSelector()]).select("q", features(), POOL)
    assert choice.selector == "llm>heuristic" and choice.pipeline == HYBRID
    assert "learned failed (profile unreadable)" in choice.reasoning


# -- learned -----------------------------------------------------------------------------------------------
def test_learned_picks_the_best_gain_among_candidates() -> None:
    model = FixedGains({"hybrid": 0.0, "bm25": 0.05, "dense": 0.3, "hybrid+passages": 0.1})
    choice = LearnedSelector(model).select("q", features(), [HYBRID, BM25, PASSAGES])  # dense not runnable
    assert choice.pipeline == PASSAGES
    assert [p for p, _ in choice.ranking] == [PASSAGES, BM25, HYBRID]


def test_learned_ties_go_to_the_cheaper_pipeline() -> None:
    assert pipeline_cost(BM25) < pipeline_cost(DENSE) < pipeline_cost(HYBRID)
    model = FixedGains({"hybrid": 0.0, "bm25": 0.201, "dense": 0.203})
    choice = LearnedSelector(model).select("q", features(), [HYBRID, BM25, DENSE])
    assert choice.pipeline == BM25  # 0.002 behind dense: a tie, and bm25 is cheaper
    clear = FixedGains({"hybrid": 0.0, "bm25": 0.18, "dense": 0.203})
    assert LearnedSelector(clear).select("q", features(), [HYBRID, BM25, DENSE]).pipeline == DENSE


def test_below_the_threshold_the_default_or_the_top_two_fused() -> None:
    gains = {"hybrid": 0.0, "bm25": 0.05, "dense": 0.04}  # margin 0.01: confidence 0.55
    default = LearnedSelector(FixedGains(gains, threshold=0.7, low_confidence="default"))
    choice = default.select("q", features(), [HYBRID, BM25, DENSE])
    assert choice.pipeline == HYBRID and "reliability default" in choice.reasoning
    assert choice.confidence == pytest.approx(0.55)
    fused = LearnedSelector(FixedGains(gains, threshold=0.7, low_confidence="fuse")).select(
        "q", features(), [HYBRID, BM25, DENSE]
    )
    assert fused.pipeline == Pipeline.fusion([BM25, DENSE]) and "fused" in fused.reasoning
    sure = LearnedSelector(FixedGains(gains, threshold=0.5)).select("q", features(), [HYBRID, BM25, DENSE])
    assert sure.pipeline == BM25


# -- heuristic and round-robin ----------------------------------------------------------------------------
def test_heuristic_rules_follow_capabilities() -> None:
    rules = HeuristicSelector()
    long_docs = {"doc_tokens_log": 9.0}
    strong = features(filter_conditions=1, filter_selectivity=0.9)
    assert rules.select("q", strong, POOL).pipeline == METADATA
    assert rules.select("q", features(filter_conditions=1, filter_selectivity=0.1), POOL).pipeline == HYBRID
    # an exclusion ("not Indian") is applied however little it drops: the query's words find what it excludes
    excluding = rules.select("q", features(filter_conditions=1, filter_selectivity=0.1, filter_exclusions=1), POOL)
    assert excluding.pipeline == METADATA and "exclude values" in excluding.reasoning
    summary = features(summary_cues=1, **long_docs)
    assert rules.select("q", summary, [*POOL, TREE]).pipeline == TREE
    assert rules.select("q", summary, POOL).pipeline == PASSAGES  # no tree runnable: passages instead
    compare = features(comparison_cues=1, entities=2, graph_entities=2, graph_loaded=1)
    assert rules.select("q", compare, [*POOL, GRAPH]).pipeline == GRAPH
    assert rules.select("q", compare, POOL).pipeline == HYBRID  # no graph runnable
    assert rules.select("q", features(), POOL).pipeline == HYBRID


def test_round_robin_visits_every_candidate() -> None:
    rr = RoundRobinSelector()
    seen = [rr.select("q", features(), POOL).pipeline for _ in range(len(POOL))]
    assert sorted(p.label for p in seen) == sorted(p.label for p in POOL)


def test_a_low_confidence_default_stays_unfused() -> None:
    gains = {"hybrid": 0.0, "bm25": -0.01, "dense": -0.2}
    choice = LearnedSelector(FixedGains(gains, threshold=0.9, low_confidence="fuse")).select(
        "q", features(), [HYBRID, BM25, DENSE]
    )
    assert choice.pipeline == HYBRID and choice.confidence < 0.9


def test_structure_state_is_remembered_for_its_ttl() -> None:
    from waypost.route.candidates import StructureCache

    now = [0.0]
    asked: list[bool] = []
    cache = StructureCache(ttl_s=5.0, clock=lambda: now[0])

    def ask(value: bool) -> bool:
        asked.append(value)
        return value

    assert cache.exists("c", "tree", lambda: ask(False)) is False
    now[0] = 4.0
    assert cache.exists("c", "tree", lambda: ask(True)) is False and len(asked) == 1  # still remembered
    now[0] = 5.5
    assert cache.exists("c", "tree", lambda: ask(True)) is True and len(asked) == 2  # asked again
    assert cache.exists("c", "graph", lambda: ask(False)) is False and len(asked) == 3  # per kind
