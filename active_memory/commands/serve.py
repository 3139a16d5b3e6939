"""`active-memory serve`: the resident recall server (loopback only, token-protected)."""

from __future__ import annotations

import argparse
from pathlib import Path

from active_memory.commands.common import add_store_option


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `serve`."""
    from active_memory.hooks.paths import DEFAULT_PORT

    parser = subcommands.add_parser(
        "serve",
        help="the resident recall server (Claude Code HTTP hooks; fast path for command hooks)",
        description="Answer hook calls from snapshots and indexes kept in memory. Listens "
        "on loopback only; every hook call must carry the token "
        "(`Authorization: Bearer …`). Stop it with Ctrl-C or SIGTERM.",
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="loopback address to listen on: 127.0.0.1 (default), ::1 or localhost",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"port (default {DEFAULT_PORT}, the one `hook install --http` writes; "
        "0: any free port)",
    )
    parser.add_argument(
        "--token-file",
        metavar="FILE",
        default=None,
        help="the token file (created 0600 if missing; default: "
        "<zeroshot state dir>/active-memory/server.token)",
    )
    parser.add_argument(
        "--print-token",
        action="store_true",
        help="print the token (creating it if needed) and exit, e.g. "
        'export ACTIVE_MEMORY_TOKEN="$(active-memory serve --print-token)"',
    )
    parser.add_argument(
        "--no-ui",
        action="store_true",
        help="do not serve the web view under /ui/ (docs/ui.md)",
    )
    parser.add_argument(
        "--checkout",
        metavar="DIR",
        action="append",
        help="a checkout the web view judges its repository's lessons against "
        "(repeatable; besides the one around the current directory and the ones this "
        "machine knows)",
    )
    add_store_option(parser)
    parser.set_defaults(handler=_serve)


def _serve(args: argparse.Namespace) -> int:
    import logging
    import os
    import sys

    from active_memory.errors import UsageError
    from active_memory.hooks.paths import default_token_path, discovery_path
    from active_memory.hooks.server import loopback_host
    from active_memory.hooks.token import load_or_create_token

    # Checked before anything is created or imported: a bad --host must cost nothing.
    host = loopback_host(args.host)
    if not 0 <= args.port < 65536:
        raise UsageError(f"--port {args.port}: must be 0..65535")
    token_file = Path(args.token_file or default_token_path())
    token = load_or_create_token(token_file)
    if args.print_token:
        print(token)
        return 0

    from active_memory.hooks.recall_answer import make_answer
    from active_memory.hooks.server import serve
    from active_memory.recall import pins

    pins.BUILD_IN_CALL = False  # a hook call never waits for a build (docs/recall.md)

    web, login = _web_view(args, token) if not args.no_ui else (None, None)

    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s active-memory serve: %(levelname)s %(message)s",
    )

    def listening(bound_host: str, port: int) -> None:
        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
        print(
            f"active-memory serve: listening on http://{shown}:{port} (pid {os.getpid()}); "
            f"token in {token_file}",
            file=sys.stderr,
            flush=True,
        )
        if login is not None:
            print(
                f"active-memory serve: web view at http://{shown}:{port}/ui/login?code={login} "
                "(one-time link, valid 10 minutes; later: `active-memory ui --link`)",
                file=sys.stderr,
                flush=True,
            )

    from active_memory.hooks.store_watch import watch
    from active_memory.store import resolve_store_location
    from active_memory.store.location import state_dir

    # The store this server pins from: watched for other machines' publishes.
    watcher = watch(resolve_store_location(args.store), state_dir())
    try:
        serve(
            make_answer(os.environ, args.store),
            token=token,
            token_file=token_file,
            discovery=Path(discovery_path()),
            host=host,
            port=args.port,
            on_listen=listening,
            web=web,
        )
    finally:
        watcher.stop()
    print("active-memory serve: stopped", file=sys.stderr)
    return 0


def _web_view(args: argparse.Namespace, token: str) -> tuple[object, str]:
    """The web view to mount under /ui/ (built at its first request, docs/ui.md), and
    the code of the one-time login link to print."""
    from active_memory.commands.ui import checkouts_of
    from active_memory.store import resolve_store_location
    from active_memory.ui.auth import Gate
    from active_memory.ui.mount import WebMount

    gate = Gate(token)
    location = resolve_store_location(args.store)
    return WebMount(location, gate, checkouts_of(args.checkout)), gate.new_login_code()
