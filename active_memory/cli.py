"""The `active-memory` command.

Each command family lives in `active_memory.commands.<name>` and registers its
subcommands here. Command modules import only the standard library at module level
and load everything heavy inside their handlers, so that the per-tool-call hook
process starts fast.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing costs the hook path
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence

    Handler = Callable[[argparse.Namespace], int]

# `active-memory hook claude|codex|after-tool` runs once per tool call: it skips the
# argument parser (and every import it needs) and goes straight to the lean hook entry.
HOOK_HARNESSES = frozenset({"claude", "codex", "after-tool", "pi", "gemini", "copilot"})

# Order is the order of `active-memory --help`.
COMMAND_MODULES: tuple[str, ...] = (
    "lessons",
    "backup",
    "config",
    "imports",
    "evidence",
    "postmortem",
    "postmortems",
    "setup",
    "hook",
    "recall",
    "instructions",
    "serve",
    "ui",
    "init",
    "skill",
    "settings",
    "worker",
    "queue",
    "mcp",
)


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser, with every command family registered."""
    import argparse
    import importlib

    from active_memory import __version__

    parser = argparse.ArgumentParser(
        prog="active-memory",
        description="Lessons agents learned from costly runs, recalled when they matter.",
    )
    parser.add_argument("--version", action="version", version=f"active-memory {__version__}")
    subcommands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"active_memory.commands.{name}")
        module.register(subcommands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return its exit code (0 ok, 1 failed check, 2 bad input)."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    if is_hook_call(arguments):
        from active_memory.hooks import command

        return command.main(arguments[1:])

    import os

    from active_memory.commands.common import refresh_recall
    from active_memory.private import use_private_umask
    from active_memory.store.announce import on_store_change

    # Everything this command creates is the owner's only (docs/security.md), and a
    # change to the lessons brings recall's generations up to date (the store announces
    # it: docs/store.md); both undone after, for callers that run commands in-process.
    previous_umask = use_private_umask()
    unsubscribe = on_store_change(refresh_recall)
    try:
        return _dispatch(argv)
    finally:
        unsubscribe()
        os.umask(previous_umask)


INTERNAL_ERROR = 70
"""Exit code of a failure that is a bug of ours (EX_SOFTWARE), never of the input."""

DEBUG_ENV = "ACTIVE_MEMORY_DEBUG"


def _dispatch(argv: Sequence[str] | None) -> int:
    import os

    from active_memory.errors import ActiveMemoryError
    from active_memory.settings import SettingsError

    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except ActiveMemoryError as exc:
        print(f"active-memory: {_one_line(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except SettingsError as exc:  # an invalid settings file met outside `load_settings`
        print(f"active-memory: {exc}; fix the file or move it away", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("active-memory: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Output piped into a closed reader (e.g. `| head`): not an error of ours.
        return 0
    except Exception as exc:
        # A bug, not bad input: one line, and the traceback only when asked for.
        if os.environ.get(DEBUG_ENV):
            raise
        print(
            f"active-memory: internal error ({type(exc).__name__}: {_one_line(str(exc))[:300]}); "
            f"run again with {DEBUG_ENV}=1 for the traceback and report it",
            file=sys.stderr,
        )
        return INTERNAL_ERROR


def _one_line(message: str) -> str:
    # Multi-line messages (a list of bad lines) stay as they are; only text that cannot
    # be printed (a lone surrogate from somewhere) is escaped.
    return message.encode("utf-8", "backslashreplace").decode("utf-8")


def is_hook_call(arguments: Sequence[str]) -> bool:
    """`hook claude|codex|after-tool …`: the never-fail path, whatever follows.

    A harness treats exit 2 as "block the tool call", so a stray argument after the
    harness name must not reach the argument parser (it would exit 2).
    """
    return len(arguments) >= 2 and arguments[0] == "hook" and arguments[1].lower() in HOOK_HARNESSES


def run() -> None:
    """Console-script entry point."""
    arguments = sys.argv[1:]
    if is_hook_call(arguments):
        from active_memory.hooks import command

        sys.argv = [sys.argv[0], *arguments[1:]]
        command.run()
    helping = "-h" in arguments or "--help" in arguments
    if len(arguments) >= 3 and arguments[:2] == ["hook", "session-end"] and not helping:
        # The session-end hook: as lean as the tool-call hooks, never failing the session.
        from active_memory.hooks import command

        sys.argv = [sys.argv[0], *arguments[1:]]
        command.run()
    code = main()
    _exit_now(code)


def _exit_now(code: int) -> None:
    """Exit as soon as the report is out.

    Interpreter teardown would wait for worker threads a deadline abandoned (a provider
    SDK still importing, a store thread) and cost 0.2-0.7 s after the report; every
    file a command writes is closed by then, so flush the streams and logs and go.
    """
    import logging
    import os

    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # a closed pipe: nothing more to say
        pass
    logging.shutdown()
    os._exit(code)


if __name__ == "__main__":  # `python -m active_memory.cli`: how a hook starts the worker
    run()
