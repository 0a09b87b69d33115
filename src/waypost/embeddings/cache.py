"""Persistent document-embedding cache keyed by (model id, text hash), in its own SQLite file.

``forget_texts`` and ``keep_only_texts`` remove the entries of texts no chunk holds any more (``waypost.purge``)."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from waypost.base import Embedder, FloatMatrix
from waypost.store.files import connect_cache


def _key(kind: str, text: str) -> str:
    return hashlib.sha256(f"{kind}\x00{text}".encode()).hexdigest()


def _connect(path: Path) -> sqlite3.Connection:
    conn = connect_cache(path)
    conn.execute("CREATE TABLE IF NOT EXISTS embeddings (model TEXT, key TEXT, vector BLOB, PRIMARY KEY (model, key))")
    return conn


def forget_texts(path: str | Path, texts: Iterable[str]) -> int:
    """Remove the entries (of every model) of these document texts from the cache file ``path``."""
    return _remove(Path(path), {_key("doc", t) for t in texts}, keep=False)


def keep_only_texts(path: str | Path, texts: Iterable[str]) -> int:
    """Remove every entry of the cache file ``path`` except those of these document texts."""
    return _remove(Path(path), {_key("doc", t) for t in texts}, keep=True)


def _remove(path: Path, keys: set[str], keep: bool) -> int:
    conn = _connect(path)
    try:
        conn.execute("BEGIN IMMEDIATE")
        if keep:
            doomed = sorted({str(r[0]) for r in conn.execute("SELECT DISTINCT key FROM embeddings")} - keys)
        else:
            doomed = sorted(keys)
        removed = 0
        for start in range(0, len(doomed), 500):
            part = doomed[start : start + 500]
            removed += conn.execute(f"DELETE FROM embeddings WHERE key IN ({','.join('?' * len(part))})", part).rowcount
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return removed
    finally:
        conn.close()


class CachedEmbedder:
    """Wraps any embedder; a text is embedded once per model, ever."""

    def __init__(self, inner: Embedder, path: str | Path) -> None:
        self.inner = inner
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = _connect(self.path)
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def _lookup(self, keys: list[str]) -> dict[str, FloatMatrix]:
        found: dict[str, FloatMatrix] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                part = keys[start : start + 500]
                marks = ",".join("?" * len(part))
                rows = self._conn.execute(
                    f"SELECT key, vector FROM embeddings WHERE model=? AND key IN ({marks})", (self.model_id, *part)
                )
                found.update({k: np.frombuffer(v, dtype=np.float32) for k, v in rows})
        return found

    def _embed(self, kind: str, texts: Sequence[str]) -> FloatMatrix:
        keys = [_key(kind, t) for t in texts]
        found = self._lookup(list(dict.fromkeys(keys)))
        missing = list(dict.fromkeys(k for k in keys if k not in found))
        self.hits += len(keys) - len(missing)
        self.misses += len(missing)
        if missing:
            first_text = {k: t for k, t in zip(keys, texts, strict=True)}
            new_texts = [first_text[k] for k in missing]
            vecs = self.inner.embed_documents(new_texts)
            with self._lock:
                self._conn.executemany(
                    "INSERT OR REPLACE INTO embeddings(model, key, vector) VALUES (?,?,?)",
                    [
                        (self.model_id, k, np.asarray(v, dtype=np.float32).tobytes())
                        for k, v in zip(missing, vecs, strict=True)
                    ],
                )
            found.update({k: np.asarray(v, dtype=np.float32) for k, v in zip(missing, vecs, strict=True)})
        if not keys:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.vstack([found[k] for k in keys]).astype(np.float32, copy=False)

    def embed_documents(self, texts: Sequence[str]) -> FloatMatrix:
        return self._embed("doc", texts)

    def embed_query(self, text: str) -> FloatMatrix:
        # Queries are not cached: they are cheap, mostly unique, and latency numbers must stay honest.
        return self.inner.embed_query(text)

    def close(self) -> None:
        with self._lock:
            self._conn.close()
