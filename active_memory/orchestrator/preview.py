"""What each specialist would receive for a run, without calling a model (`postmortem
--show-tasks DIR`).

`CaptureSessions` is a `SessionFactory` whose sessions record every question exactly as a
lane would send it (the prompt, the system instructions with the answer schema, and the
task data) and answer with the one answer that changes nothing: every supplied lesson
kept, no proposal. The postmortem runs as usual (dry, so nothing is written), so every
batch of every specialist is built by the same code as a real run: what is written is
what a model would receive. `write_tasks` writes one set of files per question.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import JsonValue

from active_memory.atomic_files import write_atomically
from active_memory.credential_gate import mask, mask_value
from active_memory.errors import UsageError
from active_memory.specialists.kinds import SpecialistName, kind_of
from active_memory.specialists.providers import ProviderSession
from active_memory.specialists.providers.base import Request
from active_memory.specialists.providers.function import FunctionSession

MODEL = "show-tasks"
"""The model name the capture sessions report (no model is called)."""


@dataclass(frozen=True, slots=True)
class Captured:
    """One question a specialist asked: its prompt, system instructions and task data."""

    specialist: str
    prompt: str
    system: str
    input: JsonValue


@dataclass(slots=True)
class CaptureSessions:
    """A session factory that records questions and answers without a model."""

    captured: list[Captured] = field(default_factory=list)

    def __call__(self, specialist: SpecialistName, *, deadline: float) -> ProviderSession:
        async def answer(request: Request) -> JsonValue:
            prompt = "\n\n".join(m.content for m in request.messages)
            self.captured.append(
                Captured(specialist, prompt, request.instructions(), request.input)
            )
            return _no_change(specialist, request.input)

        return FunctionSession(specialist, answer, model=MODEL, deadline=deadline)


def _no_change(specialist: str, data: JsonValue) -> JsonValue:
    if not kind_of(specialist).is_maintenance:
        return {"lessons": []}
    lessons = data.get("lessons") if isinstance(data, dict) else None
    return {
        "decisions": [
            {"id": x["id"], "revision": x["revision"], "action": "keep"}
            for x in (lessons if isinstance(lessons, list) else [])
            if isinstance(x, dict)
        ]
    }


def write_tasks(directory: Path, captured: list[Captured]) -> list[Path]:
    """Write `<specialist>[-batch-N].prompt.md`, `.system.md` and `.task.json` per question
    into `directory` (created if needed); the paths written, in order."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--show-tasks {directory}: cannot create it: {exc.strerror}") from None
    if not directory.is_dir():
        raise UsageError(f"--show-tasks {directory}: not a folder")
    counts: dict[str, int] = {}
    for question in captured:
        counts[question.specialist] = counts.get(question.specialist, 0) + 1
    seen: dict[str, int] = {}
    written: list[Path] = []
    for question in captured:
        seen[question.specialist] = seen.get(question.specialist, 0) + 1
        base = question.specialist
        if counts[question.specialist] > 1:
            base += f"-batch-{seen[question.specialist]}"
        # Screened where they are built; the one screen again at the writer.
        data = mask_value(question.input)
        for suffix, text in (
            (".prompt.md", mask(question.prompt)),
            (".system.md", mask(question.system)),
            (".task.json", json.dumps(data, indent=2, ensure_ascii=False) + "\n"),
        ):
            path = directory / f"{base}{suffix}"
            try:
                write_atomically(path, text, mode=0o600)  # code and run data: private
            except OSError as exc:
                raise UsageError(f"--show-tasks {path}: cannot write it: {exc.strerror}") from None
            written.append(path)
    return written
