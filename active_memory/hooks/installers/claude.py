"""Claude Code: a PreToolUse hook (command or HTTP), context hooks and a SessionEnd hook
in `~/.claude/settings.json` (`--user`) or, for a project, in
`.claude/settings.local.json`: Claude Code's per-person project file, kept out of git
(the installer adds it to `.git/info/exclude` when nothing ignores it), because the hooks
name this user's hook entry and `.claude/settings.json` is the file teams commit. A
project install also takes ours out of `.claude/settings.json`, where earlier versions
wrote them.

The PreToolUse hook answers tool calls with lesson cards; the context hooks
(`PostToolBatch`, `UserPromptSubmit`, `SessionStart` after a compaction or a clear) run
`active-memory-hook context claude`, which confirms, refunds or resets the deliveries of
a context (recall/contexts.py); the SessionEnd hook runs
`active-memory-hook session-end claude`, which enqueues the settled session for its
postmortem (docs/queue.md). Both commands are the absolute path of the console script
(command_path.py), so they run whatever PATH Claude Code has.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from active_memory.hooks.installers.command_path import shell_command
from active_memory.hooks.installers.files import FileChange
from active_memory.hooks.installers.hook_settings import HookEntry, plan_entries
from active_memory.hooks.paths import ENV_HEADER_PREFIX, HOOK_PATH_PREFIX, TOKEN_ENV

MATCHER = "Read|Edit|MultiEdit|Write|NotebookEdit|Grep|Glob|Bash"
"""The tools whose arguments carry recall signals (paths, patterns, shell arguments)."""

FORWARDED_ENV = (
    "ACTIVE_MEMORY_RUN_ID",
    "ACTIVE_MEMORY_SESSION_ID",
    "ACTIVE_MEMORY_GRAPH_HASH",
    "ACTIVE_MEMORY_NODE",
    "ACTIVE_MEMORY_BUDGET_BYTES",
    "ACTIVE_MEMORY_REPOSITORY",
    "ACTIVE_MEMORY_WORKSPACE",
    "ACTIVE_MEMORY_SCOPES",
    "ACTIVE_MEMORY_STORE",
)
"""The run identity a hook reads from its environment (docs/recall.md, "Identity"): the
HTTP hook forwards them as headers, as the command hook's thin client does."""

COMMAND = "active-memory-hook claude"
"""The lean console script (docs/recall.md): about 1.7x a bare interpreter per tool call,
where the full CLI (`active-memory hook claude`, also recognised as ours) costs 5x. The
installer writes it with the script's absolute path."""
COMMAND_TIMEOUT = 10
HTTP_TIMEOUT = 5
SESSION_END = "SessionEnd"
SESSION_END_TIMEOUT = 5

# Ours: any command that runs `active-memory-hook claude` or `active-memory hook claude`
# (however the executable is spelled: a path, a venv, quoted) and any HTTP hook pointed at
# our server's hook path.
_OUR_COMMAND = re.compile(
    r"""(^|[\s/\\'"])active-memory(-hook(\.exe)?['"]?|(\.exe)?['"]?\s+hook)\s+claude\b"""
)
_OUR_CONTEXT = re.compile(
    r"""(^|[\s/\\'"])active-memory(-hook(\.exe)?['"]?|(\.exe)?['"]?\s+hook)"""
    r"""\s+context\s+claude\b"""
)
CONTEXT_TIMEOUT = 5
CONTEXT_EVENTS: tuple[tuple[str, str | None], ...] = (
    ("PostToolBatch", None),
    ("UserPromptSubmit", None),
    ("SessionStart", "compact|clear"),
)
"""The context events and their matchers: a batch handed back to the model confirms its
cards; a new prompt refunds what a call that never ran (an interruption) was given; a
compaction or a clear starts the context's ledger again. `PostToolUse` would confirm per
call, but costs a hook process on every tool call; the batch event comes once per turn
of calls, also after a permission refusal (docs/harnesses.md, "Contexts")."""
_OUR_SESSION_END = re.compile(
    r"""(^|[\s/\\'"])active-memory(-hook(\.exe)?['"]?|(\.exe)?['"]?\s+hook)"""
    r"""\s+session-end\s+claude\b"""
)


ENV_HEADER_TITLE = "-".join(part.capitalize() for part in ENV_HEADER_PREFIX.split("-"))
"""`X-Active-Memory-Env-` (the same header name, capitalised as people write it)."""


def settings_path(base: Path) -> Path:
    """`<base>/.claude/settings.json` (base: the checkout root or the home folder)."""
    return base / ".claude" / "settings.json"


def local_settings_path(root: Path) -> Path:
    """`<root>/.claude/settings.local.json`: a project's per-person settings."""
    return root / ".claude" / "settings.local.json"


def git_exclude_change(root: Path, path: Path) -> FileChange | None:
    """The line that keeps `path` (in the checkout at `root`) out of git, in the
    repository's `info/exclude`; None when git already ignores it or there is no git."""
    import subprocess

    relative = path.relative_to(root).as_posix()
    try:
        ignored = subprocess.run(
            ["git", "-C", str(root), "check-ignore", "-q", relative],
            capture_output=True, timeout=10, check=False,
        )  # fmt: skip
        found = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--git-path", "info/exclude"],
            capture_output=True, text=True, timeout=10, check=False,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    if ignored.returncode == 0 or found.returncode != 0 or not found.stdout.strip():
        return None
    exclude = Path(found.stdout.strip())
    exclude = exclude if exclude.is_absolute() else root / exclude
    try:
        before = exclude.read_text(encoding="utf-8")
    except FileNotFoundError:
        before = None
    except OSError:
        return None
    text = before or ""
    line = f"/{relative}"
    if line in text.splitlines():
        return None
    after = text + ("" if not text or text.endswith("\n") else "\n")
    after += f"# active-memory: Claude Code's per-person hooks (hook install claude)\n{line}\n"
    return FileChange(exclude, before, after)


def is_ours(handler: Any) -> bool:
    """True for a hook handler this installer wrote (command or HTTP)."""
    if not isinstance(handler, dict):
        return False
    if handler.get("type") == "command":
        command = handler.get("command")
        return isinstance(command, str) and bool(_OUR_COMMAND.search(command))
    if handler.get("type") == "http":
        url = handler.get("url")
        return isinstance(url, str) and f"{HOOK_PATH_PREFIX}claude" in url
    return False


def is_our_session_end(handler: Any) -> bool:
    """True for a SessionEnd handler this installer wrote."""
    if not isinstance(handler, dict) or handler.get("type") != "command":
        return False
    command = handler.get("command")
    return isinstance(command, str) and bool(_OUR_SESSION_END.search(command))


def is_our_context(handler: Any) -> bool:
    """True for a context-event handler this installer wrote."""
    if not isinstance(handler, dict) or handler.get("type") != "command":
        return False
    command = handler.get("command")
    return isinstance(command, str) and bool(_OUR_CONTEXT.search(command))


def context_handler(script: Path | None) -> dict[str, Any]:
    """Our context-event handler (prints nothing, returns in milliseconds)."""
    command = (
        shell_command(script, "context", "claude")
        if script
        else "active-memory-hook context claude"
    )
    return {"type": "command", "command": command, "timeout": CONTEXT_TIMEOUT}


def handler(http: bool, port: int, script: Path | None = None) -> dict[str, Any]:
    """Our hook handler: the command hook, or the HTTP hook to the resident server.

    The HTTP hook's token is never written into the settings file (a project's is
    usually committed): Claude Code expands `$ACTIVE_MEMORY_TOKEN` from its environment,
    and only because `allowedEnvVars` lists it.
    """
    if not http:
        command = shell_command(script, "claude") if script else COMMAND
        return {"type": "command", "command": command, "timeout": COMMAND_TIMEOUT}
    headers = {"Authorization": f"Bearer ${TOKEN_ENV}"}
    for name in FORWARDED_ENV:
        headers[f"{ENV_HEADER_TITLE}{name}"] = f"${name}"
    return {
        "type": "http",
        "url": f"http://127.0.0.1:{port}{HOOK_PATH_PREFIX}claude",
        "headers": headers,
        "allowedEnvVars": [TOKEN_ENV, *FORWARDED_ENV],
        "timeout": HTTP_TIMEOUT,
    }


def session_end_handler(script: Path | None) -> dict[str, Any]:
    """Our SessionEnd handler: enqueue the settled session (returns in milliseconds)."""
    command = (
        shell_command(script, "session-end", "claude")
        if script
        else ("active-memory-hook session-end claude")
    )
    return {"type": "command", "command": command, "timeout": SESSION_END_TIMEOUT}


def entries(http: bool, port: int, script: Path | None) -> list[HookEntry]:
    """Our hooks: PreToolUse (recall), the context events, SessionEnd (enqueue)."""
    context = context_handler(script)
    return [
        HookEntry("PreToolUse", handler(http, port, script), MATCHER, is_ours),
        *(HookEntry(event, context, matcher, is_our_context) for event, matcher in CONTEXT_EVENTS),
        HookEntry(SESSION_END, session_end_handler(script), None, is_our_session_end),
    ]


def plan(
    path: Path, install: bool, http: bool, port: int, script: Path | None = None
) -> FileChange:
    """The change that installs (or removes) our hooks in the settings file at `path`."""
    return plan_entries(path, install, entries(http, port, script))
