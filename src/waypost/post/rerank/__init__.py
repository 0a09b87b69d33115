"""Reranking: structure-aware features with hand-set or learned weights, and model rerankers beside them."""
