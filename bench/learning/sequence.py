"""A learning sequence: sessions of one repository, in order, with the repository's state.

`sequence.json` (`active-memory/learning-sequence@1`) beside its data:

- `repository.bundle`: a git bundle holding every commit a session started or ended on;
  `repository.remote`: the URL `origin` gets (it names the repository's namespace);
- `transcripts`: a `.tar.xz` archive (or a folder) of the session logs, as the harness
  wrote them (a Claude Code transcript with its `<session>/subagents/` folder, a Codex
  rollout);
- `sessions`: each `log` (its path in the archive), `harness`, the working folder it was
  recorded in (`cwd`: replaced by the local checkout's path, so the importer and the
  hooks see a checkout that exists here), and the `start` and `end` commits;
- `lessons` (optional): lessons the store holds before the first session.

`prepare` builds, under a work folder, one checkout per session (cloned from the bundle,
at its start commit, `origin` set to the remote) and a copy of each log with the recorded
folder replaced by that checkout's path.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

SCHEMA = "active-memory/learning-sequence@1"
_COMMIT = r"^[0-9a-f]{40}$"


class SequenceError(Exception):
    """A sequence that cannot be read or prepared; the message says what and where."""


class RepositorySpec(BaseModel):
    """Where the repository's states come from."""

    model_config = ConfigDict(extra="forbid")

    bundle: str
    remote: str


class SessionSpec(BaseModel):
    """One session of the sequence."""

    model_config = ConfigDict(extra="forbid")

    log: str
    harness: Literal["claude", "codex"]
    cwd: str = Field(pattern=r"^/")
    start: str = Field(pattern=_COMMIT)
    end: str = Field(pattern=_COMMIT)
    prompt: str | None = None
    note: str | None = None


class SequenceSpec(BaseModel):
    """A `sequence.json` file."""

    model_config = ConfigDict(extra="forbid")

    schema_: Literal["active-memory/learning-sequence@1"] = Field(alias="schema")
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    description: str = ""
    repository: RepositorySpec
    transcripts: str
    lessons: str | None = None
    """Lessons in the store before the first session (`lessons export` JSON Lines)."""
    sessions: list[SessionSpec] = Field(min_length=2)


@dataclass(frozen=True)
class Sequence:
    """A loaded sequence: its spec and the folder its paths are relative to."""

    spec: SequenceSpec
    folder: Path

    @property
    def name(self) -> str:
        """The sequence's name."""
        return self.spec.name

    @property
    def recordings(self) -> Path:
        """Its recorded specialist answers (`active-memory/recordings@1`)."""
        return self.folder / "recordings.json"

    @property
    def answers(self) -> Path:
        """The answers a person wrote for its tasks (`bench/learning/answers.py`)."""
        return self.folder / "answers.json"


def load_sequence(path: Path) -> Sequence:
    """Read `path` (a `sequence.json` or the folder holding one)."""
    file = path / "sequence.json" if path.is_dir() else path
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise SequenceError(f"{file}: cannot read it: {exc.strerror or exc}") from None
    try:
        spec = SequenceSpec.model_validate_json(text)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5]
        )
        raise SequenceError(f"{file}: not a learning sequence: {problems}") from None
    return Sequence(spec, file.parent.resolve())


@dataclass(frozen=True)
class PreparedSession:
    """One session made ready to replay: its log here, its checkout, its times."""

    index: int
    """Its position in the sequence file (1-based)."""
    spec: SessionSpec
    session_id: str
    log: Path
    checkout: Path
    started: datetime
    ended: datetime

    @property
    def key(self) -> str:
        """A short stable name: position and the first characters of the session ID."""
        return f"{self.index}-{self.session_id[:8]}"

    @property
    def run_id(self) -> str:
        """The run ID the importer gives this session."""
        return f"{self.spec.harness}-{self.session_id}"


def _git(*arguments: str) -> str:
    done = subprocess.run(["git", *arguments], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SequenceError(f"git {' '.join(arguments)}: {done.stderr.strip()}")
    return done.stdout.strip()


def checkout_commit(checkout: Path, commit: str) -> None:
    """Move `checkout` to `commit` (detached), files and all."""
    _git("-C", str(checkout), "checkout", "-q", "--force", "--detach", commit)
    _git("-C", str(checkout), "clean", "-q", "-f", "-d")


def _extract(sequence: Sequence, into: Path) -> Path:
    source = (sequence.folder / sequence.spec.transcripts).resolve()
    if source.is_dir():
        return source
    if not source.is_file():
        raise SequenceError(f"{sequence.name}: transcripts {source} not found")
    into.mkdir(parents=True, exist_ok=True)
    with tarfile.open(source, "r:*") as archive:
        archive.extractall(into, filter="data")
    return into


_TIME = re.compile(rb'"timestamp"\s*:\s*"([0-9T:.+\-Z]{16,40})"')


def _times(files: list[Path]) -> tuple[datetime, datetime]:
    found: list[datetime] = []
    for file in files:
        for match in _TIME.finditer(file.read_bytes()):
            found.append(datetime.fromisoformat(match.group(1).decode().replace("Z", "+00:00")))
    if not found:
        raise SequenceError(f"{files[0]}: no timestamps")
    return min(found), max(found)


def _session_id(spec: SessionSpec, log: Path) -> str:
    with log.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle):
            if number > 400:
                break
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if spec.harness == "claude" and isinstance(entry.get("sessionId"), str):
                return str(entry["sessionId"])
            payload = entry.get("payload")
            if entry.get("type") == "session_meta" and isinstance(payload, dict):
                return str(payload["id"])
    raise SequenceError(f"{log}: no session ID in its first lines")


def prepare(sequence: Sequence, work: Path) -> list[PreparedSession]:
    """Checkouts and rewritten logs for every session under `work`, in start order."""
    logs = _extract(sequence, work / "logs")
    bundle = (sequence.folder / sequence.spec.repository.bundle).resolve()
    if not bundle.is_file():
        raise SequenceError(f"{sequence.name}: bundle {bundle} not found")
    prepared: list[PreparedSession] = []
    for index, spec in enumerate(sequence.spec.sessions, start=1):
        original = logs / spec.log
        if not original.is_file():
            raise SequenceError(f"{sequence.name}: session log {spec.log} is not in {logs}")
        session_id = _session_id(spec, original)
        checkout = work / "checkouts" / f"{index}-{session_id[:8]}"
        if checkout.exists():
            shutil.rmtree(checkout)
        checkout.parent.mkdir(parents=True, exist_ok=True)
        _git("clone", "-q", "--no-checkout", str(bundle), str(checkout))
        _git("-C", str(checkout), "remote", "set-url", "origin", sequence.spec.repository.remote)
        checkout_commit(checkout, spec.start)
        files = _rewritten(original, spec.cwd, checkout, work / "sessions" / str(index))
        started, ended = _times(files)
        prepared.append(
            PreparedSession(index, spec, session_id, files[0], checkout, started, ended)
        )
    return sorted(prepared, key=lambda p: (p.started, p.index))


def _rewritten(original: Path, recorded: str, checkout: Path, into: Path) -> list[Path]:
    """The log (and its sub-agents' logs) with the recorded folder replaced by `checkout`."""
    sources = [original]
    subagents = original.parent / original.stem / "subagents"
    if subagents.is_dir():
        sources.extend(sorted(subagents.glob("*.jsonl")))
    written: list[Path] = []
    for source in sources:
        target = into / source.relative_to(original.parent)
        target.parent.mkdir(parents=True, exist_ok=True)
        text = source.read_text(encoding="utf-8")
        target.write_text(_replace_folder(text, recorded.rstrip("/"), str(checkout)), "utf-8")
        written.append(target)
    return written


def _replace_folder(text: str, recorded: str, local: str) -> str:
    # Only whole path components: `/x/spotter-fum` must not rewrite `/x/spotter-fum2`.
    pattern = re.compile(re.escape(recorded) + r"(?=[/\"'\\\s:]|$)")
    return pattern.sub(local.replace("\\", "\\\\"), text)
