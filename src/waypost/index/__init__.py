"""Derived indexes, rebuilt from the store whenever a collection's generation moves."""

from waypost.index.bm25 import BM25Index
from waypost.index.dense import DenseIndex
from waypost.index.metadata import MetadataIndex
from waypost.index.set import IndexCache, IndexSet

__all__ = ["BM25Index", "DenseIndex", "IndexCache", "IndexSet", "MetadataIndex"]
