"""The repositories of derived structures (trees, knowledge graphs) a backend keeps beside its documents,
and the version format every repository and derived index relies on. Re-exported from ``waypost.base``.

Contracts shared by every backend (checked by ``tests/conformance``):

- **Row ids** of chunks only grow and are never reused, not even after the newest rows are deleted or the
  store is reopened: a derived structure that remembers a row id never sees it name other content.
- **Versions** (``DocumentStore.version``) read ``<uid>-g<generation>-<nonce>``: ``uid`` names one
  incarnation of a collection (drop and recreate gives a new one), ``generation`` counts committed changes
  and ``nonce`` is drawn at random in every committing write or delete. A version therefore names one
  write history: two stores that reached one generation by different writes (a commit lost on power loss,
  then new writes) never share a version, so state saved for one is never served for the other.
- **Snapshots** (``snapshot``, ``changes``, a repository's ``load``) are one consistent read: every row,
  the generation and the version come from the same committed state, whatever writes run meanwhile.
- **Exact deletes**: deleting a document, tree or graph touches exactly what was named, never an id that
  merely shares a prefix or characters with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Sequence

    from waypost.graph.graph import GraphConfig, KnowledgeGraph, Touched
    from waypost.hierarchy.tree import Tree, TreeConfig
    from waypost.route.base import RouteRecord


def make_version(uid: str, generation: int, nonce: str) -> str:
    """A collection version: see the module docstring for what each part guarantees."""
    return f"{uid}-g{generation}-{nonce}"


def version_incarnation(version: str) -> str:
    """The incarnation (``uid``) part of a version; what survives every write but not a drop/recreate.
    Versions made before the nonce (``<uid>-g<generation>``) parse the same way."""
    return version.split("-g", 1)[0]


@dataclass(frozen=True)
class TreeRecord:
    """What a repository keeps about a collection's active tree besides its nodes."""

    collection: str
    tree: str  # the tree's name: an update names the tree it was loaded from
    generation: int  # the store generation the tree reflects
    version: str  # the store version the tree was built at (its incarnation must match the store's)
    summarizer: str
    config: TreeConfig
    next_id: int
    nodes_at_build: int
    changed_nodes: int
    stats: dict[str, Any]
    built_at: float
    updated_at: float


class TreeRepository(Protocol):
    """Persists RAPTOR trees, one active tree per collection.

    ``save_new`` replaces the active tree whole and atomically (a failure leaves the old one); ``save_changes``
    writes one update atomically and only if the stored tree is still the one, at the generation, the caller
    loaded (optimistic concurrency between processes). ``load`` reads the record and every node in one
    consistent read. ``drop`` removes exactly the named collection's trees."""

    def record(self, collection: str) -> TreeRecord | None: ...

    def load(self, collection: str, tree: Tree) -> TreeRecord | None:
        """Fill ``tree`` with the collection's active tree (its dirty and dropped sets cleared); ``None``
        when the collection has none."""
        ...

    def save_new(self, collection: str, tree: Tree, version: str) -> str:
        """Store ``tree`` as the collection's active tree; returns its new name."""
        ...

    def save_changes(self, collection: str, name: str, tree: Tree, base_generation: int) -> bool:
        """Write the nodes ``tree`` changed (``tree.dirty``) and dropped (``tree.dropped``) and move the stored
        tree to ``tree.generation``. ``False``, writing nothing, when the active tree is not ``name`` at
        ``base_generation`` any more."""
        ...

    def drop(self, collection: str) -> None: ...

    def size_bytes(self, collection: str) -> int:
        """About how many bytes the collection's tree data takes (for status reports)."""
        ...


@dataclass(frozen=True)
class GraphRecord:
    """What a repository keeps about a collection's knowledge graph besides its entities and edges."""

    collection: str
    generation: int  # the store generation the graph reflects
    version: str  # the store version the graph was built at (its incarnation must match the store's)
    extractor: str
    reporter: str
    config: GraphConfig
    stats: dict[str, Any]
    built_at: float
    updated_at: float


class GraphRepository(Protocol):
    """Persists knowledge graphs, one per collection, with the chunk rows each mention and relation came from.

    ``save_new`` replaces the graph whole and atomically and gives it a new ``build_id``; ``save_changes``
    writes one update atomically and only if the stored graph is still the caller's build at
    ``base_generation``. ``load`` is one consistent read. ``drop`` removes exactly the named collection's
    graph."""

    def record(self, collection: str) -> GraphRecord | None: ...

    def load(self, collection: str) -> tuple[KnowledgeGraph, GraphRecord] | None: ...

    def save_new(
        self, collection: str, graph: KnowledgeGraph, version: str, extractor: str, reporter: str, stats: dict[str, Any]
    ) -> None: ...

    def save_changes(
        self,
        collection: str,
        graph: KnowledgeGraph,
        base_generation: int,
        touched: Touched,
        communities: set[int],
        dropped_communities: set[int],
        rewrote_communities: bool,
    ) -> bool:
        """Write what one update touched; ``False``, writing nothing, when the stored graph is another build
        or no longer at ``base_generation``."""
        ...

    def set_stats(self, collection: str, stats: dict[str, Any]) -> None: ...

    def drop(self, collection: str) -> None: ...

    def counts(self, collection: str) -> dict[str, int]:
        """Stored rows per kind: entities, mentions, relations, synonyms, communities."""
        ...

    def size_bytes(self, collection: str) -> int: ...


DEFAULT_ROUTES_KEPT = 10_000


class RouteLog(Protocol):
    """Telemetry of routed queries (``waypost.route.telemetry``), bounded: ``append`` keeps only the newest
    ``keep`` records of the store and deletes older ones in the same transaction. A record holds no query
    text (only its length), so nothing here needs purging with deleted documents."""

    def append(self, records: Sequence[RouteRecord], keep: int = DEFAULT_ROUTES_KEPT) -> int:
        """Add ``records`` (in order) in one transaction, trim to the newest ``keep``; returns how many are kept."""
        ...

    def records(self, collection: str | None = None, limit: int | None = None) -> list[RouteRecord]:
        """Kept records, oldest first; of one collection, and only the newest ``limit``, when given."""
        ...

    def count(self) -> int: ...

    def clear(self, collection: str | None = None) -> int:
        """Delete every record, or one collection's; returns how many went."""
        ...


__all__ = [
    "DEFAULT_ROUTES_KEPT",
    "GraphRecord",
    "GraphRepository",
    "RouteLog",
    "TreeRecord",
    "TreeRepository",
    "make_version",
    "version_incarnation",
]
