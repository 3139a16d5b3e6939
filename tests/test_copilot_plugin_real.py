"""The Copilot CLI plugin with the real `copilot` (issue 29: installed the way each
harness installs things). In an empty HOME, `copilot plugin marketplace add <a copy of
this repository>` and `copilot plugin install active-memory@active-memory` are the whole
install: the first session's sessionStart hook sets the package up (plugins/bootstrap.py,
from the source the plugin folder links to), its preToolUse hook gives the read the
lesson's card, its sessionEnd hook queues the session; our MCP server answers for the
session's repository and the init skill names the set-up's command. A Git marketplace
(a URL that git maps to the copy) installs a copy of the plugin folder with its links
followed, and works the same. Needs the package index for the dependencies, as any `pip
install` does. Skips without the binary; fails with CI=true."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes.harness import isolated_home, require_harness
from fakes.model_server import ModelServer, Received, text, tool
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

SEARCH = "active-memory-search_lessons"
"""How Copilot CLI 1.0.102 names our MCP server's search tool."""


@pytest.fixture(scope="module")
def copilot_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One XDG cache for the module: Copilot CLI unpacks its 235 MB runtime there."""
    return tmp_path_factory.mktemp("copilot-cache")


def _session(
    copilot: Path, env: dict[str, str], work: Path, server: ModelServer, prompt: str
) -> list[Received]:
    before = len(server.model_requests())
    session = env | {
        "COPILOT_PROVIDER_BASE_URL": server.openai_url,
        "COPILOT_PROVIDER_API_KEY": "sk-test",
        "COPILOT_PROVIDER_TYPE": "openai",
        "COPILOT_MODEL": "gpt-5.1",
    }
    run([str(copilot), "-p", prompt, "--allow-all-tools"], session, work)
    return server.model_requests()[before:]


@pytest.mark.parametrize("marketplace", ["folder", "git"])
def test_marketplace_add_and_install_are_the_whole_install(
    tmp_path: Path, copilot_cache: Path, marketplace: str
) -> None:
    copilot = require_harness("copilot")
    source = copy_repository(tmp_path / "clone")
    env = isolated_home(tmp_path) | {
        "COPILOT_OFFLINE": "true",
        "XDG_CACHE_HOME": str(copilot_cache),
    }
    home = Path(env["HOME"])
    work = checkout_with_lesson(tmp_path, home)
    # From a Git URL, the user's git maps the URL to the copy: `marketplace add` clones it
    # as it would clone from GitHub.
    added = as_git_remote(source, env) if marketplace == "git" else str(source)

    run([str(copilot), "plugin", "marketplace", "add", added], env, work)
    run([str(copilot), "plugin", "install", "active-memory@active-memory"], env, work)
    data = home / ".copilot" / "plugin-data" / "active-memory" / "active-memory"
    with ModelServer() as server:
        server.push(tool("view", {"path": str(work / "client.py")}), text("Read it."))
        requests = _session(copilot, env, work, server, "Read client.py")
        server.push(tool(SEARCH, {"query": "client.py"}), text("Ok."))
        later = _session(copilot, env, work, server, "Initialise Active Memory")
    assert (data / "bin" / "active-memory").exists(), setup_log(data)
    assert setup_folders(home) == [data]
    after = [r for r in requests if r.tool_results()]
    assert after, [r.dump()[:300] for r in requests]
    assert RECOMMENDATION in after[0].dump(), setup_log(data)
    assert all(RECOMMENDATION not in r.dump() for r in requests if not r.tool_results())
    assert [harness for harness, _ in queued(home)] == ["copilot", "copilot"]

    results = [result for r in later for result in r.tool_results()]
    assert results and TITLE in results[0] and "repo:github.com/acme/api" in results[0], results
    # The skill is offered to the model; its text names the set-up's command.
    assert "active-memory-init" in json.dumps(later[0].body)
    plugin = (
        source / "plugins" / "copilot"  # a local marketplace's plugin is used where it is
        if marketplace == "folder"
        else home / ".copilot" / "installed-plugins" / "active-memory" / "active-memory"
    )
    skill = plugin / "skills" / "active-memory-init" / "SKILL.md"
    assert skill_command(skill, env) == data / "bin" / "active-memory"
