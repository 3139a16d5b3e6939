"""The recorded answers of a sequence, and how they are (re-)recorded.

Beside `sequence.json`:

- `recordings.json`: the specialists' answers keyed by the digest of the task they
  answer (`active-memory/recordings@1`, what `active-memory postmortem --replay` reads);
- `recordings.keys.json`: for each digest, which task it answers (`task`: session,
  variant, specialist, and for maintenance the lessons of the batch) and a fingerprint
  of what the answer depends on (`content`: the evidence IDs the task offers and the
  lessons, with revisions, it shows).

A task's digest changes with anything in it (a prompt's data, a view of a file, a new
field). `bench/learning_bench.py --record` runs every sequence and, for each task asked:

1. its digest is recorded: replayed;
2. else a recording of the same `task` with the same `content` exists: the answer still
   fits (only the wording or the views changed), so it is recorded again under the new
   digest (re-keyed; the old digest stays, for the package versions that still ask it);
3. else an answer file `<tasks>/<sequence>/<task>.answer.json` exists: recorded;
4. else the task is written to `<tasks>/<sequence>/<task>.{prompt.md,system.md,task.json}`
   (with the answer it had, if the content changed, as `<task>.previous-answer.json`)
   for a person to answer, and the sequence stops there (later sessions depend on it).

Nothing is lost silently: a changed task never replays an old answer, an answer given for
other content stays (the same task may be asked differently by another version of the
package), and answers no task asks for are dropped only by `--record --prune`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pydantic import JsonValue

from active_memory.specialists.kinds import kind_of
from active_memory.specialists.providers.base import input_digest
from active_memory.specialists.providers.replay import Recording, Recordings

KEYS_SCHEMA: Final = "active-memory/learning-recording-keys@1"
MODEL: Final = "careful-engineer"
"""The `model` of a hand-written recording."""


def _items(task: JsonValue, key: str) -> list[dict[str, Any]]:
    """The objects of the task's list `key` (none when it has no such list)."""
    value = task.get(key) if isinstance(task, dict) else None
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def fingerprint(task: JsonValue) -> str:
    """What an answer depends on: the evidence IDs offered and the lessons shown."""
    evidence = sorted(str(item.get("id")) for item in _items(task, "evidence"))
    lessons = sorted(
        [str(item.get("id")), int(item.get("revision") or 0)] for item in _items(task, "lessons")
    )
    text = json.dumps({"evidence": evidence, "lessons": lessons}, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def task_name(prefix: str, specialist: str, task: JsonValue) -> str:
    """The task's stable name: `<session>.<variant>.<specialist>`, and for a maintenance
    batch the lesson IDs it holds."""
    name = f"{prefix}.{specialist}"
    if kind_of(specialist).is_maintenance:
        ids = sorted(str(x.get("id")) for x in _items(task, "lessons"))
        name += "." + "+".join(ids)
    return name


@dataclass
class Store:
    """A sequence's recordings and keys, as read, and what a run used and added."""

    recordings_path: Path
    keys_path: Path
    recordings: Recordings
    keys: dict[str, dict[str, str]]
    used: set[str] = field(default_factory=set)
    rekeyed: int = 0
    added: int = 0

    @classmethod
    def read(cls, recordings_path: Path, keys_path: Path) -> Store:
        """Read both files (missing ones are empty)."""
        recordings = (
            Recordings.model_validate_json(recordings_path.read_text(encoding="utf-8"))
            if recordings_path.exists()
            else Recordings()
        )
        keys: dict[str, dict[str, str]] = {}
        if keys_path.exists():
            document = json.loads(keys_path.read_text(encoding="utf-8"))
            if document.get("schema") != KEYS_SCHEMA:
                raise ValueError(f"{keys_path}: not {KEYS_SCHEMA}")
            keys = dict(document.get("keys") or {})
        return cls(recordings_path, keys_path, recordings, keys)

    def find(self, specialist: str, digest: str) -> Recording | None:
        """The recording of this digest."""
        return self.recordings.find(specialist, digest)

    def by_task(self, name: str) -> tuple[str, dict[str, str]] | None:
        """The digest and key of the latest recording of task `name`."""
        found = [(digest, key) for digest, key in self.keys.items() if key.get("task") == name]
        return found[-1] if found else None

    def add(self, specialist: str, digest: str, answer: JsonValue, name: str, content: str) -> None:
        """Record `answer` under `digest`. Recordings under other digests stay: another
        version of the package may still ask the task as it was (`prune` drops them)."""
        self.recordings.recordings = [r for r in self.recordings.recordings if r.digest != digest]
        self.recordings.recordings.append(
            Recording(specialist=specialist, digest=digest, answer=answer, model=MODEL)
        )
        self.keys[digest] = {"task": name, "content": content}
        self.used.add(digest)

    def by_content(self, name: str, content: str) -> str | None:
        """The digest of a recording of task `name` given for the same content."""
        for digest, key in self.keys.items():
            if key.get("task") == name and key.get("content") == content:
                return digest
        return None

    def prune(self) -> int:
        """Drop every recording no task of this run asked for; how many went."""
        before = len(self.recordings.recordings)
        self.recordings.recordings = [
            r for r in self.recordings.recordings if r.digest in self.used
        ]
        self.keys = {digest: key for digest, key in self.keys.items() if digest in self.used}
        return before - len(self.recordings.recordings)

    def write(self) -> None:
        """Write both files, sorted so that the same answers always give the same bytes."""
        self.recordings.recordings.sort(key=lambda r: (r.specialist, r.digest))
        text = self.recordings.model_dump_json(by_alias=True, indent=2, exclude_none=True)
        self.recordings_path.write_text(text + "\n", encoding="utf-8")
        keys = {digest: self.keys[digest] for digest in sorted(self.keys)}
        document = {"schema": KEYS_SCHEMA, "keys": keys}
        self.keys_path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


@dataclass
class Asked:
    """A task the record pass could not answer."""

    name: str
    files: list[Path]


Fallback = Callable[[str, str, JsonValue], JsonValue | None]
"""(task name, specialist, task) → an answer, or None: a scripted answerer."""


@dataclass
class Recorder:
    """Answers a record pass's tasks from the store, re-keys, or writes them out.

    `fallback`, when given, is asked before a task is written out (a test's scripted
    answers); what it answers is recorded like an answer file."""

    store: Store
    tasks: Path
    fallback: Fallback | None = None
    missing: list[Asked] = field(default_factory=list)

    def answer(
        self, prefix: str, specialist: str, task: JsonValue, prompt: str, system: str
    ) -> Any:
        """The answer for this task, or None (it was written out for a person)."""
        digest = input_digest(task)
        name = task_name(prefix, specialist, task)
        content = fingerprint(task)
        found = self.store.find(specialist, digest)
        if found is not None:
            self.store.keys.setdefault(digest, {"task": name, "content": content})
            self.store.used.add(digest)
            return found.answer
        same = self.store.by_content(name, content)
        old = self.store.find(specialist, same) if same is not None else None
        if old is not None:
            self.store.add(specialist, digest, old.answer, name, content)
            self.store.rekeyed += 1
            return old.answer
        written = self.tasks / f"{name}.answer.json"
        scripted = self.fallback(name, specialist, task) if self.fallback else None
        if scripted is not None or written.exists():
            answer = (
                scripted
                if scripted is not None
                else json.loads(written.read_text(encoding="utf-8"))
            )
            self.store.add(specialist, digest, answer, name, content)
            self.store.added += 1
            return answer
        self.tasks.mkdir(parents=True, exist_ok=True)
        files = []
        for suffix, text in (
            (".prompt.md", prompt),
            (".system.md", system),
            (".task.json", json.dumps(task, indent=2, ensure_ascii=False) + "\n"),
        ):
            path = self.tasks / f"{name}{suffix}"
            path.write_text(text, encoding="utf-8")
            files.append(path)
        earlier = self.store.by_task(name)
        if earlier is not None:
            old = self.store.find(specialist, earlier[0])
            if old is not None:
                previous = self.tasks / f"{name}.previous-answer.json"
                previous.write_text(json.dumps(old.answer, indent=2) + "\n", encoding="utf-8")
                files.append(previous)
        self.missing.append(Asked(name, files))
        return None
