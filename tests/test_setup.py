"""`active-memory setup` (issue 29 item 5): the harnesses on PATH get their hooks, exactly
as `hook install HARNESS --user` writes them; a second run changes nothing; no harness
is a clear success; a configuration that cannot take the hooks stops everything before
anything is written (exit 2); the worker and `active-memory` on PATH are reported.

The CLI runs as a process with a HOME and a PATH of the test's own: PATH holds small
stand-ins named like the harnesses (the discovery only looks names up; the real
`claude` running the installed hooks is tests/test_setup_real.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from active_memory.hooks import setup
from active_memory.hooks.installers import Plan
from active_memory.hooks.installers.files import FileChange
from active_memory.hooks.plugin_presence import plugin_in_use

CLI = Path(sys.executable).parent / "active-memory"
HARNESS_FILES = {
    "claude": ".claude/settings.json",
    "codex": ".codex/hooks.json",
    "gemini": ".gemini/settings.json",
    "pi": ".pi/agent/extensions/active-memory.ts",
    "copilot": ".copilot/hooks/active-memory.json",
    "opencode": ".config/opencode/plugins/active-memory.js",
    "hermes": ".hermes/plugins/active-memory/__init__.py",
}
"""Where each harness's user-level hooks land in a HOME (hooks/installers)."""


def _bin(root: Path, *names: str) -> Path:
    """A folder of stand-in executables named like harnesses."""
    folder = root / "bin"
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        stand_in = folder / name
        stand_in.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
        stand_in.chmod(0o755)
    return folder


def _env(home: Path, path: Path | str, **extra: str) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    return {"HOME": str(home), "PATH": str(path), "LANG": "C.UTF-8", **extra}


def _setup(
    env: dict[str, str], *args: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLI), "setup", *args], env=env, cwd=cwd or env["HOME"], capture_output=True,
        text=True, timeout=120, check=False,
    )  # fmt: skip


def _files(home: Path) -> dict[str, tuple[int, int]]:
    """Every file under `home`: (size, mtime_ns), keyed by its relative path."""
    found = {}
    for path in sorted(home.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            stat = path.stat()
            found[str(path.relative_to(home))] = (stat.st_size, stat.st_mtime_ns)
    return found


def test_setup_installs_each_harness_on_path_as_hook_install_user_does(tmp_path: Path) -> None:
    folder = _bin(tmp_path, "claude", "codex", "gemini", "pi")
    home = tmp_path / "home"
    done = _setup(_env(home, folder))
    assert done.returncode == 0, done.stdout + done.stderr
    for harness in ("claude", "codex", "gemini", "pi"):
        assert (home / HARNESS_FILES[harness]).is_file(), harness
        assert f"installed the hooks in {home / HARNESS_FILES[harness]}" in done.stdout
    for harness in ("copilot", "opencode", "hermes"):
        assert not (home / HARNESS_FILES[harness]).exists(), harness
    assert "not on PATH: OpenCode, Copilot CLI, Hermes" in done.stdout
    assert "✓ hook doctor: the hooks are ok for Claude Code (user), Codex (user)" in done.stdout
    assert "lane claude" in done.stdout

    # The same files, byte for byte, as `hook install HARNESS --user` in another HOME.
    other = tmp_path / "other"
    for harness in ("claude", "codex", "gemini", "pi"):
        installed = subprocess.run(
            [str(CLI), "hook", "install", harness, "--user"], env=_env(other, folder),
            cwd=other, capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert installed.returncode == 0, installed.stderr
    for harness in ("claude", "codex", "gemini", "pi"):
        ours = (home / HARNESS_FILES[harness]).read_text(encoding="utf-8")
        theirs = (other / HARNESS_FILES[harness]).read_text(encoding="utf-8")
        assert ours.replace(str(home), str(other)) == theirs, harness

    # Codex's trust entries: the same hooks trusted (each hash covers its command's path).
    def entries(root: Path) -> list[str]:
        text = (root / ".codex" / "config.toml").read_text(encoding="utf-8")
        return [line.replace(str(root), "HOME") for line in text.splitlines()
                if not line.startswith("trusted_hash")]  # fmt: skip

    assert entries(home) == entries(other)


def test_setup_a_second_time_changes_nothing(tmp_path: Path) -> None:
    env = _env(tmp_path / "home", _bin(tmp_path, "claude", "copilot"))
    assert _setup(env).returncode == 0
    before = _files(tmp_path / "home")
    again = _setup(env)
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("already installed in") == 2
    assert "installed the hooks" not in again.stdout
    after = _files(tmp_path / "home")
    changed = {name for name in before if before[name] != after.get(name)}
    # Only the logs and receipts of doctor's probes move; no configuration file does.
    assert not {name for name in changed if not name.startswith(".local/state/")}, changed


def test_setup_with_no_harness_on_path_succeeds_writing_nothing(tmp_path: Path) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    home = tmp_path / "home"
    done = _setup(_env(home, empty))
    assert done.returncode == 0, done.stderr
    assert "no harness found on PATH (looked for claude, codex, opencode, pi, gemini, copilot, " \
        "hermes): nothing to set up." in done.stdout  # fmt: skip
    assert "`active-memory setup claude`" in done.stdout
    assert list(home.iterdir()) == []
    as_json = json.loads(_setup(_env(home, empty), "--json").stdout)
    assert as_json["harnesses"] == [] and as_json["ok"] is True
    assert sorted(as_json["not_found"]) == sorted(HARNESS_FILES)


def test_setup_dry_run_writes_nothing_and_shows_each_diff_in_json(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = _env(home, _bin(tmp_path, "claude", "hermes"))
    done = _setup(env, "--dry-run")
    assert done.returncode == 0, done.stderr
    assert f"Claude Code ({tmp_path / 'bin' / 'claude'}): would install the hooks in " \
        f"{home / HARNESS_FILES['claude']}" in done.stdout  # fmt: skip
    assert "dry run: nothing was written" in done.stdout
    assert "hook doctor" not in done.stdout
    document = json.loads(_setup(env, "--dry-run", "--json").stdout)
    assert list(home.iterdir()) == []
    by_name = {item["harness"]: item for item in document["harnesses"]}
    assert set(by_name) == {"claude", "hermes"}
    assert "+++ " + str(home / HARNESS_FILES["claude"]) in by_name["claude"]["diff"]
    assert document["dry_run"] is True and document["doctor"] is None


def test_a_configuration_that_cannot_take_the_hooks_stops_setup_before_any_write(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text("{not json", encoding="utf-8")
    done = _setup(_env(home, _bin(tmp_path, "claude", "gemini", "pi")))
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert lines[0] == "active-memory: setup wrote nothing:"
    assert lines[1].startswith(f"  Gemini CLI: {home / '.gemini' / 'settings.json'}:1: not valid")
    assert lines[2].endswith("or set up the others only: `active-memory setup claude pi`")
    # Not even the lean hook entry: the HOME holds only the broken file.
    assert sorted(_files(home)) == [".gemini/settings.json"]


def test_an_unknown_harness_or_misplaced_option_is_a_usage_error(tmp_path: Path) -> None:
    env = _env(tmp_path / "home", _bin(tmp_path, "claude", "codex"))
    unknown = _setup(env, "claude", "cursor")
    assert unknown.returncode == 2
    assert "no harness named 'cursor'; choose from claude, codex" in unknown.stderr
    misplaced = _setup(env, "--trust-project")
    assert misplaced.returncode == 2
    assert "--trust-project: only with --project, for Codex" in misplaced.stderr
    both = _setup(env, "--user", "--project")
    assert both.returncode == 2
    assert list((tmp_path / "home").iterdir()) == []


def test_a_named_harness_is_set_up_even_when_not_on_path(tmp_path: Path) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    home = tmp_path / "home"
    done = _setup(_env(home, empty), "OpenCode")
    assert f"OpenCode (not on PATH): installed the hooks in {home / HARNESS_FILES['opencode']}" \
        in done.stdout  # fmt: skip
    assert (home / HARNESS_FILES["opencode"]).is_file()
    assert not (home / ".claude").exists()
    # No claude or codex for the worker's lane: the loop would not close, so exit 1 with
    # the setting that closes it.
    assert done.returncode == 1
    assert "✗ worker: a session end starts it, but it has no lane" in done.stdout
    assert '[worker] lane = "claude"' in done.stdout


def test_setup_project_installs_into_the_checkout_only(tmp_path: Path) -> None:
    checkout = tmp_path / "repo"
    checkout.mkdir()
    subprocess.run(["git", "init", "-q", str(checkout)], check=True)
    home = tmp_path / "home"
    env = _env(home, f"{_bin(tmp_path, 'claude', 'codex')}:/usr/bin:/bin")
    done = _setup(env, "--project", "--trust-project", cwd=checkout)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (checkout / ".claude" / "settings.local.json").is_file()
    assert (checkout / ".codex" / "hooks.json").is_file()
    assert not (home / ".claude").exists()
    config = (home / ".codex" / "config.toml").read_text(encoding="utf-8")
    assert str(checkout) in config  # the project trusted, as --trust-project asked
    assert "Active Memory set-up for this checkout" in done.stdout


def test_setup_leaves_claude_code_to_its_enabled_plugin(tmp_path: Path) -> None:
    home = tmp_path / "home"
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    text = json.dumps({"enabledPlugins": {"active-memory@active-memory": True}})
    settings.write_text(text, encoding="utf-8")
    done = _setup(_env(home, _bin(tmp_path, "claude", "codex")))
    assert done.returncode == 0, done.stdout + done.stderr
    assert settings.read_text(encoding="utf-8") == text
    assert "Claude Code (" in done.stdout
    assert "nothing to install: the Active Memory plugin active-memory@active-memory is " \
        f"enabled in {settings}; it brings the hooks" in done.stdout  # fmt: skip
    assert (home / HARNESS_FILES["codex"]).is_file()
    # Hooks of ours beside the plugin run twice per tool call: the note says how to stop it.
    settings.write_text(json.dumps({"enabledPlugins": {"active-memory@active-memory": False}}))
    assert _setup(_env(home, tmp_path / "bin"), "claude").returncode == 0
    document = json.loads(settings.read_text(encoding="utf-8"))
    document["enabledPlugins"]["active-memory@active-memory"] = True
    settings.write_text(json.dumps(document), encoding="utf-8")
    both = _setup(_env(home, tmp_path / "bin"), "claude")
    assert "so every tool call runs both: `active-memory hook uninstall claude --user`" in (
        both.stdout
    )


def test_setup_says_how_to_put_active_memory_on_path_until_it_is(tmp_path: Path) -> None:
    home = tmp_path / "home"
    local_bin = home / ".local" / "bin"
    harnesses = _bin(tmp_path, "claude")
    # No folder of the home on PATH: make ~/.local/bin, link, and put it on PATH.
    first = _setup(_env(home, harnesses))
    link = f"ln -sf {CLI} ~/.local/bin/active-memory"
    assert f"command: to type `active-memory` alone: mkdir -p ~/.local/bin && {link}, then " \
        "add ~/.local/bin to PATH in your shell's profile" in first.stdout  # fmt: skip
    # Linked (as the README's install does) but not yet on this shell's PATH.
    local_bin.mkdir(parents=True)
    subprocess.run(["ln", "-sf", str(CLI), str(local_bin / "active-memory")], check=True)
    linked = _setup(_env(home, harnesses))
    assert "command: to type `active-memory` alone: ~/.local/bin/active-memory is this " \
        "installation, but ~/.local/bin is not on PATH" in linked.stdout  # fmt: skip
    # A home folder on PATH without the link: the link into it, nothing more.
    (local_bin / "active-memory").unlink()
    on_path = _env(home, f"{harnesses}:{local_bin}")
    assert f"command: to type `active-memory` alone: {link}\n" in _setup(on_path).stdout
    subprocess.run(["ln", "-sf", str(CLI), str(local_bin / "active-memory")], check=True)
    assert "command:" not in _setup(on_path).stdout
    assert json.loads(_setup(on_path, "--json").stdout)["command"]["on_path"] is True


def test_setup_says_when_session_ends_start_no_worker(tmp_path: Path) -> None:
    env = _env(tmp_path / "home", _bin(tmp_path, "claude"), ACTIVE_MEMORY_AUTO_WORKER="0")
    done = _setup(env)
    assert done.returncode == 0, done.stderr
    assert "worker: no session end starts it (ACTIVE_MEMORY_AUTO_WORKER=0); unset " \
        "ACTIVE_MEMORY_AUTO_WORKER, or run `active-memory worker --once` after sessions" \
        in done.stdout  # fmt: skip


def test_a_failed_write_puts_back_every_harness_file_written_before_it(tmp_path: Path) -> None:
    kept = tmp_path / "kept.json"
    kept.write_text("{}\n", encoding="utf-8")
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where a folder must be\n", encoding="utf-8")
    plan = setup.SetupPlan("user", tmp_path / "hook")
    first = Plan([FileChange(kept, "{}\n", '{"hooks": 1}\n'),
                  FileChange(tmp_path / "new.json", None, "{}\n")])  # fmt: skip
    second = Plan([FileChange(blocked / "settings.json", None, "{}\n")])
    plan.harnesses = [setup.HarnessSetup("claude", None, kept, first),
                      setup.HarnessSetup("gemini", None, blocked, second)]  # fmt: skip
    with pytest.raises(OSError):
        setup.apply(plan)
    assert kept.read_text(encoding="utf-8") == "{}\n"
    assert not (tmp_path / "new.json").exists()


def test_find_harnesses_reads_only_the_given_path(tmp_path: Path) -> None:
    folder = _bin(tmp_path, "gemini", "hermes")
    (folder / "codex").write_text("not executable\n", encoding="utf-8")
    found = setup.find_harnesses({"PATH": str(folder)})
    assert found == {
        "claude": None, "codex": None, "opencode": None, "pi": None,
        "gemini": str(folder / "gemini"), "copilot": None, "hermes": str(folder / "hermes"),
    }  # fmt: skip


def test_doctor_in_the_home_folder_sees_a_user_install_once(tmp_path: Path) -> None:
    # Outside any checkout, the home folder's project files are the user files: checked
    # once, as the user install (no "project not trusted" for Codex or Gemini CLI).
    home = tmp_path / "home"
    env = _env(home, _bin(tmp_path, "claude", "codex", "gemini"))
    assert _setup(env).returncode == 0
    doctor = subprocess.run([str(CLI), "hook", "doctor", "--json"], env=env, cwd=home,
                            capture_output=True, text=True, check=False)  # fmt: skip
    assert doctor.returncode == 0, doctor.stdout
    installed = json.loads(doctor.stdout)["installed"]
    assert sorted((i["harness"], i["where"]) for i in installed) == [
        ("claude", "user"), ("codex", "user"), ("gemini", "user")
    ]  # fmt: skip


def test_a_plugin_turned_off_or_unreadable_is_no_plugin(tmp_path: Path) -> None:
    # The records as each binary writes them (tests/test_setup_real.py installs them for
    # real); turned off, or a file that cannot be parsed, the harness gets its hooks.
    home = tmp_path / "home"
    env = {"HOME": str(home)}
    codex = home / ".codex" / "config.toml"
    copilot = home / ".copilot" / "settings.json"
    codex.parent.mkdir(parents=True)
    copilot.parent.mkdir(parents=True)
    codex.write_text('[plugins."active-memory@active-memory"]\nenabled = true\n')
    copilot.write_text(json.dumps({"enabledPlugins": {"active-memory@mine": True}}))
    assert plugin_in_use("codex", env) == (
        f"the Active Memory plugin active-memory@active-memory is enabled in {codex}; it "
        "brings the hooks"
    )
    assert plugin_in_use("copilot", env) is not None
    assert plugin_in_use("copilot", env | {"COPILOT_HOME": str(tmp_path)}) is None
    codex.write_text('[plugins."active-memory@active-memory"]\nenabled = false\n')
    copilot.write_text(json.dumps({"enabledPlugins": {"active-memory@mine": False,
                                                      "other@mine": True}}))  # fmt: skip
    assert plugin_in_use("codex", env) is None and plugin_in_use("copilot", env) is None
    codex.write_text("[plugins\n")
    copilot.write_text("{")
    assert plugin_in_use("codex", env) is None and plugin_in_use("copilot", env) is None
    assert plugin_in_use("pi", env) is None
