"""How the tests drive the real `opencode` and `hermes` binaries against the scripted
model server (tests/fakes/model_server.py) in an isolated HOME, offline.

- **OpenCode 1.18** (`opencode-ai` from npm): a custom provider in
  `$XDG_CONFIG_HOME/opencode/opencode.json` whose `npm` is `@ai-sdk/openai-compatible`
  (bundled in the binary: nothing is installed) and whose `baseURL` is the server's
  Chat Completions URL; `opencode run PROMPT` runs one session and exits. OpenCode asks
  the model for a title first with a request that offers no tools: `opencode_side` keeps
  it off the script. Offline: `OPENCODE_DISABLE_MODELS_FETCH`, `OPENCODE_DISABLE_AUTOUPDATE`,
  and npm pointed at a closed loopback port in offline mode (OpenCode installs
  `@opencode-ai/plugin` into each config folder in the background; that fails at once
  and only logs a warning).
- **Hermes 0.19** (`hermes-agent` from PyPI, in its own virtual environment): provider
  `custom` with `base_url` the server's `/v1` in `$HERMES_HOME/config.yaml`, a fixed
  `context_length` (no metadata probes), tirith scanning off (it would download its
  binary); `hermes chat -q PROMPT -Q --yolo` runs one session and exits. Proxies point
  at a closed loopback port (with loopback exempt), so its update check and any other
  call off this machine fail at once.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from fakes.harness import isolated_home
from fakes.model_server import Received

CLOSED_PORT = "http://127.0.0.1:9"
"""Nothing listens there: a request sent to it is refused at once."""

OPENCODE_OFFLINE = {
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "npm_config_registry": CLOSED_PORT + "/",
    "npm_config_offline": "true",
}


def opencode_side(request: Received) -> bool:
    """A request OpenCode makes for itself (the session's title): it offers no tools."""
    body = request.body if isinstance(request.body, dict) else {}
    return not body.get("tools")


def opencode_environment(
    root: Path, openai_url: str, *, model: str = "fake-model"
) -> dict[str, str]:
    """An isolated environment whose OpenCode talks only to the server at `openai_url`."""
    env = isolated_home(root) | OPENCODE_OFFLINE
    config = Path(env["XDG_CONFIG_HOME"]) / "opencode"
    config.mkdir(parents=True, exist_ok=True)
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "name": "Fake",
        "options": {"baseURL": openai_url, "apiKey": "sk-test"},
        "models": {model: {"name": "Fake", "tool_call": True}},
    }
    document = {"provider": {"fake": provider}, "model": f"fake/{model}",
                "autoupdate": False, "share": "disabled"}  # fmt: skip
    (config / "opencode.json").write_text(json.dumps(document, indent=2), encoding="utf-8")
    return env


def opencode_database(env: dict[str, str]) -> Path:
    """Where OpenCode 1.18 keeps its sessions in `env`."""
    return Path(env["HOME"]) / ".local" / "share" / "opencode" / "opencode.db"


def run_opencode(
    binary: Path, prompt: str, cwd: Path, env: dict[str, str], *flags: str
) -> subprocess.CompletedProcess[str]:
    """One `opencode run` session in `cwd`."""
    return subprocess.run(
        [str(binary), "run", prompt, *flags], cwd=cwd, env=env, capture_output=True,
        text=True, timeout=240, stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip


def hermes_environment(
    root: Path, openai_url: str, *, model: str = "fake-model", extra: dict[str, Any] | None = None
) -> dict[str, str]:
    """An isolated environment whose Hermes talks only to the server at `openai_url`;
    `extra` is merged into its `config.yaml` (written as JSON, which is YAML)."""
    env = isolated_home(root) | {
        "HTTPS_PROXY": CLOSED_PORT,
        "HTTP_PROXY": CLOSED_PORT,
        "NO_PROXY": "127.0.0.1,localhost",
    }
    home = Path(env["HOME"]) / ".hermes"
    home.mkdir(parents=True, exist_ok=True)
    document: dict[str, Any] = {
        "model": {"default": model, "provider": "custom", "base_url": openai_url,
                  "api_key": "sk-test", "context_length": 128000},
        # No tirith download, and no `pip install` of a missing optional package at
        # start (edge-tts…) into the shared virtual environment.
        "security": {"tirith_enabled": False, "allow_lazy_installs": False},
    }  # fmt: skip
    document.update(extra or {})
    (home / "config.yaml").write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return env


def hermes_database(env: dict[str, str]) -> Path:
    """Where Hermes 0.19 keeps its sessions in `env`."""
    return Path(env.get("HERMES_HOME") or Path(env["HOME"]) / ".hermes") / "state.db"


def run_hermes(
    binary: Path, prompt: str, cwd: Path, env: dict[str, str], *flags: str
) -> subprocess.CompletedProcess[str]:
    """One `hermes chat -q` session in `cwd` (quiet, no approval prompts)."""
    return subprocess.run(
        [str(binary), "chat", "-q", prompt, "-Q", "--yolo", *flags], cwd=cwd, env=env,
        capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
