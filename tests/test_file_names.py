"""State-file names: distinct for distinct keys, never a path of their own."""

from __future__ import annotations

from active_memory.file_names import safe_name


def test_safe_names_are_distinct_and_never_dot_or_dotdot() -> None:
    keys = ["run:1", "run/1", "run%3A1", ".", "..", "", "a" * 300, "a" * 299 + "b", "é"]
    names = [safe_name(key) for key in keys]
    assert len(set(names)) == len(names)
    assert not any(name in ("", ".", "..") or "/" in name or ":" in name for name in names)
    assert all(len(name) <= 120 for name in names)
