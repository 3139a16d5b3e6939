"""Whether a process recorded in a state file (server discovery, postmortem journal) lives."""

from __future__ import annotations

import os


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
