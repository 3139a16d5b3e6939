"""What the `lessons` subcommands share: running a job on the store, the person acting,
whole-number options, progress on stderr."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from active_memory.lessons import Author


def positive(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def non_negative(text: str) -> int:
    """An argparse type: a whole number of at least 0."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 0, got {text!r}")
    return value


def run(args: argparse.Namespace, job: Any, *, create: bool = False) -> Any:
    """Open the store named by the options, run `job(store)` on anyio, close it."""
    import anyio

    from active_memory.store import open_store, resolve_store_location

    location = resolve_store_location(args.store)

    async def main() -> Any:
        async with open_store(location, create=create) as store:
            return await job(store)

    return anyio.run(main, backend="asyncio")


def run_or_empty(args: argparse.Namespace, job: Any) -> Any:
    """Like `run`, but a store that does not exist yet reads as empty."""
    from active_memory.errors import StoreMissing

    try:
        return run(args, job)
    except StoreMissing as missing:
        print(f"active-memory: {missing}", file=sys.stderr)
        return []


def person() -> Author:
    """The person running the command, as an author of history entries."""
    import getpass

    from active_memory.lessons import Author

    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return Author(specialist=f"person:{user}")
