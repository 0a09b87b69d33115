"""Which pipelines can run on a collection now: read from the registry's declared needs (tree, graph,
LLM) and cost, never from a strategy's name. A pipeline whose structure is not built is runnable only
when the router may build it on first use; one that needs an LLM only when one is configured."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from waypost.context import SearchContext
from waypost.errors import WaypostError
from waypost.retrieval.registry import DEFAULT_STRATEGY, STRATEGIES, make_retriever
from waypost.route.base import FUSE, Pipeline


def default_pool() -> list[Pipeline]:
    """Every registered strategy with its default parameters, plus the default strategy with passages."""
    return [Pipeline.of(name) for name in STRATEGIES] + [Pipeline.of(DEFAULT_STRATEGY, passages={})]


def runnable_pipelines(
    ctx: SearchContext,
    llm_configured: bool,
    pool: Sequence[Pipeline] | None = None,
    build_on_first_use: bool = False,
    structures: StructureCache | None = None,
) -> list[Pipeline]:
    """The pipelines of ``pool`` (default: ``default_pool()``) that can run on ``ctx``'s collection now,
    in pool order. ``build_on_first_use``: a missing tree or graph does not exclude a pipeline (running
    it builds the structure). ``structures``: remembers for a few seconds whether a collection's tree and
    graph exist (asking the store costs a query per structure)."""
    probe = _Probe(ctx, llm_configured, build_on_first_use, structures)
    return [p for p in (default_pool() if pool is None else pool) if probe.runnable(p)]


class StructureCache:
    """Whether a collection's tree or graph exists, remembered for ``ttl_s`` seconds: a structure built
    meanwhile joins the candidates that much later."""

    def __init__(self, ttl_s: float = 5.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s = ttl_s
        self._clock = clock
        self._known: dict[tuple[str, str], tuple[float, bool]] = {}
        self._lock = threading.Lock()

    def exists(self, collection: str, kind: str, ask: Callable[[], bool]) -> bool:
        now = self._clock()
        with self._lock:
            found = self._known.get((collection, kind))
        if found is not None and now - found[0] < self.ttl_s:
            return found[1]
        value = ask()
        with self._lock:
            if len(self._known) > 1024:
                self._known.clear()
            self._known[(collection, kind)] = (now, value)
        return value


def pipeline_cost(pipeline: Pipeline) -> float:
    """The registry's cost class (latency relative to the default strategy); a fusion costs its parts'
    sum, a reranker or passage assembly a little more; an unregistered strategy counts as 1."""
    if pipeline.strategy == FUSE:
        return sum(pipeline_cost(p) for p in pipeline.fuse)
    spec = STRATEGIES.get(pipeline.strategy)
    cost = spec.cost if spec is not None else 1.0
    if pipeline.passages is not None:
        cost += 0.2
    if pipeline.rerank:
        cost += 1.0
    return cost


class _Probe:
    """Answers, with each structure's state read once, whether a pipeline can run."""

    def __init__(
        self, ctx: SearchContext, llm_configured: bool, build_on_first_use: bool, structures: StructureCache | None
    ) -> None:
        self.ctx = ctx
        self.structures = structures
        self.llm_configured = llm_configured
        self.build = build_on_first_use
        self._tree: bool | None = None
        self._graph: bool | None = None
        self._external: dict[str, bool] = {}

    def _exists(self, kind: str, ask: Callable[[], bool]) -> bool:
        if self.structures is None:
            return ask()
        return self.structures.exists(self.ctx.collection, kind, ask)

    def tree(self) -> bool:
        if self._tree is None:
            tree = self.ctx.tree
            self._tree = tree is not None and (self.build or self._exists("tree", tree.exists))
        return self._tree

    def graph(self) -> bool:
        if self._graph is None:
            graph = self.ctx.graph
            self._graph = graph is not None and (self.build or self._exists("graph", graph.exists))
        return self._graph

    def runnable(self, pipeline: Pipeline) -> bool:
        if pipeline.strategy == FUSE:
            return all(self.runnable(p) for p in pipeline.fuse)
        if pipeline.rerank is not None and pipeline.rerank.partition(":")[0] == "llm" and not self.llm_configured:
            return False
        spec = STRATEGIES.get(pipeline.strategy)
        if spec is None:
            return self._external_ready(pipeline.strategy)
        if spec.needs_tree and not self.tree():
            return False
        if spec.needs_graph and not self.graph():
            return False
        return not (spec.needs_llm and not self.llm_configured)

    def _external_ready(self, name: str) -> bool:
        """A strategy outside the registry (one backed by a provider) is runnable when it can be made."""
        if name not in self._external:
            try:
                make_retriever(name, self.ctx)
                self._external[name] = True
            except WaypostError:
                self._external[name] = False
        return self._external[name]
