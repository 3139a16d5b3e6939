from __future__ import annotations

from pathlib import Path

from active_memory.store.location import default_store_path, resolve_store_location

TAIL = Path("active-memory") / "lessons.sqlite3"


def test_zeroshot_state_dir_wins() -> None:
    env = {"ZEROSHOT_STATE_DIR": "/zs", "XDG_STATE_HOME": "/xdg", "HOME": "/home/u"}
    assert default_store_path(env, "linux") == Path("/zs") / TAIL


def test_xdg_state_home_comes_next() -> None:
    env = {"XDG_STATE_HOME": "/xdg", "HOME": "/home/u"}
    assert default_store_path(env, "linux") == Path("/xdg/zeroshot") / TAIL


def test_home_local_state_is_the_default() -> None:
    assert default_store_path({"HOME": "/home/u"}, "linux") == (
        Path("/home/u/.local/state/zeroshot") / TAIL
    )


def test_windows_uses_local_app_data() -> None:
    env = {"LOCALAPPDATA": "C:/Users/u/AppData/Local", "XDG_STATE_HOME": "/ignored"}
    assert default_store_path(env, "win32") == (
        Path("C:/Users/u/AppData/Local/zeroshot/state") / TAIL
    )


def test_windows_still_honours_zeroshot_state_dir() -> None:
    assert default_store_path({"ZEROSHOT_STATE_DIR": "D:/zs"}, "win32") == Path("D:/zs") / TAIL


def test_store_option_beats_environment_beats_default() -> None:
    env = {"ACTIVE_MEMORY_STORE": "/env.sqlite3", "HOME": "/home/u"}
    assert resolve_store_location("/opt.sqlite3", env) == "/opt.sqlite3"
    assert resolve_store_location(None, env) == "/env.sqlite3"
    assert resolve_store_location(None, {"HOME": "/home/u"}).endswith("lessons.sqlite3")
