"""Where the recall server keeps its token and discovery file (standard library only).

The command hook imports this on every tool call, so it must not import the store
package (whose `__init__` loads pydantic and the lesson models: ~130 ms). The state-dir
rule is therefore restated here; `tests/test_server_paths.py` pins it to
`active_memory.store.location.zeroshot_state_dir`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

DEFAULT_PORT = 47683
"""The port `serve` binds and `hook install --http` writes into Claude Code's settings.

Claude Code checks an HTTP hook's URL when it loads the settings and does not expand
variables in it, so the URL (and its port) must be fixed at install time.
"""

TOKEN_ENV = "ACTIVE_MEMORY_TOKEN"
"""The variable Claude Code expands in the HTTP hook's Authorization header."""

HOOK_PATH_PREFIX = "/active-memory/v1/hook/"
"""`POST {prefix}{harness}`: one hook call; the body is the harness's hook JSON."""

HEALTH_PATH = "/active-memory/v1/health"
"""`GET`: answers `{"ok": true}` without touching any snapshot (liveness, benchmarks)."""

ENV_HEADER_PREFIX = "x-active-memory-env-"
"""A hook call's environment travels as headers `X-Active-Memory-Env-<NAME>: value`.

Recall reads the run's identity (ACTIVE_MEMORY_RUN_ID, …) from the hook's environment;
the server has its own, so the thin client (and Claude Code's HTTP hook, through
`allowedEnvVars`) forwards those variables. An empty value counts as unset, because
Claude Code sends an empty string for a variable that is not set.
"""

TOKEN_FILE = "server.token"
DISCOVERY_FILE = "server.json"


def server_state_dir(env: Mapping[str, str] | None = None) -> Path:
    """`<zeroshot state dir>/active-memory`: same rule as `store.location.zeroshot_state_dir`."""
    env = os.environ if env is None else env
    if env.get("ZEROSHOT_STATE_DIR"):
        base = Path(env["ZEROSHOT_STATE_DIR"])
    elif sys.platform == "win32":
        local = env.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        base = Path(local) / "zeroshot" / "state"
    elif env.get("XDG_STATE_HOME"):
        base = Path(env["XDG_STATE_HOME"]) / "zeroshot"
    else:
        base = Path(env.get("HOME") or str(Path.home())) / ".local" / "state" / "zeroshot"
    return base / "active-memory"


def default_token_path(env: Mapping[str, str] | None = None) -> Path:
    """The token file `serve` creates (mode 0600) unless `--token-file` names another."""
    return server_state_dir(env) / TOKEN_FILE


def discovery_path(env: Mapping[str, str] | None = None) -> Path:
    """The file a running server writes (port, pid, token file) so clients find it."""
    return server_state_dir(env) / DISCOVERY_FILE
