"""Pipeline selectors: learned (a trained gain model), heuristic rules, exemplar embeddings, an LLM,
and round-robin for benchmarks. Each implements ``route.base.PipelineSelector``."""
