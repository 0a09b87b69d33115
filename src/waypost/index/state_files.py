"""The files of a saved index state: atomic writes, the advisory directory lock between processes, and
garbage collection of states, segments and vocabularies no kept state names."""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from waypost.index.segment import fsync_path

logger = logging.getLogger("waypost.index")


def atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{uuid.uuid4().hex[:6]}")
    with tmp.open("w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    fsync_path(path.parent)


def states_newest_first(base: Path) -> list[Path]:
    """Saved states by generation, then by when they were written (two processes may save one generation)."""

    def key(path: Path) -> tuple[int, float]:
        try:
            return int(path.name.split("-")[1]), path.stat().st_mtime
        except (ValueError, IndexError, OSError):  # an odd name, or removed meanwhile: tried last (and skipped)
            return -1, 0.0

    return sorted(base.glob("state-*.json"), key=key, reverse=True)


@contextmanager
def directory_lock(base: Path, exclusive: bool) -> Iterator[None]:
    """An advisory lock between processes on one index directory (saves and collection vs loads)."""
    import fcntl

    base.mkdir(parents=True, exist_ok=True)
    with open(base / ".lock", "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def collect_garbage(base: Path, keep_states: int, tmp_grace_s: float = 3600.0) -> int:
    """Drop all but the newest saved states and the segments and vocabularies no kept state names (how many).
    Called with the directory lock held; processes holding older states keep their data (segments are
    loaded whole, except memory-mapped arrays, which outlive the files' removal)."""
    states = states_newest_first(base)
    keep: set[str] = set()
    for path in states[:keep_states]:
        try:
            manifest = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:  # a state another process removes or writes now
            logger.debug("garbage collection skips unreadable state %s: %s", path, exc)
            continue
        keep.update(manifest.get("segments", []))
        keep.add(manifest.get("vocab", ""))
    removed = 0
    for path in states[keep_states:]:
        path.unlink(missing_ok=True)
        removed += 1
    now = time.time()
    for path in base.iterdir():
        try:
            if path.name.startswith(".") and ".tmp-" in path.name:
                if now - path.stat().st_mtime > tmp_grace_s:
                    remove_tree(path) if path.is_dir() else path.unlink(missing_ok=True)
                    removed += 1
            elif (path.name.startswith("seg-") or path.name.startswith("vocab-")) and path.name not in keep:
                remove_tree(path) if path.is_dir() else path.unlink(missing_ok=True)
                removed += 1
        except OSError as exc:  # removed by another process meanwhile, or not ours to remove: tried next time
            logger.debug("garbage collection could not remove %s: %s", path, exc)
            continue
    return removed


def drop_legacy(directory: Path) -> None:
    """Caches of the single-snapshot design (``bm25-*``) are never read again."""
    if directory.exists():
        for old in directory.glob("bm25-*"):
            remove_tree(old)


def remove_tree(path: Path) -> None:
    """Remove a directory tree, as much of it as can be; what cannot be removed is logged (a leftover
    directory is collected by a later save)."""

    def report(_func: Callable[..., Any], failed: str, exc_info: Any) -> None:
        exc = exc_info[1] if isinstance(exc_info, tuple) else exc_info
        if not isinstance(exc, FileNotFoundError):  # already gone is what we wanted
            logger.warning("could not remove %s: %s", failed, exc)

    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=report)
    else:
        shutil.rmtree(path, onerror=report)


__all__ = [
    "atomic_write",
    "collect_garbage",
    "directory_lock",
    "drop_legacy",
    "remove_tree",
    "states_newest_first",
]
