"""`active-memory backup DEST`: a consistent copy of the store while it is in use."""

from __future__ import annotations

import argparse
from pathlib import Path

from active_memory.commands.common import add_json_option, add_store_option, print_json


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `backup`."""
    parser = subcommands.add_parser(
        "backup", help="copy the store consistently while other processes use it"
    )
    parser.add_argument("destination", metavar="DEST", help="a new file path for the copy")
    add_store_option(parser)
    add_json_option(parser)
    parser.set_defaults(handler=_backup)


def _backup(args: argparse.Namespace) -> int:
    import anyio

    from active_memory.store import open_store, resolve_store_location

    location = resolve_store_location(args.store)
    destination = Path(args.destination)

    async def main() -> str:
        async with open_store(location, create=False) as store:
            await store.backup(destination)
            return store.location  # safe to print: a URL's password is masked

    shown = anyio.run(main, backend="asyncio")
    if args.json:
        print_json({"store": shown, "backup": str(destination)})
    else:
        print(f"backed up {shown} to {destination}")
    return 0
