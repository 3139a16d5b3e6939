"""The real harness binaries for tests, and the isolated environment they run in.

A binary is found through `ACTIVE_MEMORY_TEST_CLAUDE`, `_CODEX`, `_PI`, `_GEMINI`,
`_COPILOT`, `_OPENCODE`, `_HERMES` (a path; `.ci/run` sets them) or else on PATH.
Without it a test skips with the reason; in CI (`CI=true`) it fails instead, so a broken
install cannot pass as a skip.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ENV_VARS = {
    "claude": "ACTIVE_MEMORY_TEST_CLAUDE",
    "codex": "ACTIVE_MEMORY_TEST_CODEX",
    "pi": "ACTIVE_MEMORY_TEST_PI",
    "gemini": "ACTIVE_MEMORY_TEST_GEMINI",
    "copilot": "ACTIVE_MEMORY_TEST_COPILOT",
    "opencode": "ACTIVE_MEMORY_TEST_OPENCODE",
    "hermes": "ACTIVE_MEMORY_TEST_HERMES",
}

# Claude Code's switches that keep a test run off the network: no update check, no
# telemetry or error reporting, no non-essential traffic.
CLAUDE_QUIET = {
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
}


def find_harness(name: str) -> Path | None:
    """The binary's path from its env var, else from PATH, else None."""
    configured = os.environ.get(ENV_VARS[name], "")
    if configured:
        path = Path(configured)
        return path if path.is_file() and os.access(path, os.X_OK) else None
    found = shutil.which(name)
    return Path(found) if found else None


def require_harness(name: str) -> Path:
    """The binary, or skip (locally) / fail (CI=true) saying how to provide it."""
    path = find_harness(name)
    if path is not None:
        return path
    variable = ENV_VARS[name]
    configured = os.environ.get(variable)
    reason = (
        f"{variable}={configured} is not an executable file"
        if configured
        else f"the real `{name}` binary was not found (set {variable} to its path or put it "
        "on PATH; `.ci/run` installs it)"
    )
    if os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason)


def isolated_home(root: Path) -> dict[str, str]:
    """A fresh HOME (and config folders) under `root`: no user settings leak in."""
    home = root / "home"
    (home / ".config").mkdir(parents=True, exist_ok=True)
    codex_home = home / ".codex"
    codex_home.mkdir(exist_ok=True)
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "CODEX_HOME": str(codex_home),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        # A session end starts no worker here: the tests of the automatic worker drop it.
        "ACTIVE_MEMORY_AUTO_WORKER": "0",
        "PIP_CACHE_DIR": pip_cache(),
    }


def pip_cache() -> str:
    """The pip cache a plugin's set-up uses in a test (plugins/bootstrap.py installs the
    package with pip): `ACTIVE_MEMORY_TEST_PIP_CACHE` (`.ci/run` keeps one between runs),
    else one folder shared by the session's tests under its own HOME, so only the first
    set-up of a run downloads the dependencies."""
    configured = os.environ.get("ACTIVE_MEMORY_TEST_PIP_CACHE")
    if configured:
        return configured
    return str(Path(os.environ.get("HOME", "/tmp")) / ".cache" / "active-memory-tests-pip")


def claude_environment(root: Path, base_url: str, key: str) -> dict[str, str]:
    """An isolated environment for `claude` against a fake Anthropic server."""
    return (
        isolated_home(root)
        | CLAUDE_QUIET
        | {
            "ANTHROPIC_BASE_URL": base_url,
            "ANTHROPIC_API_KEY": key,
        }
    )


def codex_config(
    codex_home: Path, base_url: str, *, key_name: str | None = "FAKE_OPENAI_KEY"
) -> Path:
    """`$CODEX_HOME/config.toml` naming the fake server as the model provider (Responses
    API, no retries so a scripted failure is seen at once). `key_name`: the variable
    holding the key (None: no key, as for a local server)."""
    lines = [
        'model_provider = "fake"',
        "[analytics]",
        "enabled = false",
        "[model_providers.fake]",
        'name = "fake"',
        f'base_url = "{base_url}"',
        'wire_api = "responses"',
        "request_max_retries = 0",
        "stream_max_retries = 0",
    ]
    if key_name:
        lines.append(f'env_key = "{key_name}"')
    path = codex_home / "config.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
