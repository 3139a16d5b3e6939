"""Where a tool call happens: namespace from the checkout, run/session identity, budget."""

from __future__ import annotations

from pathlib import Path

import pytest
from recall_support import make_checkout

from active_memory.recall.environment import (
    find_checkout_root,
    namespace_from_remote,
    read_remote_url,
    resolve_context,
)
from active_memory.recall.types import ToolCall
from active_memory.store.location import state_dir, zeroshot_state_dir


@pytest.mark.parametrize(
    "remote",
    [
        "git@github.com:acme/api.git",
        "git@github.com:acme/api",
        "https://github.com/acme/api",
        "https://github.com/acme/api.git",
        "https://user:secret@GitHub.com/acme/api/",
        "ssh://git@github.com:22/acme/api.git",
        "github.com:acme/api.git",
    ],
)
def test_remote_urls_normalise_to_one_namespace(remote: str) -> None:
    assert namespace_from_remote(remote) == "repo:github.com/acme/api"


@pytest.mark.parametrize("remote", ["/srv/git/api.git", "file:///srv/git/api.git", "C:\\git\\api"])
def test_local_remotes_name_no_namespace(remote: str) -> None:
    assert namespace_from_remote(remote) is None


def test_nested_groups_are_kept_in_the_namespace() -> None:
    assert (
        namespace_from_remote("git@gitlab.com:org/team/svc.git") == "repo:gitlab.com/org/team/svc"
    )


def test_origin_is_preferred_over_other_remotes(tmp_path: Path) -> None:
    root = make_checkout(tmp_path / "repo", "git@github.com:acme/api.git")
    config = root / ".git" / "config"
    config.write_text(
        '[remote "upstream"]\n\turl = git@github.com:other/api.git\n'
        + config.read_text(encoding="utf-8"),
        encoding="utf-8",
    )
    assert read_remote_url(str(root)) == "git@github.com:acme/api.git"


def test_a_linked_worktree_reads_the_common_config(tmp_path: Path) -> None:
    main = make_checkout(tmp_path / "main", "https://github.com/acme/api")
    worktree_git = main / ".git" / "worktrees" / "wt"
    worktree_git.mkdir(parents=True)
    (worktree_git / "commondir").write_text("../..\n", encoding="utf-8")
    wt = tmp_path / "wt"
    wt.mkdir()
    (wt / ".git").write_text(f"gitdir: {worktree_git}\n", encoding="utf-8")
    assert read_remote_url(str(wt)) == "https://github.com/acme/api"


def test_checkout_root_is_found_from_a_subfolder(tmp_path: Path) -> None:
    root = make_checkout(tmp_path / "repo")
    (root / "src" / "api").mkdir(parents=True)
    assert find_checkout_root(str(root / "src" / "api")) == str(root)


@pytest.mark.parametrize(
    "env",
    [
        {"ZEROSHOT_STATE_DIR": "/z"},
        {"XDG_STATE_HOME": "/x", "HOME": "/h"},
        {"HOME": "/h"},
    ],
)
def test_state_dir_agrees_with_the_store_location_rule(env: dict[str, str]) -> None:
    assert Path(state_dir(env, "linux")) == zeroshot_state_dir(env, "linux") / "active-memory"


def test_state_dir_on_windows_agrees_too() -> None:
    env = {"LOCALAPPDATA": "C:\\Users\\me\\AppData\\Local"}
    assert Path(state_dir(env, "win32")) == zeroshot_state_dir(env, "win32") / "active-memory"


def test_run_id_wins_over_the_session_for_the_run_key(tmp_path: Path) -> None:
    root = make_checkout(tmp_path / "repo")
    call = ToolCall("claude", "Read", {}, session="sess-1", cwd=str(root))
    with_run = resolve_context(call, {"ACTIVE_MEMORY_RUN_ID": "run-7", "HOME": str(tmp_path)})
    assert (with_run.run_key, with_run.session) == ("run:run-7", "sess-1")
    bare = resolve_context(call, {"HOME": str(tmp_path)})
    assert (bare.run_key, bare.session) == ("session:sess-1", "sess-1")
    assert bare.repository == "repo:github.com/acme/api"
    assert bare.workspace_root == str(root)


def test_environment_overrides_namespace_root_graph_and_budget(tmp_path: Path) -> None:
    call = ToolCall("codex", "Bash", {}, session="s", cwd=str(tmp_path))
    env = {
        "ACTIVE_MEMORY_REPOSITORY": "repo:example.org/x",
        "ACTIVE_MEMORY_WORKSPACE": str(tmp_path),
        "ACTIVE_MEMORY_GRAPH_HASH": "ab" * 32,
        "ACTIVE_MEMORY_NODE": "worker",
        "ACTIVE_MEMORY_BUDGET_BYTES": "512",
        "ACTIVE_MEMORY_SCOPES": "graph",
        "HOME": str(tmp_path),
    }
    context = resolve_context(call, env)
    assert context.repository == "repo:example.org/x"
    assert (context.graph_hash, context.node, context.budget_bytes) == ("ab" * 32, "worker", 512)
    assert context.scopes == frozenset({"graph"})
    assert resolve_context(call, env, repository="repo:h/y").repository == "repo:h/y"


def test_a_malformed_graph_hash_is_ignored(tmp_path: Path) -> None:
    call = ToolCall("claude", "Read", {}, session="s", cwd=str(tmp_path))
    env = {"ACTIVE_MEMORY_GRAPH_HASH": "not-a-hash", "HOME": str(tmp_path)}
    assert resolve_context(call, env).graph_hash is None


@pytest.mark.parametrize(
    ("value", "budget"),
    [(None, 2048), ("1", 1), ("16384", 16384), ("0", 2048), ("16385", 2048), ("x", 2048)],
)
def test_a_budget_variable_outside_its_range_falls_back_to_the_default(
    tmp_path: Path, value: str | None, budget: int
) -> None:
    call = ToolCall("claude", "Read", {}, session="s", cwd=str(tmp_path))
    env = {"HOME": str(tmp_path)} | ({"ACTIVE_MEMORY_BUDGET_BYTES": value} if value else {})
    assert resolve_context(call, env).budget_bytes == budget


def test_recall_and_the_store_agree_on_the_default_store(tmp_path: Path) -> None:
    from active_memory.recall.generations import store_key
    from active_memory.recall.snapshot import store_location
    from active_memory.store.location import resolve_store_location

    env = {"ZEROSHOT_STATE_DIR": str(tmp_path) + "/", "HOME": str(tmp_path)}
    call = ToolCall("claude", "Read", {}, session="s", cwd=str(tmp_path))
    context = resolve_context(call, env)
    assert store_key(store_location(context)) == store_key(resolve_store_location(None, env))
