"""The lean hook entry and its bytecode, prepared by `hook install`.

A command hook is a new interpreter per tool call, so what runs before our code counts.
pip's generated console script imports `re` (about 10 ms, half a bare start-up) only to
tidy `sys.argv[0]`; the entry written here imports nothing but `sys` and the hook module.
And an editable install, or one run with `PYTHONDONTWRITEBYTECODE=1`, may never have
written bytecode for the hook's modules, so every call would compile them again (about
twice the cost): `compile_hook_path` writes what is missing.

Both are idempotent and cheap when nothing is missing. The floor is a bare interpreter
start-up (`python -c pass`); bench/README.md ("Recall") gives the measured ratios.
"""

from __future__ import annotations

import sys
from pathlib import Path

ENTRY_NAME = "active-memory-hook"

# Every module a warm hook call imports (tests/test_hook_command.py pins the list of what
# may be imported; this is what must have bytecode).
HOOK_MODULES = (
    "active_memory/__init__.py",
    "active_memory/hooks/__init__.py",
    "active_memory/hooks/command.py",
    "active_memory/hooks/hook_log.py",
    "active_memory/private.py",
    "active_memory/credential_gate.py",
    "active_memory/credential_rules.py",
    "active_memory/reader.py",
    "active_memory/settings.py",
    "active_memory/session_budget.py",
    "active_memory/atomic_files.py",
    "active_memory/file_lock.py",
    "active_memory/file_names.py",
    "active_memory/shell.py",
    "active_memory/command_family.py",
    "active_memory/hooks/client.py",
    "active_memory/recall",
    "active_memory/store/__init__.py",
    "active_memory/store/changes.py",
    "active_memory/store/direct.py",
    "active_memory/cited_text.py",
    "active_memory/store/sqlite_schema.py",
    "active_memory/store/location.py",
)


def package_root() -> Path:
    """The folder holding the `active_memory` package."""
    return Path(__file__).resolve().parent.parent.parent


def compile_hook_path(root: Path | None = None) -> list[str]:
    """Write bytecode for the hook's modules where it is missing or stale; returns them."""
    import importlib.util
    import py_compile

    base = root or package_root()
    sources: list[Path] = []
    for name in HOOK_MODULES:
        path = base / name
        sources += sorted(path.glob("*.py")) if path.is_dir() else [path]
    written: list[str] = []
    for source in sources:
        if not source.is_file():
            continue
        cached = Path(importlib.util.cache_from_source(str(source)))
        try:
            if cached.stat().st_mtime >= source.stat().st_mtime:
                continue
        except FileNotFoundError:
            pass
        try:
            py_compile.compile(str(source), cfile=str(cached), doraise=True)
        except (OSError, py_compile.PyCompileError):
            continue  # a read-only install: the hook still runs, only slower
        written.append(str(source.relative_to(base)))
    return written


ENTRY_TEMPLATE = """#!{python}
# Written by `active-memory hook install`: the lean hook entry (docs/recall.md).
import sys
from active_memory.hooks.command import run
sys.exit(run())
"""


def write_entry(folder: Path, python: str | None = None) -> Path:
    """Write (or refresh) the lean `active-memory-hook` script in `folder`; its path."""
    from active_memory.atomic_files import write_atomically

    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / ENTRY_NAME
    text = ENTRY_TEMPLATE.format(python=python or sys.executable)
    try:
        if path.read_text(encoding="utf-8") == text:
            return path
    except (FileNotFoundError, UnicodeDecodeError):
        pass
    write_atomically(path, text, mode=0o755)
    return path
