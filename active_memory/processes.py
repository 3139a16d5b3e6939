"""Processes of ours: whether one recorded in a state file (server discovery, postmortem
journal, the worker) lives, and the environment a child we start may inherit."""

from __future__ import annotations

import os

BASE_ENV = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ",
    "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME",
    "CLAUDE_CONFIG_DIR", "CODEX_HOME",
)  # fmt: skip
"""What a child (a harness CLI lane, the worker the session-end hook starts) needs to find
itself, its login and its settings; nothing else of the parent's environment is passed."""


def pid_alive(pid: int) -> bool:
    """True if a process with this pid exists (ours or another user's)."""
    if pid <= 0:
        return False
    if os.name == "nt":
        # os.kill on Windows terminates the process whatever the signal: never probe.
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def host_name() -> str:
    """This machine's name, as queue entries and worker owners record it."""
    import socket

    return socket.gethostname() or "localhost"
