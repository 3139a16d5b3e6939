"""The hook log: one line per failure, `<state dir>/active-memory/recall/hook.log`.

A hook never fails its tool call or its session; what went wrong goes here instead. Both
hook entries (`command.py` for tool calls, `session_end.py` for finished sessions) write
through this module, which imports only `os` until a line is written.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

LOG_FILE = "hook.log"
LOG_MAX_BYTES = 1024 * 1024
"""Past this the log is moved to `hook.log.1` (one generation kept)."""


def log_error(harness: str, exc: BaseException, env: Mapping[str, str]) -> None:
    """Append one line about `exc` to the hook log; never raises."""
    message = " ".join(str(exc).split()) or "(no message)"
    log_line(harness, f"{type(exc).__name__}: {message}", env)


def log_line(harness: str, text: str, env: Mapping[str, str]) -> None:
    """Append one line to the hook log (`<state>/active-memory/recall/hook.log`); never raises."""
    try:
        import time

        from active_memory.store.location import state_dir

        folder = os.path.join(state_dir(env), "recall")
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, LOG_FILE)
        try:
            if os.path.getsize(path) > LOG_MAX_BYTES:
                os.replace(path, path + ".1")
        except OSError:
            pass
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        from active_memory.credential_gate import mask

        # An error message may quote a payload: no credential is at rest in the log.
        said = mask(" ".join(text.split()))
        line = f"{stamp} hook {harness or '-'} pid={os.getpid()}: {said}"
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(descriptor, (line[:2000] + "\n").encode("utf-8", "replace"))
        finally:
            os.close(descriptor)
    except BaseException:  # logging is best effort
        pass
