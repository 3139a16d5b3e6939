"""The Gemini CLI, Codex and Copilot CLI plugins' launchers, run as the harnesses run them
(docs/plugins.md): before the set-up a hook answers nothing and keeps a session's end;
after it, each runs what the set-up wrote into the data folder the harness gives (or the
one it would give, worked out from where the harness put the plugin); outside a harness's
install they say so."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PLUGINS = ROOT / "plugins"


def _run(
    launcher: Path, *args: str, env: dict[str, str], stdin: str = "", cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(launcher), *args], input=stdin, env={"PATH": os.environ["PATH"], **env},
        capture_output=True, text=True, timeout=60, check=False, cwd=cwd,
    )  # fmt: skip


def _fake_entry(data: Path, name: str) -> None:
    """A stand-in for what the set-up writes: echoes its arguments, stdin and folder."""
    entry = data / "bin" / name
    entry.parent.mkdir(parents=True, exist_ok=True)
    entry.write_text('#!/bin/sh\necho "ran $* [$(cat)] in $(pwd)"\n', encoding="utf-8")
    entry.chmod(0o755)


HOOK_ENV = {
    "gemini": lambda home: {"HOME": str(home)},
    "codex": lambda home: {"HOME": str(home), "PLUGIN_DATA": str(home / "data")},
    "copilot": lambda home: {"HOME": str(home), "COPILOT_PLUGIN_DATA": str(home / "data")},
}


def _data(harness: str, home: Path) -> Path:
    return home / ".gemini" / "active-memory" if harness == "gemini" else home / "data"


@pytest.mark.parametrize("harness", ["gemini", "codex", "copilot"])
def test_a_hook_before_the_setup_answers_nothing_and_succeeds(harness: str, tmp_path: Path) -> None:
    payload = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "read_file"})
    done = _run(PLUGINS / harness / "bin" / "active-memory-hook", harness,
                env=HOOK_ENV[harness](tmp_path), stdin=payload)  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


@pytest.mark.parametrize("harness", ["gemini", "codex", "copilot"])
def test_a_hook_runs_the_entry_the_setup_wrote(harness: str, tmp_path: Path) -> None:
    _fake_entry(_data(harness, tmp_path), "active-memory-hook")
    done = _run(PLUGINS / harness / "bin" / "active-memory-hook", "session-end", harness,
                env=HOOK_ENV[harness](tmp_path), stdin="{}")  # fmt: skip
    assert done.stdout.startswith(f"ran session-end {harness} [{{}}]"), done


@pytest.mark.parametrize("harness", ["gemini", "codex", "copilot"])
def test_a_session_end_before_the_setup_is_kept_privately(harness: str, tmp_path: Path) -> None:
    payload = json.dumps({"hook_event_name": "SessionEnd", "session_id": "s-1"})
    done = _run(PLUGINS / harness / "bin" / "active-memory-hook", "session-end", harness,
                env=HOOK_ENV[harness](tmp_path), stdin=payload)  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "")
    [kept] = (_data(harness, tmp_path) / "early-session-ends").iterdir()
    assert kept.name.endswith(f".{harness}.json")
    assert kept.read_text("utf-8") == payload
    assert kept.stat().st_mode & 0o077 == 0


def test_no_more_than_64_session_ends_are_kept(tmp_path: Path) -> None:
    early = tmp_path / "data" / "early-session-ends"
    early.mkdir(parents=True)
    for index in range(64):
        (early / f"{index}.1.codex.json").write_text("{}", encoding="utf-8")
    done = _run(PLUGINS / "codex" / "bin" / "active-memory-hook", "session-end", "codex",
                env=HOOK_ENV["codex"](tmp_path), stdin='{"session_id": "late"}')  # fmt: skip
    assert done.returncode == 0
    assert len(list(early.iterdir())) == 64


def _installed_codex(codex_home: Path) -> Path:
    """plugins/codex where `codex plugin add` puts it (links left out, as Codex does)."""
    target = codex_home / "plugins" / "cache" / "active-memory" / "active-memory" / "0.1.0"
    shutil.copytree(PLUGINS / "codex", target, symlinks=True)
    return target


def test_the_codex_command_finds_the_data_folder_codex_names(tmp_path: Path) -> None:
    # Codex starts MCP servers without PLUGIN_DATA; the launcher works it out from the
    # cache folder it runs from, as Codex names it for the hooks.
    codex_home = tmp_path / "codex-home"
    plugin = _installed_codex(codex_home)
    data = codex_home / "plugins" / "data" / "active-memory-active-memory"
    _fake_entry(data, "active-memory")
    done = _run(plugin / "bin" / "active-memory", "mcp", env={"HOME": str(tmp_path)},
                cwd=tmp_path)  # fmt: skip
    assert done.stdout.startswith("ran mcp []"), done


def test_the_codex_command_outside_an_install_says_so(tmp_path: Path) -> None:
    done = _run(PLUGINS / "codex" / "bin" / "active-memory", "mcp", env={"HOME": str(tmp_path)})
    assert done.returncode == 2
    assert "is not a plugin Codex installed" in done.stderr
    assert not (tmp_path / ".codex").exists()


def test_the_copilot_command_finds_the_data_folder_of_a_copied_plugin(tmp_path: Path) -> None:
    copilot_home = tmp_path / "home" / ".copilot"
    plugin = copilot_home / "installed-plugins" / "some-market" / "active-memory"
    shutil.copytree(PLUGINS / "copilot", plugin, symlinks=True)
    _fake_entry(copilot_home / "plugin-data" / "some-market" / "active-memory", "active-memory")
    done = _run(plugin / "bin" / "active-memory", "lessons", "list",
                env={"HOME": str(tmp_path / "home")})  # fmt: skip
    assert done.stdout.startswith("ran lessons list []"), done


def test_the_copilot_mcp_server_runs_in_the_session_s_folder(tmp_path: Path) -> None:
    # From a local marketplace the plugin is used where it is; Copilot CLI starts its MCP
    # server in the plugin's folder and names the session, whose folder the launcher reads.
    home = tmp_path / "home"
    data = home / ".copilot" / "plugin-data" / "active-memory" / "active-memory"
    _fake_entry(data, "active-memory")
    state = home / ".copilot" / "session-state" / "s-1"
    state.mkdir(parents=True)
    session_folder = tmp_path / "my repo"
    session_folder.mkdir()
    (state / "workspace.yaml").write_text(f"id: s-1\ncwd: {session_folder}\n", encoding="utf-8")
    env = {"HOME": str(home), "COPILOT_AGENT_SESSION_ID": "s-1"}
    done = _run(PLUGINS / "copilot" / "bin" / "active-memory", "mcp", env=env,
                cwd=PLUGINS / "copilot")  # fmt: skip
    assert done.stdout.startswith(f"ran mcp --cwd {session_folder} []"), done
    # Without a session (a person running it), the command runs as given.
    done = _run(PLUGINS / "copilot" / "bin" / "active-memory", "mcp", env={"HOME": str(home)})
    assert done.stdout.startswith("ran mcp []"), done


def test_the_gemini_data_folder_follows_gemini_cli_home(tmp_path: Path) -> None:
    _fake_entry(tmp_path / "elsewhere" / ".gemini" / "active-memory", "active-memory")
    env = {"HOME": str(tmp_path), "GEMINI_CLI_HOME": str(tmp_path / "elsewhere")}
    done = _run(PLUGINS / "gemini" / "bin" / "active-memory", "queue", env=env)
    assert done.stdout.startswith("ran queue []"), done


def _no_python_path(tmp_path: Path) -> str:
    """A PATH with the tools the launchers use and no Python."""
    folder = tmp_path / "tools"
    folder.mkdir()
    for tool in ("sh", "cat", "dirname", "basename", "ls", "wc", "mkdir", "date", "sed", "head"):
        found = shutil.which(tool)
        assert found, tool
        (folder / tool).symlink_to(found)
    return str(folder)


@pytest.mark.parametrize("harness", ["gemini", "copilot"])
def test_the_setup_without_python_3_11_says_so_and_lets_the_session_start(
    harness: str, tmp_path: Path
) -> None:
    env = {**HOOK_ENV[harness](tmp_path), "PATH": _no_python_path(tmp_path)}
    done = subprocess.run(
        [str(PLUGINS / harness / "bin" / "active-memory-setup")], input="{}", env=env,
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0
    assert "needs Python 3.11 or newer" in json.loads(done.stdout)["systemMessage"]


def test_a_gemini_extension_whose_clone_is_gone_says_how_to_reinstall(tmp_path: Path) -> None:
    # `gemini extensions install` copies the folder, its links pointing at the clone.
    extension = tmp_path / "extensions" / "active-memory"
    shutil.copytree(PLUGINS / "gemini", extension, symlinks=True)  # links now dangle
    done = _run(extension / "bin" / "active-memory-setup", env={"HOME": str(tmp_path)})
    assert done.returncode == 0
    message = json.loads(done.stdout)["systemMessage"]
    assert "the clone this extension was installed from is gone" in message
    assert "gemini extensions install" in message


def test_a_codex_setup_without_its_marketplace_says_why(tmp_path: Path) -> None:
    codex_home = tmp_path / "codex-home"
    plugin = _installed_codex(codex_home)
    done = _run(plugin / "bin" / "active-memory-setup", env={"HOME": str(tmp_path)})
    assert done.returncode == 0
    message = json.loads(done.stdout)["systemMessage"]
    assert message.startswith("Active Memory cannot be set up:")
    assert "config.toml" in message
