"""The answers of a sequence: written by a person for each task, replayed by digest.

Beside `sequence.json`:

- `answers.json` (`active-memory/learning-answers@1`), the source: one entry per answer a
  careful engineer wrote, with the task it answers (`task`: session, variant, specialist,
  and for a maintenance batch its lesson IDs), a fingerprint of what the answer depends on
  (`content`: the evidence IDs the task offers and the lessons, with revisions, it shows)
  and the `answer`. A task may have several entries for the same content, best first:
  one using a field a later version of the answer schema adds (`commands`), one without;
- `recordings.json` (`active-memory/recordings@1`), made from it: the answers keyed by
  the digest of the exact task (what `active-memory postmortem --replay` reads).

A task's digest changes with anything in it (a prompt's data, a view of a file, a new
field). `bench/learning_bench.py --record` runs every sequence and, for each task asked:

1. the first answer of `answers.json` for the same `task` and `content` that this
   version's answer schema accepts is recorded under the task's digest (so a task whose
   wording or views changed keeps its answer: re-keyed);
2. else an answer file `<tasks>/<sequence>/<task>.answer.json` is added to
   `answers.json` and recorded;
3. else the task is written to `<tasks>/<sequence>/<task>.{prompt.md,system.md,task.json}`
   (with the answer it had for other content, if any, as `<task>.previous-answer.json`)
   for a person to answer, and the sequence stops there (later sessions depend on it).

Nothing is lost silently: a task whose evidence or lessons changed never replays an old
answer, answers for other content stay (another version of the package may still ask the
task that way), and answers no task asks for are dropped only by `--record --prune`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pydantic import JsonValue, ValidationError

from active_memory.specialists.answers import answer_schema
from active_memory.specialists.kinds import kind_of
from active_memory.specialists.providers.base import input_digest
from active_memory.specialists.providers.replay import Recording, Recordings

ANSWERS_SCHEMA: Final = "active-memory/learning-answers@1"
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


def _fits(specialist: str, answer: JsonValue) -> bool:
    try:
        answer_schema(specialist).model_validate(answer)
    except ValidationError:
        return False
    return True


@dataclass
class Store:
    """A sequence's answers and recordings, as read, and what a record run used and added."""

    answers_path: Path
    recordings_path: Path
    answers: list[dict[str, Any]]
    recordings: Recordings
    used: set[str] = field(default_factory=set)
    """Digests this run recorded or replayed."""
    chosen: set[int] = field(default_factory=set)
    """Positions in `answers` this run used."""
    rekeyed: int = 0
    added: int = 0

    @classmethod
    def read(cls, answers_path: Path, recordings_path: Path) -> Store:
        """Read both files (missing ones are empty)."""
        answers: list[dict[str, Any]] = []
        if answers_path.exists():
            document = json.loads(answers_path.read_text(encoding="utf-8"))
            if document.get("schema") != ANSWERS_SCHEMA:
                raise ValueError(f"{answers_path}: not {ANSWERS_SCHEMA}")
            answers = [a for a in document.get("answers") or [] if isinstance(a, dict)]
        recordings = (
            Recordings.model_validate_json(recordings_path.read_text(encoding="utf-8"))
            if recordings_path.exists()
            else Recordings()
        )
        return cls(answers_path, recordings_path, answers, recordings)

    def for_task(self, name: str, content: str | None = None) -> list[int]:
        """Positions of the answers to task `name` (for `content`, when given), best first."""
        return [
            index
            for index, entry in enumerate(self.answers)
            if entry.get("task") == name and (content is None or entry.get("content") == content)
        ]

    def record(self, specialist: str, digest: str, answer: JsonValue) -> bool:
        """Record `answer` under `digest`; False when it was recorded so already."""
        self.used.add(digest)
        found = self.recordings.find(specialist, digest)
        if found is not None and found.answer == answer:
            return False
        self.recordings.recordings = [r for r in self.recordings.recordings if r.digest != digest]
        self.recordings.recordings.append(
            Recording(specialist=specialist, digest=digest, answer=answer, model=MODEL)
        )
        return True

    def add(self, name: str, content: str, specialist: str, answer: JsonValue) -> int:
        """A new answer (it goes first among the task's answers for this content)."""
        entry = {"task": name, "content": content, "specialist": specialist, "answer": answer}
        self.answers.insert(0, entry)
        self.chosen = {index + 1 for index in self.chosen} | {0}
        self.added += 1
        return 0

    def prune(self) -> int:
        """Drop the answers and recordings no task of this run used; how many answers went."""
        before = len(self.answers)
        self.answers = [a for i, a in enumerate(self.answers) if i in self.chosen]
        self.chosen = set(range(len(self.answers)))
        self.recordings.recordings = [
            r for r in self.recordings.recordings if r.digest in self.used
        ]
        return before - len(self.answers)

    def write(self) -> None:
        """Write both files, sorted so that the same answers always give the same bytes."""
        document = {"schema": ANSWERS_SCHEMA, "answers": self.answers}
        self.answers_path.write_text(
            json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        self.recordings.recordings.sort(key=lambda r: (r.specialist, r.digest))
        text = self.recordings.model_dump_json(by_alias=True, indent=2, exclude_none=True)
        self.recordings_path.write_text(text + "\n", encoding="utf-8")


@dataclass
class Asked:
    """A task the record pass could not answer."""

    name: str
    files: list[Path]


Fallback = Callable[[str, str, JsonValue], JsonValue | None]
"""(task name, specialist, task) → an answer, or None: a scripted answerer."""


@dataclass
class Recorder:
    """Answers a record pass's tasks from the answers, answer files, or writes them out.

    `fallback`, when given, is asked before a task is written out (a test's scripted
    answers); what it answers is added like an answer file."""

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
        for index in self.store.for_task(name, content):
            answer = self.store.answers[index].get("answer")
            # Only an answer this version of the answer's schema accepts (one that uses a
            # field the package does not have is no answer here).
            if _fits(specialist, answer):
                self.store.chosen.add(index)
                if self.store.record(specialist, digest, answer):
                    self.store.rekeyed += 1
                return answer
        written = self.tasks / f"{name}.answer.json"
        scripted = self.fallback(name, specialist, task) if self.fallback else None
        if scripted is not None or written.exists():
            answer = (
                scripted
                if scripted is not None
                else json.loads(written.read_text(encoding="utf-8"))
            )
            self.store.add(name, content, specialist, answer)
            self.store.record(specialist, digest, answer)
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
        earlier = self.store.for_task(name)
        if earlier:
            previous = self.tasks / f"{name}.previous-answer.json"
            answer = self.store.answers[earlier[0]].get("answer")
            previous.write_text(json.dumps(answer, indent=2) + "\n", encoding="utf-8")
            files.append(previous)
        self.missing.append(Asked(name, files))
        return None
