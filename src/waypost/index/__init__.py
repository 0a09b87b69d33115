"""Derived indexes: segments kept current from the store's change log, persisted beside the store."""

from waypost.index.cache import IndexCache
from waypost.index.dense import DenseIndex
from waypost.index.live import LiveIndex
from waypost.index.metadata import MetadataIndex
from waypost.index.set import IndexSet, MergePolicy

__all__ = ["DenseIndex", "IndexCache", "IndexSet", "LiveIndex", "MergePolicy", "MetadataIndex"]
