"""`active-memory ui`: the local web view of the lessons (loopback only, token-protected)."""

from __future__ import annotations

import argparse
from pathlib import Path

from active_memory.commands.common import add_json_option, add_store_option

DEFAULT_UI_PORT = 47684
"""The web view's default port: the recall server's plus one."""


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `ui`."""
    parser = subcommands.add_parser(
        "ui",
        help="a local web view of the lessons: read, search, edit, retire, revert",
        description="Serve the web view on loopback only and print a one-time login link. "
        "Pages work without JavaScript; the same data is JSON under /api/ "
        "(`Authorization: Bearer <token>`). Stop it with Ctrl-C or SIGTERM.",
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="loopback address to listen on: 127.0.0.1 (default), ::1 or localhost",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_UI_PORT,
        help=f"port (default {DEFAULT_UI_PORT}; 0: any free port)",
    )
    parser.add_argument(
        "--token-file",
        metavar="FILE",
        default=None,
        help="the recall server's token file, shared with `serve` (created 0600 if missing; "
        "default: <zeroshot state dir>/active-memory/server.token)",
    )
    parser.add_argument(
        "--checkout",
        metavar="DIR",
        action="append",
        help="a checkout to judge its repository's lessons against (repeatable: one per "
        "repository; remembered on this machine). Besides these: the checkout around the "
        "current directory and the ones this machine knows",
    )
    parser.add_argument(
        "--link",
        action="store_true",
        help="print a one-time login link to the web view of the running `active-memory "
        "serve` (under /ui/) and exit",
    )
    add_json_option(parser)
    add_store_option(parser)
    parser.set_defaults(handler=_ui)


def checkouts_of(arguments: list[str] | None) -> list[Path]:
    """The checkouts the web view is given: each `--checkout` (remembered on this machine,
    known_checkouts.py; one that is not a checkout is a usage error), then the one
    around the current directory, if any."""
    from active_memory.checkout.git import NotACheckout, worktree_root
    from active_memory.errors import UsageError
    from active_memory.known_checkouts import remember_folder

    found: list[Path] = []
    for argument in arguments or []:
        try:
            root = worktree_root(argument)
        except NotACheckout as exc:
            raise UsageError(f"--checkout {argument}: {exc.reason}") from None
        if remember_folder(root, "ui") is None:
            raise UsageError(f"--checkout {argument}: its repository has no namespace")
        found.append(root)
    try:
        here = worktree_root(".")
    except NotACheckout:
        return found
    return found if here in found else [*found, here]


def _check_store(location: str) -> None:
    """Open the store once before listening: a missing or broken store is a clear error
    (exit 2), never a login link to a server that then fails."""
    import anyio

    from active_memory.store import open_store

    async def main() -> None:
        async with open_store(location, create=False):
            pass

    anyio.run(main, backend="asyncio")


def _ui(args: argparse.Namespace) -> int:
    import sys

    if args.link:
        return _link(args)

    from active_memory.errors import UsageError
    from active_memory.hooks.paths import default_token_path
    from active_memory.hooks.server import bind_loopback, loopback_host, stop_on_signals
    from active_memory.hooks.token import load_or_create_token

    # Checked before anything is created or imported: a bad --host must cost nothing.
    host = loopback_host(args.host)
    if not 0 <= args.port < 65536:
        raise UsageError(f"--port {args.port}: must be 0..65535")
    try:
        import uvicorn

        from active_memory.ui.app import create_app
        from active_memory.ui.auth import Gate
    except ImportError:
        from active_memory.install_source import extra_command

        raise UsageError(f"the web view needs its libraries: {extra_command('server')}") from None
    from active_memory.store import resolve_store_location

    location = resolve_store_location(args.store)
    _check_store(location)
    checkouts = checkouts_of(args.checkout)
    token_file = Path(args.token_file or default_token_path())
    gate = Gate(load_or_create_token(token_file))
    app = create_app(location, gate, checkouts=checkouts)
    sock = bind_loopback(host, args.port)
    port = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    config = uvicorn.Config(
        app, access_log=False, log_level="warning", server_header=False,
        timeout_graceful_shutdown=5,
    )  # fmt: skip
    server = uvicorn.Server(config)
    try:
        # As `serve`: a SIGTERM or SIGINT, from the moment the link is printed, stops the
        # server and the command exits 0 (uvicorn alone raises the signal again after its
        # shutdown: death by -15).
        with stop_on_signals(server):
            print(
                f"active-memory ui: open http://{shown}:{port}/login?code="
                f"{gate.new_login_code()} (one-time link, valid 10 minutes; later, log in "
                f"with the token in {token_file})",
                file=sys.stderr,
                flush=True,
            )
            server.run(sockets=[sock])
    finally:
        sock.close()
    print("active-memory ui: stopped", file=sys.stderr)
    return 0


def _link(args: argparse.Namespace) -> int:
    """Ask the running `serve` (its discovery file) for a one-time login code."""
    import http.client
    import json

    from active_memory.errors import UsageError
    from active_memory.hooks.discovery import read_discovery
    from active_memory.hooks.paths import discovery_path
    from active_memory.hooks.token import read_token

    running = read_discovery(discovery_path())
    if running is None:
        raise UsageError(
            "no recall server is running (no live discovery file); start it with "
            "`active-memory serve`, or run `active-memory ui` on its own"
        )
    token = read_token(Path(args.token_file or running.token_file))
    if token is None:
        raise UsageError(f"{running.token_file}: the server's token cannot be read")
    host = f"[{running.host}]" if ":" in running.host else running.host
    try:
        conn = http.client.HTTPConnection(running.host, running.port, timeout=30)
        conn.request(
            "POST",
            "/ui/login/code",
            headers={"Authorization": f"Bearer {token}", "Host": host},
        )
        reply = conn.getresponse()
        body = reply.read()
        conn.close()
    except OSError as exc:
        raise UsageError(
            f"the recall server on {host}:{running.port} (pid {running.pid}) did not answer: {exc}"
        ) from None
    if reply.status == 404:
        raise UsageError(
            f"the recall server (pid {running.pid}) serves no web view: it was started "
            "with --no-ui or by an older version; restart `active-memory serve`"
        )
    try:
        document = json.loads(body)
        code, path, seconds = document["code"], document["login_path"], document["valid_seconds"]
    except (ValueError, KeyError, TypeError):
        text = body.decode("utf-8", "replace").strip()[:200]
        raise UsageError(
            f"the recall server (pid {running.pid}) refused a login link "
            f"(HTTP {reply.status}: {text})"
        ) from None
    link = f"http://{host}:{running.port}{path}?code={code}"
    if args.json:
        from active_memory.commands.common import print_json

        print_json({"link": link, "valid_seconds": seconds, "pid": running.pid})
    else:
        print(link)
    return 0
