"""`active-memory setup` installs hooks the real `claude` runs (issue 29 item 5).

An empty HOME, a PATH whose only harness is the real `claude` binary (.ci/run's pinned
one), the scripted model server on loopback. `setup` finds `claude`, installs its hooks
for the user and runs `hook doctor`; then a `claude -p` session in a repository it was
never told about reads a file a stored lesson names: the card is in the model's next
request (not before), and the session's end is in the store's queue. Nothing but
`setup` was run to install anything. Skips without the binary; fails with CI=true.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from fakes.harness import CLAUDE_QUIET, claude_environment, isolated_home, require_harness
from fakes.model_server import ModelServer, text, tool
from plugin_support import copy_repository, run
from recall_support import publish, repository_lesson

CLI = Path(sys.executable).parent / "active-memory"
RECOMMENDATION = "Run make api-client after editing api/schema.json; never edit the client."


def test_the_hooks_setup_installs_run_in_the_real_claude(tmp_path: Path) -> None:
    claude = require_harness("claude")
    checkout = tmp_path / "api"
    (checkout / "src" / "api").mkdir(parents=True)
    target = checkout / "src" / "api" / "client.py"
    target.write_text("CLIENT = 1\n", encoding="utf-8")
    subprocess.run(["git", "-C", str(checkout), "init", "-q"], check=True)
    subprocess.run(["git", "-C", str(checkout), "remote", "add", "origin",
                    "git@github.com:acme/api.git"], check=True)  # fmt: skip
    state = tmp_path / "state"
    store = state / "active-memory" / "lessons.sqlite3"
    store.parent.mkdir(parents=True)
    publish(store, [repository_lesson("Regenerate the API client", RECOMMENDATION,
                                      files=["src/api/client.py"])])  # fmt: skip
    harness_bin = tmp_path / "bin"
    harness_bin.mkdir()
    (harness_bin / "claude").symlink_to(claude)

    with ModelServer() as server:
        env = claude_environment(tmp_path, server.url, "sk-ant-test") | {
            "PATH": f"{harness_bin}:/usr/bin:/bin",
            "ZEROSHOT_STATE_DIR": str(state),  # the default store is the one published to
        }
        done = subprocess.run([str(CLI), "setup"], env=env, cwd=env["HOME"],
                              capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        settings = Path(env["HOME"]) / ".claude" / "settings.json"
        assert f"Claude Code ({harness_bin / 'claude'}): installed the hooks in {settings}" in (
            done.stdout
        )
        assert "✓ hook doctor: the hooks are ok for Claude Code (user)" in done.stdout

        server.push(tool("Read", {"file_path": str(target)}), text("Read it."))
        session = subprocess.run(
            [str(claude), "-p", "Read the API client", "--allowedTools", "Read"],
            cwd=checkout, env=env, capture_output=True, text=True, timeout=180, check=False,
        )  # fmt: skip
        assert session.returncode == 0, session.stderr
        requests = server.model_requests()
    after_tool = [r for r in requests if r.tool_results()]
    assert after_tool, [r.dump()[:300] for r in requests]
    assert RECOMMENDATION in after_tool[0].dump()
    assert all(RECOMMENDATION not in r.dump() for r in requests if not r.tool_results())
    queue = subprocess.run([str(CLI), "queue", "--json"], env=env, capture_output=True,
                           text=True, check=False)  # fmt: skip
    assert queue.returncode == 0, queue.stderr
    entries = json.loads(queue.stdout)["entries"]
    assert [(e["harness"], e["final"]) for e in entries] == [("claude", True)]


def test_setup_leaves_each_harness_that_has_our_plugin_to_it(tmp_path: Path) -> None:
    # Each harness's own install commands, from a copy of this repository, as
    # docs/plugins.md gives them; then `setup` with the four binaries on PATH.
    binaries = {name: require_harness(name) for name in ("claude", "codex", "copilot", "gemini")}
    source = copy_repository(tmp_path / "clone")
    harness_bin = tmp_path / "bin"
    harness_bin.mkdir()
    for name, binary in binaries.items():
        (harness_bin / name).symlink_to(binary)
    env = isolated_home(tmp_path) | CLAUDE_QUIET | {
        "PATH": f"{harness_bin}:/usr/bin:/bin", "COPILOT_OFFLINE": "true",
        "GEMINI_CLI_NO_RELAUNCH": "true", "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }  # fmt: skip
    home = Path(env["HOME"])
    gemini_settings = home / ".gemini" / "settings.json"
    gemini_settings.parent.mkdir(parents=True)
    gemini_settings.write_text(json.dumps({"security": {"folderTrust": {"enabled": False}}}))
    for command in (
        ["claude", "plugin", "marketplace", "add", str(source)],
        ["claude", "plugin", "install", "active-memory@active-memory"],
        ["codex", "plugin", "marketplace", "add", str(source)],
        ["codex", "plugin", "add", "active-memory@active-memory"],
        ["copilot", "plugin", "marketplace", "add", str(source)],
        ["copilot", "plugin", "install", "active-memory@active-memory"],
        ["gemini", "extensions", "install", str(source / "plugins" / "gemini"), "--consent"],
    ):
        run([str(binaries[command[0]]), *command[1:]], env, home)

    done = subprocess.run([str(CLI), "setup"], env=env, cwd=home, capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    for name in ("Claude Code", "Codex", "Copilot CLI"):
        assert any(line.startswith(f"{name} (") and "nothing to install: the Active Memory "
                   "plugin active-memory@active-memory is enabled in" in line
                   for line in lines), (name, done.stdout)  # fmt: skip
    assert any(line.startswith("Gemini CLI (") and "nothing to install: the Active Memory "
               "extension is installed in" in line for line in lines), done.stdout  # fmt: skip
    assert "hook doctor: no hook of ours is installed (each harness has our plugin)" in lines
    assert not (home / ".codex" / "hooks.json").exists()
    assert not (home / ".copilot" / "hooks").exists()
    for settings in (home / ".claude" / "settings.json", gemini_settings):
        assert "active-memory-hook" not in settings.read_text(encoding="utf-8"), settings

    # An extension the user turned off is no reason to leave Gemini CLI without hooks.
    run([str(binaries["gemini"]), "extensions", "disable", "active-memory"], env, home)
    again = subprocess.run([str(CLI), "setup", "gemini"], env=env, cwd=home,
                           capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert f"installed the hooks in {gemini_settings}" in again.stdout, again.stdout
    assert "active-memory-hook" in gemini_settings.read_text(encoding="utf-8")
