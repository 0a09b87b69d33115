"""kill -9 during an index merge or save leaves a store that opens, answers correctly and catches up."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.test_live_indexes import QueryMemo, assert_same, make_doc
from waypost.base import Embedder
from waypost.engine import Engine, EngineConfig

# Every catch-up merges everything into the main segment and saves it: the writer is almost always
# inside a merge or a save.
WRITER = textwrap.dedent(
    """
    import random, sys
    from tests.test_live_indexes import make_doc
    from waypost.engine import Engine, EngineConfig
    from waypost.index.set import MergePolicy
    policy = MergePolicy(max_small_segments=0, main_merge_rows=0, main_merge_ratio=0.0, dead_ratio=0.0, persist_rows=0)
    engine = Engine(sys.argv[1], EngineConfig(chunk_tokens=32, merge_policy=policy, background_index_work=False))
    coll = engine.collection("c", create=True)
    rng = random.Random(int(sys.argv[2]))
    start = int(sys.argv[2]) * 1000
    if coll.info.documents == 0:
        coll.add([make_doc(rng, f"d{i}") for i in range(150)])
    i = start
    while True:
        coll.add([make_doc(rng, f"d{i}")])
        if i % 3 == 0:
            coll.delete([f"d{i % 150}"])
        coll.retrieve("granite quarry", "hybrid")
        print(i, flush=True)
        i += 1
    """
)


def start(store: Path, seed: int) -> subprocess.Popen[str]:
    # the worker imports the same waypost as this test (its sys.path, the repo root first)
    path = os.pathsep.join([str(Path(__file__).resolve().parents[1]), *sys.path])
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": path}
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(store), str(seed)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_steps(proc: subprocess.Popen[str], steps: int) -> None:
    assert proc.stdout is not None
    for _ in range(steps):
        line = proc.stdout.readline()
        assert line, f"the writer died: {proc.stderr.read() if proc.stderr else ''}"


def kill_when(proc: subprocess.Popen[str], ready: object, timeout: float = 120.0) -> None:
    deadline = time.time() + timeout
    while not ready() and time.time() < deadline:  # type: ignore[operator]
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.001)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def check(store: Path, minilm: Embedder, round_: int) -> str:
    engine = Engine(store, EngineConfig(chunk_tokens=32, background_index_work=False))
    engine.register_embedder(QueryMemo(minilm))  # type: ignore[arg-type]
    live = engine.indexes.live("c")
    live.get()
    loaded = live.loaded_from
    assert_same(engine, "c", [])
    before = engine.store.generation("c")
    engine.collection("c").add([make_doc(random.Random(round_), f"after-crash-{round_}")])  # and it catches up
    assert engine.store.generation("c") == before + 1
    assert_same(engine, "c", [])
    engine.close()
    return loaded


@pytest.mark.slow
def test_kill_9_during_index_saves_and_merges(tmp_path: Path, minilm: Embedder) -> None:
    store = tmp_path / "store"
    index_dir = store / "indexes" / "c"

    def saving() -> bool:  # a segment or manifest is being written right now
        return index_dir.exists() and any(".tmp-" in p.name for u in index_dir.iterdir() for p in u.iterdir())

    proc = start(store, 1)
    wait_for_steps(proc, 2)
    kill_when(proc, saving)
    assert check(store, minilm, 1).startswith("state-"), "the last complete state should still load"

    proc = start(store, 2)
    wait_for_steps(proc, 3)
    time.sleep(random.Random(4).uniform(0.05, 0.3))  # mid-merge, most likely
    kill_when(proc, lambda: True)
    check(store, minilm, 2)
