"""Private by default (issue 17 item 10): under the usual umask 022, everything Active
Memory creates is the owner's only (files 0600, folders 0700), and files an earlier
version left readable are tightened on open with a note."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from recall_support import REPO_ROOT, claude_payload, hook_env, make_checkout, repository_lesson
from recall_support import publish as publish_lessons

from active_memory.cli import main


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask_022() -> Iterator[None]:
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def test_store_export_and_backup_are_private_under_umask_022(
    tmp_path: Path, umask_022: None, capsys: pytest.CaptureFixture[str]
) -> None:
    # A store made by the library (not through the CLI's umask) is private too.
    first = tmp_path / "first" / "lessons.sqlite3"
    publish_lessons(first, [repository_lesson("Use the wrapper", files=["api/schema.json"])])
    assert mode(first) == 0o600
    export = tmp_path / "out" / "lessons.jsonl"
    export.parent.mkdir()
    assert main(["lessons", "export", "-o", str(export), "--store", str(first)]) == 0
    assert mode(export) == 0o600
    store = tmp_path / "state" / "active-memory" / "lessons.sqlite3"
    code = main(["lessons", "import", str(export), "--store", str(store)])
    assert code == 0, capsys.readouterr().err
    assert mode(store) == 0o600
    assert mode(store.parent) == 0o700 and mode(store.parent.parent) == 0o700
    for sibling in ("-wal", "-shm"):
        journal = Path(f"{store}{sibling}")
        if journal.exists():
            assert mode(journal) == 0o600
    backup = tmp_path / "out" / "backup.sqlite3"
    assert main(["backup", str(backup), "--store", str(store)]) == 0
    assert mode(backup) == 0o600
    # The umask of an in-process caller is left as it was.
    assert os.umask(0o022) == 0o022


def test_an_existing_readable_store_is_tightened_with_a_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "lessons.sqlite3"
    publish_lessons(store, [repository_lesson("Use the wrapper", files=["api/schema.json"])])
    os.chmod(store, 0o644)
    capsys.readouterr()
    assert main(["lessons", "list", "--store", str(store), "--json"]) == 0
    assert mode(store) == 0o600
    err = capsys.readouterr().err
    assert f"{store}: was readable by other users (0644); now 0600" in err


def test_the_hook_writes_its_state_privately_under_umask_022(tmp_path: Path) -> None:
    root = make_checkout(tmp_path / "api")
    store = tmp_path / "store" / "lessons.sqlite3"
    state = tmp_path / "state"
    publish_lessons(store, [repository_lesson("Use the wrapper", files=["api/schema.json"])])
    payload = claude_payload(
        "Edit",
        {"file_path": str(root / "api/schema.json"), "old_string": "a", "new_string": "b"},
        session="s",
        cwd=root,
    )
    result = subprocess.run(
        [sys.executable, "-m", "active_memory.hooks.command", "claude"],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=hook_env(state, store),
        cwd=str(REPO_ROOT),
        timeout=60,
        check=False,
        preexec_fn=lambda: os.umask(0o022),  # the umask under test
    )
    assert result.returncode == 0 and b"Use the wrapper" in result.stdout
    created = [p for p in (state / "active-memory").rglob("*")]
    assert created, "the hook wrote no state"
    for path in created:
        expected = 0o700 if path.is_dir() else 0o600
        assert mode(path) == expected, path
