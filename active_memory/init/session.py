"""The session folder: private (0700), never inside a git checkout, one caller at a time.

Layout: `session.json` (options and the inventory taken by the first call), `runs/`
(the selected run records, so a resume reads what the first call saw), `exchange/`
(specialist task and answer files), `publishing.json` (the mutations about to be
published) and `receipt.json` (the publication receipt, written last).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from active_memory.atomic_files import write_atomically
from active_memory.checkout.git import GitFailed, run_git
from active_memory.credential_gate import mask_value
from active_memory.file_lock import FileLock
from active_memory.init.errors import InitRefused
from active_memory.runlog.screening import screen_record_data

STATE_SCHEMA = "active-memory/init-session@1"


@dataclass(frozen=True, slots=True)
class Options:
    """What a session was started with; a resume must ask for the same."""

    ignore_repos: tuple[str, ...]
    ignore_graphs: tuple[str, ...]
    runs_dir: str | None
    checkouts: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """As saved in `session.json`."""
        return {
            "ignore_repos": list(self.ignore_repos),
            "ignore_graphs": list(self.ignore_graphs),
            "runs_dir": self.runs_dir,
            "checkouts": list(self.checkouts),
        }


# What a session saved before an option existed is read as that option's default.
_SAVED_DEFAULTS: dict[str, Any] = {"checkouts": []}

# How each option is spelled on the command line, for a conflict's message.
_FLAGS: dict[str, str] = {
    "ignore_repos": "--ignore-repos",
    "ignore_graphs": "--ignore-graphs",
    "runs_dir": "--runs",
    "checkouts": "--checkout",
}


@dataclass(frozen=True, slots=True)
class Requested:
    """The options one call asked for; None is an option the call omitted.

    A new session reads an omitted option as its default; a resume reads it as the
    saved value, so only a value that differs from the saved one is a conflict.
    """

    ignore_repos: tuple[str, ...] | None = None
    ignore_graphs: tuple[str, ...] | None = None
    runs_dir: str | None = None
    checkouts: tuple[str, ...] | None = None

    def defaults(self) -> Options:
        """The options of a new session: every omitted option at its default."""
        return Options(
            self.ignore_repos or (), self.ignore_graphs or (), self.runs_dir, self.checkouts or ()
        )

    def given(self) -> dict[str, Any]:
        """The options this call named, as `session.json` spells them."""
        named = {
            "ignore_repos": self.ignore_repos,
            "ignore_graphs": self.ignore_graphs,
            "runs_dir": self.runs_dir,
            "checkouts": self.checkouts,
        }
        return {
            k: list(v) if isinstance(v, tuple) else v for k, v in named.items() if v is not None
        }


@dataclass(frozen=True, slots=True)
class Session:
    """An open, locked session folder."""

    path: Path

    @property
    def exchange(self) -> Path:
        """Where specialist task and answer files go."""
        return self.path / "exchange"

    @property
    def runs(self) -> Path:
        """Where the selected run records are kept."""
        return self.path / "runs"

    def read(self, name: str) -> Any | None:
        """A JSON file of the session, or None when absent."""
        from active_memory.reader import load_json

        if not (self.path / name).exists():
            return None
        return load_json(self.path / name, "init session file")

    def write(self, name: str, document: Any) -> None:
        """Write a JSON file durably: temporary file, fsync, rename, fsync the folder."""
        target = self.path / name
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        # No credential at rest in a session's files: the copies of the selected run
        # records keep their identity and graph as they are (runlog/screening.py).
        if name.startswith("runs/") and isinstance(document, dict):
            document = screen_record_data(document)
        else:
            document = mask_value(document)
        text = json.dumps(document, indent=2, sort_keys=True) + "\n"
        write_atomically(target, text, mode=0o600)


def _inside_checkout(path: Path) -> Path | None:
    folder = path
    while not folder.exists():
        folder = folder.parent
    try:
        top = run_git(folder, ["rev-parse", "--show-toplevel"]).stdout.decode().strip()
    except GitFailed:
        return None
    return Path(top) if top else None


@contextmanager
def open_session(directory: Path, requested: Requested) -> Iterator[tuple[Session, bool]]:
    """Create or resume the session at `directory`, locked for this call.

    Yields the session and whether it is new. Refuses a folder inside a git checkout, a
    non-empty folder that is not a session, a session another call holds, and a resume
    that names an option with another value than the saved one (an omitted option keeps
    the saved value).
    """
    path = directory.expanduser().absolute()
    checkout = _inside_checkout(path)
    if checkout is not None:
        raise InitRefused(
            f"{path} is inside the git checkout {checkout}; a session holds private run "
            "data, choose a folder outside every checkout"
        )
    state = path / "session.json"
    # A first call that crashed before saving its state may leave these behind.
    leftovers = {"lock", "runs", "exchange"}
    if (
        path.exists()
        and not state.exists()
        and any(p.name not in leftovers and not p.name.startswith(".") for p in path.iterdir())
    ):
        raise InitRefused(f"{path} is not empty and not an init session; choose a new folder")
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.chmod(0o700)
    with ExitStack() as held:
        try:
            held.enter_context(FileLock(path / "lock", timeout=0))  # one attempt
        except TimeoutError:
            raise InitRefused(
                f"another `active-memory init` is advancing {path}; wait for it to finish"
            ) from None
        session = Session(path)
        saved = session.read("session.json")
        if saved is not None:
            _check_resume(path, saved, requested)
        yield session, saved is None


def _check_resume(path: Path, saved: dict[str, Any], requested: Requested) -> None:
    if saved.get("schema") != STATE_SCHEMA:
        raise InitRefused(f"{path}/session.json is not an {STATE_SCHEMA} document")
    before = saved.get("options", {})
    for key, value in requested.given().items():
        saved_value = before.get(key, _SAVED_DEFAULTS.get(key))
        if saved_value != value:
            flag = _FLAGS[key]
            raise InitRefused(
                f"this session was started with {flag} = {json.dumps(saved_value)}, not "
                f"{json.dumps(value)}; omit {flag} to resume with the saved value, or start "
                f"a new session with another --directory to use the new one"
            )
