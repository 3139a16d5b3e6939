"""How each real harness binary is set up, hooked and run in the end-to-end tests
(tests/e2e_support.py runs the scenario; tests/test_e2e_real.py has one test per
harness).

Every harness talks only to the scripted model server on loopback, in an isolated HOME,
with the hooks `active-memory hook install HARNESS` writes as a user gets them:

- Claude Code: `ANTHROPIC_BASE_URL` (Messages API); project hooks
  (`.claude/settings.local.json`); `claude -p --permission-mode bypassPermissions`.
- Codex: a `model_providers` entry (Responses API); project hooks, trusted by the
  installer; `codex exec`.
- Pi: a custom `openai-completions` provider; the user extension; `pi -p`.
- Gemini CLI: `GOOGLE_GEMINI_BASE_URL` (Gemini API); user hooks (folder trust off in its
  settings, as docs/harnesses.md says); `gemini -p --yolo`.
- Copilot CLI: BYOK `COPILOT_PROVIDER_BASE_URL`, `COPILOT_OFFLINE`; user hooks;
  `copilot -p --allow-all-tools`.
- OpenCode: an `@ai-sdk/openai-compatible` provider; the user plugin; `opencode run`.
- Hermes: provider `custom` (Chat Completions); the user plugin; `hermes chat -q --yolo`.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from e2e_support import CLI, Drive, Tools, World
from fakes.harness import CLAUDE_QUIET, codex_config, isolated_home
from fakes.model_server import tool
from harness_drive import hermes_environment, opencode_environment


def install(world: World, env: dict[str, str], *args: str) -> None:
    """`active-memory hook install ARGS` in the repository, as the user runs it."""
    done = subprocess.run([str(CLI), "hook", "install", *args], cwd=world.repo, env=env,
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, (args, done.stdout, done.stderr)


def session(
    argv: list[str], world: World, env: dict[str, str], prompt: str | None = None
) -> subprocess.CompletedProcess[str]:
    """One session of a binary in the repository (the prompt on stdin when given)."""
    return subprocess.run(
        argv, cwd=world.repo, env=env, input=prompt, capture_output=True, text=True,
        timeout=240, stdin=None if prompt is not None else subprocess.DEVNULL, check=False,
    )  # fmt: skip


# Claude Code ---------------------------------------------------------------------------


def _claude(world: World) -> dict[str, str]:
    env = world.ours(isolated_home(world.root)) | CLAUDE_QUIET | {
        "ANTHROPIC_BASE_URL": world.server.url,
        "ANTHROPIC_API_KEY": "sk-ant-api03-E2EUSERkey0123456789abcdef",
        "IS_SANDBOX": "1",  # bypassPermissions is refused as root without it
    }  # fmt: skip
    install(world, env, "claude")
    return env


def _claude_run(
    binary: Path, world: World, env: dict[str, str], prompt: str
) -> subprocess.CompletedProcess[str]:
    return session([str(binary), "-p", "--output-format", "json", "--model", "claude-sonnet-5",
                    "--permission-mode", "bypassPermissions"], world, env, prompt)  # fmt: skip


CLAUDE = Drive(
    "claude",
    Tools(
        shell=lambda command: tool("Bash", {"command": command, "description": "generate"}),
        read=lambda path: tool("Read", {"file_path": str(path)}),
    ),
    _claude,
    _claude_run,
)

# Codex ---------------------------------------------------------------------------------


def _codex(world: World) -> dict[str, str]:
    env = world.ours(isolated_home(world.root))
    codex_config(Path(env["CODEX_HOME"]), world.server.openai_url, key_name=None)
    install(world, env, "codex", "--trust-project")
    return env


def _codex_run(
    binary: Path, world: World, env: dict[str, str], prompt: str
) -> subprocess.CompletedProcess[str]:
    return session([str(binary), "exec", "--json", "--model", "gpt-5.1-codex", "-"],
                   world, env, prompt)  # fmt: skip


CODEX = Drive(
    "codex",
    Tools(
        shell=lambda command: tool("exec_command", {"cmd": command}),
        read=lambda path: tool("exec_command", {"cmd": f"cat {path}"}),
    ),
    _codex,
    _codex_run,
)

# Pi ------------------------------------------------------------------------------------


def _pi(world: World) -> dict[str, str]:
    env = world.ours(isolated_home(world.root)) | {"FAKE_PI_KEY": "sk-test", "PI_OFFLINE": "1"}
    agent = Path(env["HOME"]) / ".pi" / "agent"
    agent.mkdir(parents=True, exist_ok=True)
    provider = {"baseUrl": world.server.openai_url, "api": "openai-completions",
                "apiKey": "FAKE_PI_KEY", "models": [{"id": "fake-model"}]}  # fmt: skip
    (agent / "models.json").write_text(json.dumps({"providers": {"fake": provider}}))
    install(world, env, "pi", "--user")
    return env


def _pi_run(
    binary: Path, world: World, env: dict[str, str], prompt: str
) -> subprocess.CompletedProcess[str]:
    return session([str(binary), "-p", prompt, "--provider", "fake", "--model", "fake-model"],
                   world, env)  # fmt: skip


PI = Drive(
    "pi",
    Tools(
        shell=lambda command: tool("bash", {"command": command}),
        read=lambda path: tool("read", {"path": str(path)}),
    ),
    _pi,
    _pi_run,
)

# Gemini CLI ----------------------------------------------------------------------------


def _gemini(world: World) -> dict[str, str]:
    env = world.ours(isolated_home(world.root)) | {
        "GOOGLE_GEMINI_BASE_URL": world.server.url,
        "GEMINI_API_KEY": "fake-key",
        "GEMINI_CLI_NO_RELAUNCH": "true",
    }
    settings = Path(env["HOME"]) / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    own = {
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        "privacy": {"usageStatisticsEnabled": False},
    }
    settings.write_text(json.dumps(own, indent=2))
    install(world, env, "gemini", "--user")
    return env


def _gemini_run(
    binary: Path, world: World, env: dict[str, str], prompt: str
) -> subprocess.CompletedProcess[str]:
    return session([str(binary), "-p", prompt, "--yolo", "-m", "gemini-2.5-flash"], world, env)


GEMINI = Drive(
    "gemini",
    Tools(
        shell=lambda command: tool("run_shell_command", {"command": command}),
        read=lambda path: tool("read_file", {"file_path": str(path)}),
    ),
    _gemini,
    _gemini_run,
)

# Copilot CLI ---------------------------------------------------------------------------


def copilot_drive(cache: Path) -> Drive:
    """Copilot CLI, unpacking its runtime into `cache` (one per test module: 235 MB)."""

    def prepare(world: World) -> dict[str, str]:
        env = world.ours(isolated_home(world.root)) | {
            "COPILOT_PROVIDER_BASE_URL": world.server.openai_url,
            "COPILOT_PROVIDER_API_KEY": "sk-test",
            "COPILOT_PROVIDER_TYPE": "openai",
            "COPILOT_MODEL": "gpt-5.1",
            "COPILOT_OFFLINE": "true",
            "XDG_CACHE_HOME": str(cache),
        }
        install(world, env, "copilot", "--user")
        return env

    def run(
        binary: Path, world: World, env: dict[str, str], prompt: str
    ) -> subprocess.CompletedProcess[str]:
        return session([str(binary), "-p", prompt, "--allow-all-tools"], world, env)

    tools = Tools(
        shell=lambda command: tool("bash", {"command": command, "description": "generate"}),
        read=lambda path: tool("view", {"path": str(path)}),
    )
    return Drive("copilot", tools, prepare, run)


# OpenCode ------------------------------------------------------------------------------


def _opencode(world: World) -> dict[str, str]:
    env = world.ours(opencode_environment(world.root, world.server.openai_url))
    install(world, env, "opencode", "--user")
    return env


def _opencode_run(
    binary: Path, world: World, env: dict[str, str], prompt: str
) -> subprocess.CompletedProcess[str]:
    return session([str(binary), "run", prompt], world, env)


OPENCODE = Drive(
    "opencode",
    Tools(
        shell=lambda command: tool("bash", {"command": command, "description": "generate"}),
        read=lambda path: tool("read", {"filePath": str(path)}),
    ),
    _opencode,
    _opencode_run,
)

# Hermes --------------------------------------------------------------------------------


def _hermes(world: World) -> dict[str, str]:
    env = world.ours(hermes_environment(world.root, world.server.openai_url))
    install(world, env, "hermes", "--user")
    return env


def _hermes_run(
    binary: Path, world: World, env: dict[str, str], prompt: str
) -> subprocess.CompletedProcess[str]:
    return session([str(binary), "chat", "-q", prompt, "-Q", "--yolo"], world, env)


HERMES = Drive(
    "hermes",
    Tools(
        shell=lambda command: tool("terminal", {"command": command}),
        read=lambda path: tool("read_file", {"path": str(path)}),
    ),
    _hermes,
    _hermes_run,
)
