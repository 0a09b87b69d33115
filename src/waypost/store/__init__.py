"""Systems of record. ``SQLiteStore`` is the embedded default."""

from waypost.store.sqlite import SQLiteStore

__all__ = ["SQLiteStore"]
