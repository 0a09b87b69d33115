"""Progress bars for long work, drawn on stderr so that ``--json`` output on stdout stays clean."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import nullcontext
from typing import Any, TypeVar

T = TypeVar("T")


def progress(show: bool) -> Any:
    """A rich ``Progress`` context (or a null context yielding ``None`` when ``show`` is false)."""
    if not show:
        return nullcontext(None)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
    )


def track(items: Sequence[T], show: bool, description: str) -> Iterator[T]:
    with progress(show) as bar:
        task = bar.add_task(description, total=len(items)) if bar is not None else None
        for item in items:
            yield item
            if bar is not None and task is not None:
                bar.advance(task)
