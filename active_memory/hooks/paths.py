"""Where the recall server keeps its token and discovery file, and the names it answers to.

The command hook reads these on every tool call while a server runs, so this module
imports only `os` (already loaded by every interpreter) and the lean
`active_memory.store.location`, which owns the state-dir rule (SPEC §7).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

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


def server_state_dir(env: Mapping[str, str] | None = None) -> str:
    """`<zeroshot state dir>/active-memory` (SPEC §7's folder)."""
    from active_memory.store.location import state_dir

    return state_dir(os.environ if env is None else env)


def default_token_path(env: Mapping[str, str] | None = None) -> str:
    """The token file `serve` creates (mode 0600) unless `--token-file` names another."""
    return os.path.join(server_state_dir(env), TOKEN_FILE)


def discovery_path(env: Mapping[str, str] | None = None) -> str:
    """The file a running server writes (port, pid, token file) so clients find it."""
    return os.path.join(server_state_dir(env), DISCOVERY_FILE)
