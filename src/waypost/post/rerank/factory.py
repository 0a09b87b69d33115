"""``--rerank NAME`` to a reranker: a feature profile (hand-set or learned), a local cross-encoder, or an LLM.

- ``default``, ``precision``, ``balanced``, ``recall``: hand-set feature weights (``default`` is balanced);
- a saved profile's name, or a path to its ``.json`` (``waypost rerank train``);
- ``cross-encoder:PATH``: a sentence-transformers cross-encoder from a local directory;
- ``llm``, ``llm:pointwise``, ``llm:listwise``: the configured LLM judges the candidates.

Model rerankers fall back to the default feature profile when they fail, and say so in the explanation."""

from __future__ import annotations

from pathlib import Path

from waypost.base import Reranker
from waypost.context import SearchContext
from waypost.errors import WaypostError
from waypost.llm.accounting import PriceTable
from waypost.llm.base import LLMProvider
from waypost.post.rerank.features import FeatureReranker
from waypost.post.rerank.profile import load_profile, profile_directories

DEFAULT_DEPTH = 30


def make_reranker(
    spec: str,
    ctx: SearchContext,
    store_path: Path | None = None,
    llm: LLMProvider | None = None,
    prices: PriceTable | None = None,
    depth: int = DEFAULT_DEPTH,
) -> Reranker:
    if depth < 1:
        raise WaypostError(f"rerank depth must be at least 1, got {depth}")
    spec = spec.strip()
    kind, _sep, arg = spec.partition(":")
    if kind == "cross-encoder":
        from waypost.post.rerank.cross_encoder import CrossEncoderReranker

        if not arg:
            raise WaypostError("--rerank cross-encoder:PATH needs the model's local directory")
        fallback = FeatureReranker(ctx, load_profile("default", []), depth)
        return CrossEncoderReranker(arg, fallback, depth=depth)
    if kind == "llm":
        from waypost.post.rerank.llm import LLMReranker

        mode = arg or "pointwise"
        if mode not in ("pointwise", "listwise"):
            raise WaypostError(f"--rerank llm takes pointwise or listwise, not {mode!r}")
        if llm is None:
            raise WaypostError("--rerank llm needs an LLM: set --llm (for example smollm2)")
        fallback = FeatureReranker(ctx, load_profile("default", []), depth)
        return LLMReranker(llm, fallback, mode=mode, prices=prices, depth=min(depth, 10))
    return FeatureReranker(ctx, load_profile(spec, profile_directories(store_path)), depth)
