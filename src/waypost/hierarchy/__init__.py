"""Hierarchical indexes: a RAPTOR tree over a collection's chunks, and one summary per document."""

from waypost.hierarchy.summarize import ExtractiveSummarizer, LLMSummarizer, Summarizer
from waypost.hierarchy.tree import Tree, TreeConfig, TreeNode

__all__ = ["ExtractiveSummarizer", "LLMSummarizer", "Summarizer", "Tree", "TreeConfig", "TreeNode"]
