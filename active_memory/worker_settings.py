"""The worker's settings: the `[worker]` table of the user's settings file, and the lane
they give (SPEC §2, "Settings outside a run"; docs/queue.md, "The automatic worker").

```toml
# <state dir>/active-memory/settings.toml
[worker]
enabled = true          # false: no session end starts a worker (sessions still queue)
lane = "claude"         # claude | codex | api; absent: the first one found (below)
model = "claude-sonnet-4-5"  # absent: each session's own, when the lane runs its harness
provider = "anthropic"  # the api lane's: anthropic | openai | openrouter
daily_tokens = 5000000  # spend cap per UTC day (0: none)
daily_usd = 5.0         # spend cap in dollars, where the lane reports cost
idle_seconds = 60       # an automatic worker exits after this long with nothing to do
concurrency = 2

[worker.env]            # the lane's credentials and endpoints
ANTHROPIC_API_KEY = "sk-ant-..."
ACTIVE_MEMORY_CLAUDE_BIN = "/opt/claude/bin/claude"
```

Only the user's file may hold `[worker]` (settings.py refuses it in a repository's
file). The lane's environment is the base environment a child of ours inherits
(`processes.BASE_ENV`) plus `[worker.env]`: a worker started by a session-end hook never
sees what the ending harness happened to have in its environment, and no exported
variable changes the lane unless these settings name it.

Without `lane` the worker takes the first that can run: `claude` (on PATH or
`ACTIVE_MEMORY_CLAUDE_BIN`), `codex` (`ACTIVE_MEMORY_CODEX_BIN`), then the API lane when
`[worker.env]` holds a provider's key and its SDK extra is installed. When none can, the
worker still claims settled sessions: one with nothing to learn is done without a model;
the others stay pending with the reason (`LanePick.problem`), which says what to set.

Standard library only: the session-end hook reads `enabled` through this module.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from active_memory.processes import BASE_ENV
from active_memory.settings import SettingsError, read_settings_file, user_settings_path

TABLE = "worker"
AUTO_WORKER_ENV = "ACTIVE_MEMORY_AUTO_WORKER"
"""`0` in a session-end hook's environment: start no worker (a CI machine, the test
suite); `[worker] enabled = false` says the same for every session of the user."""
WORKER_LANES = ("claude", "codex", "api")
PROVIDER_KEYS = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
}
"""The key each API provider needs (the adapters read the same names)."""
PROVIDER_SDKS = {"anthropic": "anthropic", "openai": "openai", "openrouter": "openai"}
"""The Python package each API provider's adapter imports (the extra that installs it)."""
BINARY_VARIABLES = {"claude": "ACTIVE_MEMORY_CLAUDE_BIN", "codex": "ACTIVE_MEMORY_CODEX_BIN"}
"""Where a CLI lane finds its binary when it is not on PATH (e.g. under a service manager)."""
INSTALL_HINTS = {
    "claude": "install Claude Code (npm install -g @anthropic-ai/claude-code)",
    "codex": "install Codex (npm install -g @openai/codex)",
}

DEFAULT_DAILY_TOKENS = 5_000_000
"""The spend cap per UTC day when the settings name none (0 turns the cap off)."""
DEFAULT_IDLE_SECONDS = 60.0
DEFAULT_CONCURRENCY = 2
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_MAX_MODEL = 2048
_MAX_VALUE = 64 * 1024


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    """The `[worker]` table, defaults filled in; `path` is the user's settings file."""

    enabled: bool = True
    lane: str | None = None
    model: str | None = None
    provider: str | None = None
    daily_tokens: int | None = DEFAULT_DAILY_TOKENS
    daily_usd: float | None = None
    idle_seconds: float = DEFAULT_IDLE_SECONDS
    concurrency: int = DEFAULT_CONCURRENCY
    env: Mapping[str, str] = field(default_factory=dict)
    path: str = ""  # the user's settings file (whether it exists or not)

    def to_json(self) -> dict[str, Any]:
        """The settings for `--json` output; `env` values are never shown."""
        return {
            "enabled": self.enabled, "lane": self.lane, "model": self.model,
            "provider": self.provider, "daily_tokens": self.daily_tokens,
            "daily_usd": self.daily_usd, "idle_seconds": self.idle_seconds,
            "concurrency": self.concurrency, "env": sorted(self.env), "file": self.path or None,
        }  # fmt: skip


def read_worker_settings(env: Mapping[str, str] | None = None) -> WorkerSettings:
    """The user's `[worker]` table (defaults when the file or the table is absent).

    Raises `SettingsError` naming the file and the key for an invalid value.
    """
    from active_memory.store.location import state_dir

    environment = os.environ if env is None else env
    path = user_settings_path(environment)
    cache = os.path.join(state_dir(environment), "recall", "settings")
    values = read_settings_file(path, cache_dir=cache)
    table = (values or {}).get(TABLE)
    if table is None:
        return WorkerSettings(path=path)
    return _checked(path, table)


def _checked(path: str, table: Mapping[str, Any]) -> WorkerSettings:
    def fail(key: str, problem: str) -> SettingsError:
        return SettingsError(path, f"{TABLE}.{key}", problem)

    known = {"enabled", "lane", "model", "provider", "daily_tokens", "daily_usd",
             "idle_seconds", "concurrency", "env"}  # fmt: skip
    for key in table:
        if key not in known:
            raise fail(key, f"unknown setting; allowed: {', '.join(sorted(known))}")
    found: dict[str, Any] = {"path": path}
    enabled = table.get("enabled", True)
    if not isinstance(enabled, bool):
        raise fail("enabled", f"must be true or false, found {enabled!r}")
    found["enabled"] = enabled
    lane = table.get("lane")
    if lane is not None and lane not in WORKER_LANES:
        raise fail("lane", f"must be one of {', '.join(WORKER_LANES)}, found {lane!r}")
    found["lane"] = lane
    model = table.get("model")
    if model is not None and not (isinstance(model, str) and 0 < len(model) <= _MAX_MODEL
                                  and model.strip() == model):  # fmt: skip
        raise fail(
            "model", f"must be a model ID (text without surrounding spaces), found {model!r}"
        )
    found["model"] = model
    provider = table.get("provider")
    if provider is not None and provider not in PROVIDER_KEYS:
        raise fail("provider", f"must be one of {', '.join(PROVIDER_KEYS)}, found {provider!r}")
    found["provider"] = provider
    tokens = table.get("daily_tokens", DEFAULT_DAILY_TOKENS)
    if not _whole(tokens) or tokens < 0:
        raise fail("daily_tokens", f"must be a whole number of tokens, 0 or more (0: no cap), "
                   f"found {tokens!r}")  # fmt: skip
    found["daily_tokens"] = tokens or None
    dollars = table.get("daily_usd")
    if dollars is not None and (not _number(dollars) or dollars < 0):
        raise fail("daily_usd", f"must be a number of dollars, 0 or more, found {dollars!r}")
    found["daily_usd"] = float(dollars) if dollars else None
    idle = table.get("idle_seconds", DEFAULT_IDLE_SECONDS)
    if not _number(idle) or not 1 <= idle <= 86400:
        raise fail("idle_seconds", f"must be a number of seconds 1..86400, found {idle!r}")
    found["idle_seconds"] = float(idle)
    concurrency = table.get("concurrency", DEFAULT_CONCURRENCY)
    if not _whole(concurrency) or not 1 <= concurrency <= 64:
        raise fail("concurrency", f"must be a whole number 1..64, found {concurrency!r}")
    found["concurrency"] = concurrency
    found["env"] = _checked_env(table.get("env", {}), fail)
    return WorkerSettings(**found)


def _checked_env(value: Any, fail: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        raise fail("env", 'must be a table of NAME = "value" lines ([worker.env])')
    checked: dict[str, str] = {}
    for name, text in value.items():
        if not _ENV_NAME.fullmatch(name):
            raise fail("env", f"{name!r} is not an environment variable name")
        if not isinstance(text, str) or len(text) > _MAX_VALUE or "\0" in text:
            raise fail("env", f"{name} must be a text value")
        checked[name] = text
    return checked


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def lane_environment(
    settings: WorkerSettings, environ: Mapping[str, str], *, inherit: bool
) -> dict[str, str]:
    """The environment the worker's lane runs with: `environ` whole when `inherit` (a
    worker a person started), else only its `BASE_ENV` names (a worker a hook started);
    then `[worker.env]`, which wins."""
    chosen = dict(environ) if inherit else {k: environ[k] for k in BASE_ENV if k in environ}
    chosen.update(settings.env)
    return chosen


def find_executable(name: str, environ: Mapping[str, str]) -> str | None:
    """A CLI lane's binary: its ACTIVE_MEMORY_*_BIN variable, else PATH (None: not found)."""
    configured = environ.get(BINARY_VARIABLES[name], "")
    if configured:
        path = os.path.expanduser(configured)
        return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    return shutil.which(name, path=environ.get("PATH"))


def sdk_installed(provider: str) -> bool:
    """The API provider's SDK (its extra) can be imported here."""
    import importlib.util

    try:
        return importlib.util.find_spec(PROVIDER_SDKS[provider]) is not None
    except (ImportError, ValueError):
        return False


@dataclass(frozen=True, slots=True)
class LanePick:
    """The worker's lane: `name` (None: no lane can run), where that choice came from, the
    CLI's binary or the API's provider, and `problem` (what to set) when there is none."""

    name: str | None
    source: str
    executable: str | None = None
    provider: str | None = None
    problem: str = ""

    def describe(self) -> str:
        """One line: `claude (/usr/bin/claude; found on PATH)`, or the problem."""
        if self.name is None:
            return f"none ({self.problem})"
        where = self.executable or f"provider {self.provider}"
        return f"{self.name} ({where}; {self.source})"


def pick_lane(
    settings: WorkerSettings, environ: Mapping[str, str], requested: str | None = None
) -> LanePick:
    """The lane the worker runs postmortems on (see the module); `requested` is `--lane`.

    `environ` is the lane's environment (`lane_environment`).
    """
    where = settings.path or user_settings_path(environ)
    if requested is not None:
        return _named(requested, "--lane", settings, environ, where)
    if settings.lane is not None:
        return _named(settings.lane, f"settings ({where})", settings, environ, where)
    for name in ("claude", "codex"):
        found = find_executable(name, environ)
        if found is not None:
            source = BINARY_VARIABLES[name] if environ.get(BINARY_VARIABLES[name]) else "PATH"
            return LanePick(name, f"found on {source}", executable=found)
    for provider in _providers(settings):
        key = PROVIDER_KEYS[provider]
        if settings.env.get(key) and sdk_installed(provider):
            return LanePick("api", f"{key} in [worker.env]", provider=provider)
    return LanePick(None, "", problem=(
        "no lane: no `claude` or `codex` on PATH and no API key in [worker.env]; in "
        f"{where} set [worker] lane = \"claude\" and, if it is not on PATH, "
        "ACTIVE_MEMORY_CLAUDE_BIN under [worker.env] (or an ANTHROPIC_API_KEY there, with "
        "the anthropic extra)"
    ))  # fmt: skip


def _providers(settings: WorkerSettings) -> tuple[str, ...]:
    return (settings.provider,) if settings.provider else tuple(PROVIDER_KEYS)


def _named(
    name: str, source: str, settings: WorkerSettings, environ: Mapping[str, str], where: str
) -> LanePick:
    if name in BINARY_VARIABLES:
        found = find_executable(name, environ)
        if found is not None:
            return LanePick(name, source, executable=found)
        variable = BINARY_VARIABLES[name]
        configured = environ.get(variable)
        missing = (f"{variable}={configured} is not an executable file" if configured
                   else f"`{name}` was not found on PATH")  # fmt: skip
        return LanePick(None, source, problem=(
            f"the {name} lane ({source}): {missing}; {INSTALL_HINTS[name]}, or set "
            f"{variable} under [worker.env] in {where}"
        ))  # fmt: skip
    if name != "api":
        return LanePick(
            None, source, problem=f"{name} is not a worker lane; use claude, codex or api"
        )
    provider = settings.provider or next(
        (p for p in PROVIDER_KEYS if environ.get(PROVIDER_KEYS[p])), "anthropic"
    )
    key = PROVIDER_KEYS[provider]
    if not environ.get(key):
        return LanePick(None, source, provider=provider, problem=(
            f"the api lane ({source}, provider {provider}) needs {key}: put it under "
            f"[worker.env] in {where}"
        ))  # fmt: skip
    if not sdk_installed(provider):
        from active_memory.install_source import extra_command

        extra = "anthropic" if provider == "anthropic" else "openai"
        return LanePick(None, source, provider=provider, problem=(
            f"the api lane ({source}, provider {provider}) needs the {PROVIDER_SDKS[provider]} "
            f"package: {extra_command(extra)}"
        ))  # fmt: skip
    return LanePick("api", source, provider=provider)
