"""plugins/bootstrap.py: a plugin's package set up in its data folder, never half-used.

A whole environment whose fingerprint matches is used as is (no build, no output); a
changed source is built again; a failed build says why in one message, exits 0 (a
session must start) and keeps the last good environment; bad usage exits 2. The real
install (pip from the plugin's own folder) is proven by tests/test_claude_plugin_real.py.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BOOTSTRAP = ROOT / "plugins" / "bootstrap.py"


def _load() -> Any:
    # A plain script beside the plugins, not part of the package: loaded from its file.
    spec = importlib.util.spec_from_file_location("plugin_bootstrap", BOOTSTRAP)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bootstrap = _load()


SCREEN = ("credential_gate.py", "credential_rules.py", "credentials.py", "credential_formats.py")
"""The credential screen's modules (standard library only), which the set-up loads from
the source to mask what pip printed before it is logged."""


def _source(root: Path, *, screen: bool = True) -> Path:
    (root / "active_memory").mkdir(parents=True)
    (root / "active_memory" / "__init__.py").write_text('__version__ = "0"\n', "utf-8")
    for name in SCREEN if screen else ():
        shutil.copy(ROOT / "active_memory" / name, root / "active_memory" / name)
    (root / "pyproject.toml").write_text('[project]\nname = "x"\n', "utf-8")
    return root


def _built(data: Path, fingerprint: str) -> Path:
    """A data folder as a finished build leaves it (scripts are stand-ins)."""
    venv = data / f"venv-{fingerprint}"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "active-memory").write_text("#!/bin/sh\n", "utf-8")
    (data / "bin").mkdir()
    (data / "bin" / "active-memory-hook").write_text("#!/bin/sh\n", "utf-8")
    os.symlink(venv.name, data / "current")
    return venv


def _run(source: Path, data: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BOOTSTRAP), "--source", str(source), "--data", str(data),
         "--message"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip


def test_a_whole_environment_of_this_source_is_used_without_a_build(tmp_path: Path) -> None:
    source = _source(tmp_path / "src")
    data = tmp_path / "data"
    _built(data, bootstrap.fingerprint(source))
    done = _run(source, data)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert not (data / "bootstrap.log").exists()


def test_a_changed_package_file_changes_the_fingerprint(tmp_path: Path) -> None:
    source = _source(tmp_path / "src")
    before = bootstrap.fingerprint(source)
    (source / "active_memory" / "new.py").write_text("x = 1\n", "utf-8")
    assert bootstrap.fingerprint(source) != before


def test_an_environment_without_its_hook_entry_is_not_whole(tmp_path: Path) -> None:
    source = _source(tmp_path / "src")
    data = tmp_path / "data"
    _built(data, bootstrap.fingerprint(source))
    (data / "bin" / "active-memory-hook").unlink()
    assert bootstrap.current_fingerprint(data) is None


def test_a_failed_build_says_why_and_keeps_the_last_good_environment(tmp_path: Path) -> None:
    source = _source(tmp_path / "src")
    data = tmp_path / "data"
    good = _built(data, "0123456789abcdef")
    (source / "pyproject.toml").write_text("[project\nname = broken\n", "utf-8")
    done = _run(source, data)
    assert done.returncode == 0
    message = json.loads(done.stdout)["systemMessage"]
    assert message.startswith("Active Memory could not be set up:")
    assert str(data / "bootstrap.log") in message
    assert os.readlink(data / "current") == good.name and good.is_dir()
    assert [p.name for p in data.glob("venv-*")] == [good.name]  # the failed one is gone
    assert "failed" in (data / "bootstrap.log").read_text("utf-8")


def test_a_folder_without_our_source_is_a_usage_error(tmp_path: Path) -> None:
    done = _run(tmp_path, tmp_path / "data")
    assert done.returncode == 2
    assert "holds no Active Memory source" in done.stderr
    assert not (tmp_path / "data").exists()


def test_a_held_lock_is_waited_for_then_given_up(tmp_path: Path) -> None:
    path = tmp_path / "lock"
    with bootstrap.locked(path, 1.0) as first:
        assert first
        with bootstrap.locked(path, 0.3) as second:
            assert not second


def test_session_ends_kept_before_the_setup_are_queued_after_it(tmp_path: Path) -> None:
    data = tmp_path / "data"
    early = data / "early-session-ends"
    early.mkdir(parents=True)
    (early / "1.10.claude.json").write_text('{"session_id": "a"}', "utf-8")
    (early / "2.11.claude.json").write_text('{"session_id": "b"}', "utf-8")
    seen = tmp_path / "seen"
    entry = data / "bin" / "active-memory-hook"
    entry.parent.mkdir()
    entry.write_text(f'#!/bin/sh\necho "$* $(cat)" >> {seen}\n', "utf-8")
    entry.chmod(0o755)
    assert bootstrap.queue_early_ends(data) == 2
    assert seen.read_text("utf-8").splitlines() == [
        'session-end claude {"session_id": "a"}',
        'session-end claude {"session_id": "b"}',
    ]
    assert list(early.iterdir()) == []


def test_after_a_build_the_harness_s_last_step_runs_in_the_new_environment(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    venv = _built(data, "0123456789abcdef")
    seen = tmp_path / "seen"
    python = venv / "bin" / "python"
    python.write_text(f'#!/bin/sh\necho "$*" > {seen}\necho trusted >&2\n', "utf-8")
    python.chmod(0o755)
    bootstrap.use_screen(ROOT)  # what the set-up's worker process does first
    bootstrap.after_build(data, ["some.module", "/plugin root", str(data)])
    assert seen.read_text("utf-8").strip() == f"-m some.module /plugin root {data}"
    assert "after the build, some.module: exit 0: trusted" in (data / "bootstrap.log").read_text()


def _slow_source(root: Path, seconds: float, said: str = "slow backend gave up", *,
                 screen: bool = True) -> Path:  # fmt: skip
    """A source whose build backend takes `seconds`, then fails saying `said`."""
    source = _source(root, screen=screen)
    (source / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "slow"\nbackend-path = ["."]\n'
        '[project]\nname = "x"\nversion = "0"\n', "utf-8",
    )  # fmt: skip
    (source / "slow.py").write_text(
        "import time\n\n\ndef get_requires_for_build_wheel(config_settings=None):\n"
        f"    time.sleep({seconds})\n    raise RuntimeError({said!r})\n",
        "utf-8",
    )
    return source


def test_the_build_goes_on_when_the_process_that_started_it_is_killed(tmp_path: Path) -> None:
    # Codex stops the MCP server whose launcher started the first set-up when `codex exec`
    # ends; the build runs in a process of its own session and finishes regardless.
    source = _slow_source(tmp_path / "src", 6)
    data = tmp_path / "data"
    parent = subprocess.Popen(
        [sys.executable, str(BOOTSTRAP), "--source", str(source), "--data", str(data)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    log = data / "bootstrap.log"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and "building from" not in _text(log):
        time.sleep(0.1)
    parent.kill()
    parent.wait()
    while time.monotonic() < deadline and not re.search(r"(built|failed) in \d+ s", _text(log)):
        time.sleep(0.2)
    assert re.search(r"failed in \d+ s: .*did not run successfully", _text(log)), _text(log)
    assert "slow backend gave up" in _text(log)  # pip's whole account is in the log
    assert not list(data.glob("venv-*"))  # the failed build cleaned up after itself


def _text(path: Path) -> str:
    return path.read_text("utf-8") if path.exists() else ""


LEAKY = (
    "index https://ci:glpat-ABCDEFGHIJKLMNOPQRST12@git.example/simple refused AKIAIOSFODNN7EXAMPLE"
)


def test_a_failed_build_keeps_no_credential_pip_printed(tmp_path: Path) -> None:
    source = _slow_source(tmp_path / "src", 0, LEAKY)
    data = tmp_path / "data"
    done = _run(source, data)
    assert done.returncode == 0
    message = json.loads(done.stdout)["systemMessage"]
    log = _text(data / "bootstrap.log")
    assert "[REDACTED:" in log and "git.example/simple refused" in log  # pip's account kept
    for text in (log, message, done.stderr):
        assert "glpat-ABCDEFGHIJ" not in text and "AKIAIOSFODNN7EXAMPLE" not in text
    assert not list(source.rglob("__pycache__"))  # nothing written into the plugin's folder


def test_without_the_source_s_screen_nothing_pip_printed_is_kept(tmp_path: Path) -> None:
    source = _slow_source(tmp_path / "src", 0, LEAKY, screen=False)
    data = tmp_path / "data"
    done = _run(source, data)
    log = _text(data / "bootstrap.log")
    assert "failed" in log and "credential screen did not load" in log
    for text in (log, done.stdout, done.stderr):
        assert "glpat-ABCDEFGHIJ" not in text and "AKIAIOSFODNN7EXAMPLE" not in text
