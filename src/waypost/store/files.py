"""SQLite files beside the store that are caches, not the system of record (embeddings, LLM replies)."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def connect_cache(path: str | Path) -> sqlite3.Connection:
    """A connection to a cache file: WAL, a busy timeout, and deleted entries zeroed on disk (purges leave no
    trace of deleted text in free pages)."""
    conn = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA busy_timeout=30000")
    conn.execute("PRAGMA secure_delete=ON")
    return conn
