"""The hook command installers write in tests: the lean entry under a test state dir.

`hook install` writes the lean hook entry (hooks/lean.py) to
`<state dir>/active-memory/bin/active-memory-hook` and puts that path in the harness's
config. The `lean_state` fixture (autouse where imported) points the state dir at one
folder for the whole test session, so the expected command is a constant, `HOOK`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from active_memory.errors import ActiveMemoryError
from active_memory.hooks import install_cli

STATE = Path(tempfile.mkdtemp(prefix="am-install-state-"))
HOOK = STATE / "active-memory" / "bin" / "active-memory-hook"


@pytest.fixture(autouse=True)
def lean_state(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """ZEROSHOT_STATE_DIR for the test: the folder `HOOK` lies in."""
    monkeypatch.setenv("ZEROSHOT_STATE_DIR", str(STATE))
    yield STATE


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run `hook install|uninstall …` as the CLI would (errors → message + exit code)."""
    parser = argparse.ArgumentParser(prog="active-memory hook")
    install_cli.register(parser.add_subparsers(dest="action", required=True))
    args = parser.parse_args(argv)
    try:
        code = int(args.handler(args))
    except ActiveMemoryError as exc:
        print(f"active-memory: {exc}", file=sys.stderr)
        code = exc.exit_code
    captured = capsys.readouterr()
    return code, captured.out, captured.err
