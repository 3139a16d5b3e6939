"""What `init` tells a progress display (the command gives it one; nothing by default)."""

from __future__ import annotations

from typing import Protocol


class Steps(Protocol):
    """A progress display: a new stage with its total (None: unknown), one more done."""

    def stage(self, description: str, total: int | None = None) -> None:
        """Start a stage."""
        ...

    def advance(self, count: int = 1) -> None:
        """Count `count` more items of the stage done."""
        ...


class Silent:
    """No display."""

    def stage(self, description: str, total: int | None = None) -> None:
        """Nothing."""

    def advance(self, count: int = 1) -> None:
        """Nothing."""
