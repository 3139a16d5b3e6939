"""`active-memory hook claude|codex|gemini|copilot|pi|after-tool` (and `install` /
`uninstall` when present).

The answering subcommands run the same code as the lean `active-memory-hook` entry
point (`active_memory.hooks.command`): stdin hook JSON in, stdout JSON out, exit 0
always. `install` / `uninstall` come from `active_memory.hooks.install_cli`, registered
here when that module exists.
"""

from __future__ import annotations

import argparse
import importlib.util

from active_memory.commands.common import add_store_option

HOOKS = {
    "claude": "Claude Code PreToolUse hook: stdin hook JSON, stdout additionalContext",
    "codex": "Codex PreToolUse hook: stdin hook JSON, stdout additionalContext",
    "after-tool": "after-tool callback (OpenCode): stdin tool call, stdout text to append",
    "pi": "Pi extension tool_result callback: stdin tool call, stdout text to append",
    "gemini": "Gemini CLI AfterTool hook: stdin hook JSON, stdout additionalContext",
    "copilot": "Copilot CLI preToolUse hook: stdin hook JSON, stdout additionalContext",
}

INSTALL_MODULE = "active_memory.hooks.install_cli"


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `hook` and its subcommands."""
    parser = subcommands.add_parser(
        "hook",
        help="harness hook entry points (stdin JSON → stdout JSON); install / uninstall",
        description="Answer one harness hook call: read the hook JSON on stdin, print the "
        "cards to add (or nothing). Never fails the tool call: errors are logged to "
        "<state dir>/active-memory/recall/hook.log and the exit code is 0.",
    )
    hooks = parser.add_subparsers(dest="hook", metavar="HOOK", required=True)
    for name, help_text in HOOKS.items():
        sub = hooks.add_parser(name, help=help_text, description=help_text)
        sub.set_defaults(handler=_answer, harness=name)
    end = hooks.add_parser(
        "session-end",
        help="enqueue a finished harness session for a postmortem (stdin: its end payload)",
        description="Put a finished harness session in the store's postmortem queue (see "
        "docs/queue.md). Never fails the session: errors are logged and the exit code is 0.",
    )
    end.add_argument("harness", type=str.lower, choices=SESSION_END_HARNESSES)
    add_store_option(end)
    end.set_defaults(handler=_session_end)
    # The installers live beside the server; registered here when present.
    if importlib.util.find_spec(INSTALL_MODULE) is not None:
        importlib.import_module(INSTALL_MODULE).register(hooks)


SESSION_END_HARNESSES = ("claude", "codex", "opencode", "pi", "gemini", "copilot", "hermes")
"""`hooks/session_end.py` HARNESSES (repeated: the parser must not import the hook)."""


def _session_end(args: argparse.Namespace) -> int:
    from active_memory.hooks.session_end import main

    return main([args.harness, *(["--store", args.store] if args.store else [])])


def _answer(args: argparse.Namespace) -> int:
    from active_memory.hooks.command import main

    return main([args.harness])
