"""Retrieval strategies, one module each, all behind the ``Retriever`` protocol."""

from waypost.retrieval.registry import STRATEGIES, make_retriever

__all__ = ["STRATEGIES", "make_retriever"]
