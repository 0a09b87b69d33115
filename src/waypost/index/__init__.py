"""Derived indexes: segments kept current from the store's change log, persisted beside the store."""

from waypost.index.dense import DenseIndex
from waypost.index.metadata import MetadataIndex
from waypost.index.set import IndexCache, IndexSet, LiveIndex, MergePolicy

__all__ = ["DenseIndex", "IndexCache", "IndexSet", "LiveIndex", "MergePolicy", "MetadataIndex"]
