"""Progress of long work on stderr: a rich bar on a terminal, nothing otherwise.

Progress never goes to stdout, so `--json` output and pipes stay clean; a bar is shown
only when stderr is a terminal (rich's own test, which honours `TTY_COMPATIBLE` and
`FORCE_COLOR`) and `CI` is not set.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


class Steps:
    """A handle on one progress display: `advance`, `describe` a new stage, `total`."""

    def __init__(self, bar: Any = None, task: Any = None) -> None:
        self._bar = bar
        self._task = task

    def advance(self, count: int = 1) -> None:
        """Count `count` more items done."""
        if self._bar is not None:
            self._bar.advance(self._task, count)

    def stage(self, description: str, total: int | None = None) -> None:
        """Start a new stage: its description, its total (None: unknown), nothing done."""
        if self._bar is not None:
            self._bar.reset(self._task, total=total, description=description)

    @property
    def tick(self) -> Callable[[], None]:
        """`advance` by one, as a plain callback."""
        return self.advance


def live(console: Any) -> bool:
    """Whether a live display belongs on `console` (a terminal, not CI)."""
    return bool(console.is_terminal) and not os.environ.get("CI")


@contextmanager
def progress(description: str, total: int | None = None, unit: str = "") -> Iterator[Steps]:
    """A progress bar on stderr for the `with` block (removed when it ends)."""
    from rich.console import Console

    console = Console(stderr=True, highlight=False)
    if not live(console):
        yield Steps()
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    columns = [
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(bar_width=30),
        MofNCompleteColumn(),
        TextColumn(unit),
        TimeElapsedColumn(),
    ]
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield Steps(bar, task)
