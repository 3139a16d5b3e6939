"""The Claude Code plugin's committed files are what the installers' rules render
(active_memory.harness_plugins.claude.py), and its launchers behave before the
package is set up: a hook answers nothing and never fails the tool call."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from active_memory.harness_plugins import claude as claude_plugin
from active_memory.hooks.installers import claude

ROOT = Path(__file__).resolve().parents[1]
BIN = ROOT / "plugins" / "claude-code" / "bin"
REGENERATE = "python -m active_memory.harness_plugins.claude ."


def test_committed_plugin_files_are_what_the_installers_render() -> None:
    stale = [
        relative
        for relative, text in claude_plugin.files().items()
        if not (ROOT / relative).is_file() or (ROOT / relative).read_text("utf-8") != text
    ]
    assert not stale, f"{stale} differ from the rendering: run `{REGENERATE}` and commit"


def test_plugin_registers_every_event_the_hook_installer_does() -> None:
    rendered = claude_plugin.hooks()["hooks"]
    for entry in claude.entries(http=False, port=0, script=None):
        groups = rendered[entry.event]
        assert any(g.get("matcher") == entry.matcher for g in groups), entry
        words = entry.handler["command"].split()[1:]
        arguments = [h["args"] for g in groups for h in g["hooks"]]
        assert words in arguments, (entry.event, words, arguments)
    setup = rendered["SessionStart"][0]["hooks"][0]
    assert setup["command"].endswith("/active-memory-setup")
    assert setup["timeout"] >= 600  # the first pip install takes a minute or more


def test_every_launcher_the_plugin_names_exists_and_is_executable() -> None:
    text = json.dumps(claude_plugin.plugin_manifest()) + json.dumps(claude_plugin.hooks())
    named = {part.split('"')[0] for part in text.split("${CLAUDE_PLUGIN_ROOT}/")[1:]}
    assert named == {f"plugins/claude-code/bin/{n}" for n in
                     ("active-memory", "active-memory-hook", "active-memory-setup")}  # fmt: skip
    for relative in named:
        path = ROOT / relative
        assert path.is_file() and os.access(path, os.X_OK), path


def test_hook_launcher_before_setup_answers_nothing_and_succeeds(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "CLAUDE_PLUGIN_DATA": str(tmp_path / "data")}
    payload = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Read"})
    done = subprocess.run(
        [str(BIN / "active-memory-hook"), "claude"],
        input=payload, env=env, capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "")


def test_hook_launcher_runs_the_entry_setup_wrote(tmp_path: Path) -> None:
    entry = tmp_path / "data" / "bin" / "active-memory-hook"
    entry.parent.mkdir(parents=True)
    entry.write_text('#!/bin/sh\necho "entry $* $(cat)"\n', encoding="utf-8")
    entry.chmod(0o755)
    env = {"PATH": os.environ["PATH"], "CLAUDE_PLUGIN_DATA": str(tmp_path / "data")}
    done = subprocess.run(
        [str(BIN / "active-memory-hook"), "session-end", "claude"],
        input="{}", env=env, capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert done.stdout.strip() == "entry session-end claude {}"


def test_setup_and_command_launchers_refuse_to_run_outside_claude_code(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"]}
    for name in ("active-memory-setup", "active-memory"):
        done = subprocess.run(
            [str(BIN / name)], input="", env=env, capture_output=True, text=True,
            timeout=30, check=False,
        )  # fmt: skip
        assert done.returncode == 2, name
        assert "CLAUDE_PLUGIN_DATA is not set" in done.stderr


def test_a_session_end_before_setup_is_kept_privately_for_the_setup(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {"PATH": os.environ["PATH"], "CLAUDE_PLUGIN_DATA": str(data)}
    payload = json.dumps({"hook_event_name": "SessionEnd", "session_id": "s-1"})
    done = subprocess.run(
        [str(BIN / "active-memory-hook"), "session-end", "claude"],
        input=payload, env=env, capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "")
    [kept] = (data / "early-session-ends").iterdir()
    assert kept.name.endswith(".claude.json")
    assert kept.read_text("utf-8") == payload
    assert kept.stat().st_mode & 0o077 == 0
