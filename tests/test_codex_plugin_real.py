"""The Codex plugin with the real `codex` (issue 29: installed the way each harness
installs things). In an empty HOME, `codex plugin marketplace add <a copy of this
repository>` and `codex plugin add active-memory@active-memory` are the whole install.

Codex 0.171 runs a plugin's hooks only once trusted and `plugin add` trusts none, so the
first session's hooks do not run; its MCP server does: our launcher sets the package up
(plugins/bootstrap.py, from the marketplace's folder) in a process that outlives the
session, then trusts the plugin's hooks (codex_hook_trust.py). The next session's
PreToolUse hook puts the lesson's card into the command's result, its SessionEnd hook
queues it, our MCP server answers for the session's repository, and the init skill
names the set-up's command. Needs the package index for the dependencies, as any `pip
install` does. Skips without the binary; fails with CI=true."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import tomlkit
from fakes.harness import codex_config, isolated_home, require_harness
from fakes.model_server import ModelServer, text, tool
from plugin_support import (
    RECOMMENDATION,
    TITLE,
    as_git_remote,
    checkout_with_lesson,
    copy_repository,
    queued,
    run,
    setup_folders,
    setup_log,
    skill_command,
)

NAMESPACE = "mcp__active_memory"
"""How Codex 0.171 offers our MCP server's tools (one Responses API namespace)."""
SETUP_WAIT_SECONDS = 900


def _exec(codex: Path, env: dict[str, str], work: Path, prompt: str) -> None:
    # The grace makes Codex wait for MCP servers still starting (docs/mcp.md).
    run([str(codex), "exec", "-c", "mcp_optional_startup_grace_ms=30000",
         "--skip-git-repo-check", "--sandbox", "danger-full-access",
         "--model", "gpt-5-codex", prompt], env, work)  # fmt: skip


def _wait_for_setup(data: Path, config: Path) -> None:
    # The first set-up goes on after the session that started it has ended.
    deadline = time.monotonic() + SETUP_WAIT_SECONDS
    while time.monotonic() < deadline:
        trusted = "hooks" in tomlkit.parse(config.read_text(encoding="utf-8"))
        if (data / "bin" / "active-memory-hook").exists() and trusted:
            return
        time.sleep(2)
    raise AssertionError(f"no set-up and trust after {SETUP_WAIT_SECONDS} s: {setup_log(data)}")


@pytest.mark.parametrize("marketplace", ["folder", "git"])
def test_marketplace_add_and_plugin_add_are_the_whole_install(
    tmp_path: Path, marketplace: str
) -> None:
    # From a Git URL Codex clones the marketplace into $CODEX_HOME/.tmp/marketplaces/,
    # where the set-up finds the source.
    codex = require_harness("codex")
    source = copy_repository(tmp_path / "clone")
    env = isolated_home(tmp_path) | {"FAKE_OPENAI_KEY": "sk-test"}
    added = as_git_remote(source, env) if marketplace == "git" else str(source)
    home, codex_home = Path(env["HOME"]), Path(env["CODEX_HOME"])
    work = checkout_with_lesson(tmp_path, home)
    data = codex_home / "plugins" / "data" / "active-memory-active-memory"
    with ModelServer() as server:
        config = codex_config(codex_home, server.openai_url)
        run([str(codex), "plugin", "marketplace", "add", added], env, work)
        run([str(codex), "plugin", "add", "active-memory@active-memory"], env, work)

        server.push(text("Hello."))
        _exec(codex, env, work, "Say hello")
        _wait_for_setup(data, config)
        assert setup_folders(home) == [data]
        assert queued(home) == []  # the first session's hooks were not trusted yet

        before = len(server.model_requests())
        server.push(tool("exec_command", {"cmd": "cat client.py"}), text("Read it."))
        _exec(codex, env, work, "Read client.py")
        requests = server.model_requests()[before:]

        before = len(server.model_requests())
        server.push(
            tool("search_lessons", {"query": "client.py"}, namespace=NAMESPACE), text("Ok.")
        )
        _exec(codex, env, work, "Initialise Active Memory")
        later = server.model_requests()[before:]
    after = [r for r in requests if r.tool_results()]
    assert after, [r.dump()[:300] for r in requests]
    assert RECOMMENDATION in after[0].dump(), setup_log(data)
    assert all(RECOMMENDATION not in r.dump() for r in requests if not r.tool_results())
    assert [harness for harness, _ in queued(home)] == ["codex", "codex"]

    results = [result for r in later for result in r.tool_results()]
    assert results and TITLE in results[0] and "repo:github.com/acme/api" in results[0], results
    # Codex lists the plugin's skills to the model (name, description, file); the init
    # skill names the set-up's command.
    assert "active-memory-init" in later[0].dump()
    (skill,) = codex_home.glob("plugins/cache/active-memory/active-memory/*/skills/*/SKILL.md")
    assert skill_command(skill, env) == data / "bin" / "active-memory"
