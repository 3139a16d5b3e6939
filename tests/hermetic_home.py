"""The test suite never reads or writes the user's own state (issue 29 item 7).

`isolate` (called from conftest's `pytest_configure`, before any test module is imported)
points HOME at a folder of the session's own and removes every variable that would name
a state, config, data or cache folder elsewhere (ZEROSHOT_STATE_DIR, XDG_*,
ACTIVE_MEMORY_STORE, the harnesses' own homes), so every default path a test or a
subprocess computes lands in that folder. Git still needs an identity to commit there:
the session's HOME gets a `.gitconfig` with a test identity only.

`RealState` remembers what the user's real state looked like before the session (the
zeroshot state folder, recursively, and the harness config folders two levels deep); the
autouse fixture in conftest compares after every test and fails the test that changed it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from active_memory.store.location import zeroshot_state_path

CLEARED = (
    "ZEROSHOT_STATE_DIR",
    "XDG_STATE_HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "ACTIVE_MEMORY_STORE",
    "CODEX_HOME",
    "COPILOT_HOME",
    "CLAUDE_CONFIG_DIR",
    "GEMINI_CLI_HOME",
    "PI_CODING_AGENT_DIR",
    "HERMES_HOME",
    "GIT_CONFIG_GLOBAL",
)
"""Variables that would send a default path outside the session's HOME."""

QUIET = {"ACTIVE_MEMORY_AUTO_WORKER": "0"}
"""Set for the whole session: a session-end hook run by a test starts no worker process
(docs/queue.md); the tests of the automatic worker remove it from their processes."""

HARNESS_FOLDERS = (".claude", ".codex", ".gemini", ".pi", ".copilot", ".hermes",
                   ".config/opencode", ".config/active-memory")  # fmt: skip
"""Where our installers write in a HOME: watched two levels deep (transcripts below)."""

MAX_ENTRIES = 20_000
"""A real state folder larger than this is compared by its first entries only."""

Fingerprint = dict[str, tuple[int, int]]


def _walk(root: Path, depth: int | None, into: Fingerprint) -> None:
    """(mtime, size) of `root` and what is below it, `depth` levels deep (None: all)."""
    try:
        stat = root.lstat()
    except OSError:
        return
    into[str(root)] = (stat.st_mtime_ns, stat.st_size)
    if not root.is_dir() or root.is_symlink() or depth == 0 or len(into) > MAX_ENTRIES:
        return
    try:
        children = sorted(os.scandir(root), key=lambda entry: entry.name)
    except OSError:
        return
    for child in children:
        _walk(Path(child.path), None if depth is None else depth - 1, into)


@dataclass
class RealState:
    """The user's real state folders, and what they held when the session started."""

    state: list[Path]
    harness: list[Path]
    before: Fingerprint = field(default_factory=dict)

    @classmethod
    def of(cls, env: dict[str, str]) -> RealState:
        home = Path(env.get("HOME") or os.path.expanduser("~"))
        states = {Path(zeroshot_state_path(env)), home / ".local" / "state" / "zeroshot"}
        real = cls(sorted(states), [home / name for name in HARNESS_FOLDERS])
        real.before = real.fingerprint()
        return real

    def fingerprint(self) -> Fingerprint:
        found: Fingerprint = {}
        for folder in self.state:
            _walk(folder, None, found)
        for folder in self.harness:
            _walk(folder, 2, found)
        return found

    def changes(self) -> list[str]:
        """What differs from the session's start: `added …`, `removed …`, `changed …`."""
        now = self.fingerprint()
        lines = [f"added {path}" for path in sorted(now.keys() - self.before.keys())]
        lines += [f"removed {path}" for path in sorted(self.before.keys() - now.keys())]
        lines += [
            f"changed {path}"
            for path in sorted(now.keys() & self.before.keys())
            if now[path] != self.before[path] and not Path(path).is_dir()
        ]
        return lines

    def accept(self) -> None:
        """Take the current state as the new reference (after a failure was reported)."""
        self.before = self.fingerprint()


@dataclass
class Isolation:
    """The session's own HOME and the real state it protects."""

    home: Path
    real: RealState
    saved: dict[str, str | None]

    def restore(self) -> None:
        for name, value in self.saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        shutil.rmtree(self.home.parent, ignore_errors=True)


def isolate() -> Isolation:
    """Point HOME at a new folder of the session's own; see the module's text."""
    real = RealState.of(dict(os.environ))
    root = Path(tempfile.mkdtemp(prefix="active-memory-tests-"))
    home = root / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Active Memory tests\n\temail = tests@active-memory.invalid\n"
    )
    saved = {name: os.environ.get(name) for name in (*CLEARED, *QUIET, "HOME")}
    for name in CLEARED:
        os.environ.pop(name, None)
    os.environ.update(QUIET)
    os.environ["HOME"] = str(home)
    return Isolation(home, real, saved)
