"""The documented, fixed train/test split of query sets that ship no train split of their own: a stable
hash of the query id puts about half of the queries in train. Train queries tune; only test ones are reported."""

from __future__ import annotations

import hashlib

TRAIN_SHARE = 0.5


def query_split(query_id: str, train_share: float = TRAIN_SHARE) -> str:
    """``"train"`` or ``"test"``, fixed for a query id on every machine and run."""
    digest = hashlib.sha1(query_id.encode("utf-8")).digest()
    return "train" if int.from_bytes(digest[:4], "big") / 2**32 < train_share else "test"
