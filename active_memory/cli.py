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
    "hook",
    "recall",
    "instructions",
    "serve",
    "init",
    "skill",
    "settings",
    "worker",
    "queue",
)


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser, with every command family registered."""
    import argparse
    import importlib

    parser = argparse.ArgumentParser(
        prog="active-memory",
        description="Lessons agents learned from costly runs, recalled when they matter.",
    )
    subcommands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"active_memory.commands.{name}")
        module.register(subcommands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return its exit code (0 ok, 1 failed check, 2 bad input)."""
    from active_memory.errors import ActiveMemoryError
    from active_memory.settings import SettingsError

    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except ActiveMemoryError as exc:
        print(f"active-memory: {exc}", file=sys.stderr)
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


def run() -> None:
    """Console-script entry point."""
    arguments = sys.argv[1:]
    if len(arguments) == 2 and arguments[0] == "hook" and arguments[1] in HOOK_HARNESSES:
        from active_memory.hooks import command

        sys.argv = [sys.argv[0], arguments[1]]
        command.run()
    helping = "-h" in arguments or "--help" in arguments
    if len(arguments) >= 3 and arguments[:2] == ["hook", "session-end"] and not helping:
        # The session-end hook: as lean as the tool-call hooks, never failing the session.
        from active_memory.hooks import command

        sys.argv = [sys.argv[0], *arguments[1:]]
        command.run()
    sys.exit(main())
