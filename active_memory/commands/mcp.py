"""`active-memory mcp [--cwd DIR]`: the read-only MCP server on stdio (docs/mcp.md)."""

from __future__ import annotations

import argparse
import os


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `mcp`."""
    parser = subcommands.add_parser(
        "mcp",
        help="serve this repository's lessons to an MCP client on stdio (search_lessons, "
        "get_lesson; read-only)",
        description="A Model Context Protocol server on stdin/stdout with two read-only "
        "tools: search_lessons and get_lesson. The repository is the checkout holding the "
        "working directory (docs/mcp.md). Register it with `hook install … --mcp`.",
    )
    parser.add_argument(
        "--cwd", metavar="DIR", default=None, help="the checkout (default: the current folder)"
    )
    parser.set_defaults(handler=_mcp)


def _mcp(args: argparse.Namespace) -> int:
    from active_memory.errors import UsageError

    folder = os.path.abspath(args.cwd or os.getcwd())
    if not os.path.isdir(folder):
        raise UsageError(f"--cwd {args.cwd}: not a folder")
    try:
        # The server imports the SDK only when it is built: ask for it first, so a base
        # install gets the hint, not an internal error from inside the server.
        import mcp  # noqa: F401

        from active_memory.mcp_server import run_stdio
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] == "mcp":
            from active_memory.install_source import extra_command

            raise UsageError(
                f"the MCP server needs the `mcp` extra: {extra_command('mcp')}"
            ) from None
        raise
    run_stdio(folder)
    return 0
