"""``IndexCache``: the current ``IndexSet`` of each collection, at most ``max_open`` live at once."""

from __future__ import annotations

import logging
from pathlib import Path

from waypost.base import DocumentStore
from waypost.errors import CollectionNotFoundError
from waypost.index.dense import EXACT_DENSE_BELOW
from waypost.index.live import LiveIndex
from waypost.index.set import IndexSet, MergePolicy
from waypost.index.state_files import drop_legacy, remove_tree
from waypost.lru import DEFAULT_OPEN_COLLECTIONS, CollectionLRU

logger = logging.getLogger("waypost.index")


class IndexCache:
    """Hands out the current ``IndexSet`` of each collection, kept current from the change log. At most
    ``max_open`` collections keep a live index; the least recently used is flushed (unsaved work saved,
    background work finished) and closed, and reloaded from its saved state when used again."""

    def __init__(
        self,
        store: DocumentStore,
        cache_dir: Path | None,
        approximate: bool = False,
        policy: MergePolicy | None = None,
        background: bool = True,
        max_open: int = DEFAULT_OPEN_COLLECTIONS,
        exact_below: int = EXACT_DENSE_BELOW,
    ) -> None:
        self.store = store
        self.cache_dir = cache_dir
        self.approximate = approximate
        self.exact_below = exact_below
        self.policy = policy
        self.background = background
        self._live: CollectionLRU[LiveIndex] = CollectionLRU(max_open, self._open, self._close)

    def _open(self, collection: str) -> LiveIndex:
        directory = None if self.cache_dir is None else self.cache_dir / collection
        if directory is not None:
            drop_legacy(directory)
        return LiveIndex(
            self.store,
            collection,
            directory,
            self.approximate,
            self.policy,
            background=self.background,
            exact_below=self.exact_below,
        )

    @staticmethod
    def _close(collection: str, index: LiveIndex) -> None:
        try:
            index.close()
        except CollectionNotFoundError:  # dropped meanwhile: nothing of it is worth saving
            logger.debug("collection %r was dropped before its index was closed", collection)

    def live(self, collection: str) -> LiveIndex:
        return self._live.get(collection)

    def get(self, collection: str) -> IndexSet:
        return self.live(collection).get()

    def open_collections(self) -> list[str]:
        """Collections with a live index in this process, least recently used first."""
        return self._live.names()

    def forget(self, collection: str) -> None:
        found = self._live.pop(collection)
        if found is not None:
            found.stop_background_graphs()  # a dropped collection's background graph build is not waited for
            found.wait()
            found.shut_down()
        if self.cache_dir is not None:
            remove_tree(self.cache_dir / collection)

    def close(self) -> None:
        self._live.close_all()


__all__ = ["IndexCache"]
