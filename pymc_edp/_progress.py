"""A progress bar that can be turned off (rich, which PyMC already depends on)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def progress_bar(total: int, description: str, *, disable: bool = False) -> Iterator[Callable]:
    """Context manager yielding ``advance(n=1)``; a no-op when ``disable`` is true.

    Parameters
    ----------
    total : int
        Number of steps.
    description : str
        Shown left of the bar.
    disable : bool, default False
    """
    if disable or total <= 1:
        yield lambda n=1: None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        transient=False,
    ) as prog:
        task = prog.add_task(description, total=total)
        yield lambda n=1: prog.advance(task, n)
