"""The suite's guard for the user's real state (tests/hermetic_home.py): the session runs
in a HOME of its own, and a change to the real state folder is found and named."""

from __future__ import annotations

import os
from pathlib import Path

from hermetic_home import RealState

from active_memory.store.location import resolve_store_location, state_dir


def test_the_session_runs_in_a_home_of_its_own() -> None:
    home = Path(os.environ["HOME"])
    assert home.name == "home" and home.parent.name.startswith("active-memory-tests-")
    assert Path(state_dir()).is_relative_to(home)
    assert Path(resolve_store_location(None)).is_relative_to(home)
    assert "ZEROSHOT_STATE_DIR" not in os.environ and "ACTIVE_MEMORY_STORE" not in os.environ


def test_a_write_into_the_real_state_folder_is_named(tmp_path: Path) -> None:
    state = tmp_path / ".local" / "state" / "zeroshot" / "active-memory"
    (state / "recall").mkdir(parents=True)
    (state / "recall" / "hook.log").write_text("before\n")
    (tmp_path / ".claude").mkdir()
    real = RealState.of({"HOME": str(tmp_path)})
    assert real.changes() == []
    (state / "postmortems").mkdir()
    (state / "postmortems" / "run-1.json").write_text("{}")
    with (state / "recall" / "hook.log").open("a") as log:
        log.write("a line\n")
    (tmp_path / ".claude" / "settings.json").write_text("{}")
    changes = real.changes()
    assert f"added {state / 'postmortems' / 'run-1.json'}" in changes
    assert f"changed {state / 'recall' / 'hook.log'}" in changes
    assert f"added {tmp_path / '.claude' / 'settings.json'}" in changes
    real.accept()
    assert real.changes() == []


def test_a_state_folder_named_by_zeroshot_state_dir_is_watched(tmp_path: Path) -> None:
    real = RealState.of({"HOME": str(tmp_path / "home"), "ZEROSHOT_STATE_DIR": str(tmp_path / "z")})
    (tmp_path / "z" / "active-memory").mkdir(parents=True)
    assert f"added {tmp_path / 'z'}" in real.changes()
