"""A collection's index state on disk: its segment directories, its vocabulary (named by content) and a JSON
manifest naming them at one generation and write history. ``save_state`` writes one (segments first, each
renamed into place, then the manifest atomically); ``load_state`` reads one back as an ``IndexSet``, or
says it belongs to another write history. ``LiveIndex`` holds the directory lock around both."""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import numpy.typing as npt

from waypost.index.lexical import Vocabulary
from waypost.index.segment import Segment, fsync_path
from waypost.index.set import BM25Params, IndexSet, segment_name
from waypost.index.state_files import atomic_write, remove_tree
from waypost.text.analyzers import Analyzers

BoolArray = npt.NDArray[np.bool_]

STATE_FORMAT = 1

__all__ = ["STATE_FORMAT", "StateSettings", "load_state", "save_state", "with_new_graph"]


@dataclass(frozen=True)
class StateSettings:
    """What a loaded state is built with: its collection, analyzers, BM25 parameters, the size from which a
    segment carries an HNSW graph, and whether each segment is fully checked as it loads."""

    collection: str
    analyzers: Analyzers
    params: BM25Params
    exact_below: int
    full_check: bool


def save_state(base: Path, uid: str, state: IndexSet) -> Path:
    """Save every unsaved segment of ``state`` under ``base``, then its vocabulary and a manifest; returns
    the manifest's path. Segments another process collected are saved again."""
    for segment in state.segments:
        if segment.path is not None and not (segment.path / "segment.json").exists():
            segment.path = None  # another process collected it: save it again
        if segment.path is None:
            target = base / f"seg-{segment.name}"
            if not target.exists():
                tmp = base / f".tmp-{segment.name}-{uuid.uuid4().hex[:6]}"
                tmp.mkdir()
                try:
                    segment.save(tmp)
                    fsync_path(tmp)
                    os.rename(tmp, target)
                    fsync_path(base)
                finally:
                    remove_tree(tmp)
            segment.path = target
    terms = state.vocab.terms[: len(state.vocab)]
    payload = json.dumps(terms, ensure_ascii=False)
    digest = hashlib.sha1(payload.encode("utf-8")).hexdigest()[:16]
    vocab_file = base / f"vocab-{len(terms)}-{digest}.json"  # named by content: never another order
    if not vocab_file.exists():
        atomic_write(vocab_file, payload)
    manifest = {
        "format": STATE_FORMAT,
        "uid": uid,
        "generation": state.generation,
        "version": state.version,  # the write history it reflects: a state of another is never loaded
        "segments": [f"seg-{s.name}" for s in state.segments],
        "tombstones": state.tombstones().tolist(),
        "vocab": vocab_file.name,
        "vocab_sha1": digest,
        "saved_at": time.time(),
    }
    path = base / f"state-{state.generation:012d}-{uuid.uuid4().hex[:8]}.json"
    atomic_write(path, json.dumps(manifest))
    return path


def load_state(
    path: Path,
    uid: str,
    head: int,
    version_at: Callable[[int], str | None],
    settings: StateSettings,
    build_below: int | None,
) -> IndexSet | None:
    """The state the manifest at ``path`` names, or None when it is of another format, store incarnation or
    write history (``version_at(generation)`` is the store's version at that generation), or newer than
    ``head``. A damaged one raises (OSError, ValueError, KeyError, TypeError)."""
    t0 = time.perf_counter()
    base = path.parent
    manifest = json.loads(path.read_text())
    generation = int(manifest["generation"])
    if manifest.get("format") != STATE_FORMAT or manifest.get("uid") != uid or generation > head:
        return None
    if manifest.get("version") != version_at(generation):
        return None  # saved for another write history (commits lost since), or the log moved past it
    payload = (base / manifest["vocab"]).read_text()
    if hashlib.sha1(payload.encode("utf-8")).hexdigest()[:16] != manifest.get("vocab_sha1"):
        raise ValueError(f"vocabulary {manifest['vocab']} does not match its state")
    vocab = Vocabulary(json.loads(payload))
    segments = [  # in the background the full check follows on the worker thread
        Segment.load(
            base / name, graph_from=settings.exact_below, full_check=settings.full_check, build_below=build_below
        )
        for name in manifest["segments"]
    ]
    if any(s.chunks.terms > len(vocab) or s.documents.terms > len(vocab) for s in segments):
        raise ValueError("a segment uses terms the saved vocabulary lacks")
    segments = [with_new_graph(s, generation) for s in segments]
    tombstones = np.asarray(manifest["tombstones"], dtype=np.int64)
    lives: list[BoolArray | None] = []
    for s in segments:
        dead = s.positions_of_rows(tombstones)
        if dead.size:
            live = np.ones(len(s), np.bool_)
            live[dead] = False
            lives.append(live)
            s.dense.mark_deleted(dead)
        else:
            lives.append(None)
    state = IndexSet(
        settings.collection,
        generation,
        str(manifest["version"]),
        segments,
        lives,
        vocab,
        settings.analyzers,
        settings.params,
        exact_below=settings.exact_below,
    )
    state.build_seconds = time.perf_counter() - t0
    return state


def with_new_graph(segment: Segment, generation: int) -> Segment:
    """A loaded segment whose HNSW graph was built at load (saved without one, then below the threshold) as an
    unsaved segment of a new name, so the next save writes it with its graph and later loads read that."""
    if not segment.dense.graphs or segment.path is None or (segment.path / "hnsw.bin").exists():
        return segment
    return replace(segment, name=segment_name(generation), path=None, _lock=threading.Lock())
