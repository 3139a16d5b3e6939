"""`active-memory hook install opencode`: the plugin file, and the plugin itself under node."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from install_support import HOOK, lean_state, run  # noqa: F401 - autouse fixture

from active_memory.hooks.installers.opencode import MARKER, plugin_source


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.chdir(root)
    return root


def test_install_writes_the_plugin_into_the_project_plugins_folder(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(["install", "opencode"], capsys)

    plugin = checkout / ".opencode" / "plugins" / "active-memory.js"
    assert code == 0
    assert str(plugin) in out
    assert plugin.read_text() == plugin_source(HOOK)
    assert "tool.execute.after" in plugin.read_text()


def test_second_install_is_a_no_op_and_uninstall_removes_only_our_file(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plugins = checkout / ".opencode" / "plugins"
    plugins.mkdir(parents=True)
    (plugins / "theirs.js").write_text("export const Theirs = async () => ({})\n")
    run(["install", "opencode"], capsys)
    plugin = plugins / "active-memory.js"
    os.utime(plugin, (1_000_000, 1_000_000))

    assert "already installed" in run(["install", "opencode"], capsys)[1]
    assert plugin.stat().st_mtime == 1_000_000

    run(["uninstall", "opencode"], capsys)
    assert sorted(p.name for p in plugins.iterdir()) == ["theirs.js"]


def test_an_outdated_plugin_of_ours_is_replaced(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plugin = checkout / ".opencode" / "plugins" / "active-memory.js"
    plugin.parent.mkdir(parents=True)
    plugin.write_text(MARKER + "\n// an older version\n")

    code, out, _ = run(["install", "opencode", "--dry-run"], capsys)
    assert code == 0
    assert "-// an older version" in out
    assert plugin.read_text().endswith("an older version\n")

    run(["install", "opencode"], capsys)
    assert plugin.read_text() == plugin_source(HOOK)


def test_a_foreign_file_of_the_same_name_is_never_touched(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plugin = checkout / ".opencode" / "plugins" / "active-memory.js"
    plugin.parent.mkdir(parents=True)
    plugin.write_text("// my own plugin\n")

    for action in ("install", "uninstall"):
        code, _, err = run([action, "opencode"], capsys)
        assert code == 2
        assert "not written by active-memory" in err
        assert plugin.read_text() == "// my own plugin\n"


def test_user_install_goes_to_the_xdg_config_folder(
    checkout: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))

    run(["install", "opencode", "--user"], capsys)

    assert (tmp_path / "config" / "opencode" / "plugins" / "active-memory.js").is_file()
    assert not (checkout / ".opencode").exists()


def test_dry_run_uninstall_shows_the_removal_and_keeps_the_file(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(["install", "opencode"], capsys)

    code, out, _ = run(["uninstall", "opencode", "--dry-run"], capsys)

    assert code == 0
    assert "+++ /dev/null" in out
    assert (checkout / ".opencode" / "plugins" / "active-memory.js").is_file()


NODE = shutil.which("node")

_DRIVER = """
const { ActiveMemory } = await import(process.argv[2]);
const hooks = await ActiveMemory({ directory: process.argv[3], worktree: process.argv[3] });
const output = { title: "read", output: "file contents", metadata: {} };
await hooks["tool.execute.before"](
  { tool: "read", sessionID: "ses_1", callID: "call_1" },
  { args: { filePath: "src/api/client.ts" } },
);
await hooks["tool.execute.after"]({ tool: "read", sessionID: "ses_1", callID: "call_1" }, output);
process.stdout.write(JSON.stringify(output));
"""


def _run_plugin(tmp_path: Path, fake_hook: str) -> tuple[dict[str, object], Path]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "active-memory-hook"
    fake.write_text("#!/bin/sh\n" + fake_hook)
    fake.chmod(0o755)
    plugin = tmp_path / "plugin.mjs"
    plugin.write_text(plugin_source(fake))  # the absolute path, as the installer writes
    driver = tmp_path / "driver.mjs"
    driver.write_text(_DRIVER)
    received = tmp_path / "received.json"
    env = dict(os.environ)  # no PATH change: the plugin runs the absolute path
    env["RECEIVED"] = str(received)
    assert NODE is not None
    result = subprocess.run(
        [NODE, str(driver), plugin.as_uri(), str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    output: dict[str, object] = json.loads(result.stdout)
    return output, received


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_plugin_appends_the_recalled_context_to_the_tool_output(tmp_path: Path) -> None:
    context = (
        '<active-memory note="Lessons from earlier runs.">\n## Regen (L-1 r1)\n</active-memory>'
    )
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps({"append": "\n\n" + context}))
    hook = f'[ "$*" = "after-tool" ] || exit 3\ncat > "$RECEIVED"\ncat "{answer}"\n'

    output, received = _run_plugin(tmp_path, hook)

    assert output["output"] == (
        'file contents\n\n<active-memory note="Lessons from earlier runs.">\n'
        "## Regen (L-1 r1)\n</active-memory>"
    )
    payload = json.loads(received.read_text())
    assert payload["tool"] == "read"
    assert payload["sessionID"] == "ses_1"
    assert payload["args"] == {"filePath": "src/api/client.ts"}
    assert payload["cwd"] == str(tmp_path)
    assert payload["harness"] == "opencode"


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_plugin_leaves_the_output_alone_when_the_hook_fails(tmp_path: Path) -> None:
    output, _ = _run_plugin(tmp_path, 'echo \'{"append": "x"}\'\nexit 1\n')

    assert output["output"] == "file contents"


_SESSIONS_DRIVER = """
const { ActiveMemory } = await import(process.argv[2]);
const hooks = await ActiveMemory({ directory: process.argv[3], worktree: process.argv[3] });
const created = (id, parentID) => ({ type: "session.created", properties: { sessionID: id,
  info: parentID ? { id, parentID } : { id } } });
await hooks.event({ event: created("ses_root") });
await hooks.event({ event: created("ses_child", "ses_root") });
await hooks.event({ event: { type: "session.idle", properties: { sessionID: "ses_child" } } });
await hooks.event({ event: { type: "session.idle", properties: { sessionID: "ses_root" } } });
await hooks.event({ event: { type: "session.compacted", properties: { sessionID: "ses_root" } } });
"""


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_plugin_queues_root_sessions_when_idle_and_at_exit(tmp_path: Path) -> None:
    # The order of events the real binary sends (tests/fixtures/harness_payloads/
    # opencode-1.18.33.jsonl); a sub-agent's session is never queued on its own.
    calls = tmp_path / "calls.jsonl"
    fake = tmp_path / "active-memory-hook"
    fake.write_text('#!/bin/sh\nprintf \'{"args": "%s", "input": %s}\\n\' "$*" "$(cat)" >> '
                    f'"{calls}"\n')  # fmt: skip
    fake.chmod(0o755)
    plugin = tmp_path / "plugin.mjs"
    plugin.write_text(plugin_source(fake))
    driver = tmp_path / "driver.mjs"
    driver.write_text(_SESSIONS_DRIVER)
    assert NODE is not None
    subprocess.run([NODE, str(driver), plugin.as_uri(), str(tmp_path)], capture_output=True,
                   timeout=30, check=True)  # fmt: skip

    made = [json.loads(line) for line in calls.read_text().splitlines()]
    assert [(c["args"], c["input"]["sessionID"], c["input"]["event"]) for c in made] == [
        ("session-end opencode", "ses_root", "session.idle"),
        ("context opencode", "ses_root", "session.compacted"),
        ("session-end opencode", "ses_root", "session.end"),
    ]
    assert {c["input"]["cwd"] for c in made} == {str(tmp_path)}
