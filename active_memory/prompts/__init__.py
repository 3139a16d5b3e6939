"""The specialists' prompt templates (package data) and their loader.

One `string.Template` file per specialist, named after it (`graph_maintenance.md`, ...).
`load_prompts()` reads and validates all four: each must exist, be UTF-8, use `$name`
placeholders correctly, use only the placeholders below and every one its role requires.
A missing or broken template raises `PromptTemplateError` naming the file: the
orchestrator calls `load_prompts()` at start-up so a broken install fails before a run,
never with a silent default. `render(specialist, task)` fills one in.

Limits in the text come from `lessons/limits.py`'s constants, the answer example from
`answers.example_answer`, so nothing is written twice.

Nothing from a run record enters a template's own lines: the run ID, titles, node and
file names, completions and file contents are all inside the task data, which `render`
puts between two frame lines tagged with a digest of the framed text (`<task-data-1a2b…>`
… `</task-data-1a2b…>`). Text inside the data cannot close the frame: it would have to
contain the digest of the very text that contains it.
"""

from __future__ import annotations

import functools
import hashlib
import string
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from active_memory.errors import ActiveMemoryError
from active_memory.lessons import (
    BROAD_WORDS,
    KEYWORD_GROUP_MAX_TERMS,
    KEYWORD_GROUP_MIN_TERMS,
    REASON_MAX_BYTES,
    RECOMMENDATION_MAX_BYTES,
    TITLE_MAX_BYTES,
)
from active_memory.specialists.answers import example_answer
from active_memory.specialists.kinds import SPECIALISTS, SpecialistName, kind_of
from active_memory.specialists.tasks import (
    DiscoveryTask,
    MaintenanceTask,
    task_text,
)

COMMON_PLACEHOLDERS = frozenset(
    {
        "task_json",
        "answer_example",
        "title_max_bytes",
        "recommendation_max_bytes",
        "reason_max_bytes",
        "keyword_min_terms",
        "keyword_max_terms",
        "broad_words",
    }
)
"""Every template must use each of these."""
ROLE_PLACEHOLDERS = {
    "maintenance": frozenset({"lesson_count"}),
    "discovery": frozenset({"evidence_count"}),
}
"""Required in addition, by role."""
KNOWN_PLACEHOLDERS = COMMON_PLACEHOLDERS | frozenset({"specialist"}).union(
    *ROLE_PLACEHOLDERS.values()
)
"""Everything `render` can fill in; any other placeholder is an error (`run_id` is gone:
identifiers from the run are data, shown only inside the frame)."""
FRAME_TAG_HEX = 16
"""Hex digits of the task's digest in its frame tag (64 bits: not guessable by text
inside the task)."""


class PromptTemplateError(ActiveMemoryError):
    """A prompt template is missing or broken; `file` names it. A defect of the install."""

    def __init__(self, file: str, problem: str) -> None:
        super().__init__(f"prompt template {file}: {problem}")
        self.file = file
        self.problem = problem


def required_placeholders(specialist: str) -> frozenset[str]:
    """The placeholders the template of `specialist` must use."""
    return COMMON_PLACEHOLDERS | ROLE_PLACEHOLDERS[kind_of(specialist).role]


def _validated(name: SpecialistName, file: Traversable, shown: str) -> string.Template:
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PromptTemplateError(shown, "missing; reinstall active-memory") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PromptTemplateError(shown, f"cannot be read: {exc}") from None
    template = string.Template(text)
    if not template.is_valid():
        raise PromptTemplateError(
            shown, "a '$' is not followed by a placeholder name (write '$$' for a dollar)"
        )
    used = set(template.get_identifiers())
    unknown = sorted(used - KNOWN_PLACEHOLDERS)
    if unknown:
        raise PromptTemplateError(shown, f"unknown placeholder(s) {', '.join(unknown)}")
    missing = sorted(required_placeholders(name) - used)
    if missing:
        raise PromptTemplateError(shown, f"missing placeholder(s) {', '.join(missing)}")
    return template


class Prompts:
    """The four validated templates."""

    def __init__(self, templates: dict[SpecialistName, string.Template]) -> None:
        self._templates = templates

    @classmethod
    def load(cls, directory: Path | None = None) -> Prompts:
        """Read and validate every template, from the package or from `directory`."""
        root: Traversable = resources.files(__name__) if directory is None else Path(directory)
        templates: dict[SpecialistName, string.Template] = {}
        for name, kind in SPECIALISTS.items():
            file = root / kind.template
            shown = str(file) if directory is not None else f"active_memory/prompts/{kind.template}"
            templates[name] = _validated(name, file, shown)
        return cls(templates)

    def render(
        self,
        specialist: str,
        task: MaintenanceTask | DiscoveryTask,
        task_data: dict[str, Any] | None = None,
    ) -> str:
        """The prompt for `specialist` with `task` filled in (`task_data`, its `to_json()`,
        is accepted for callers that have it; the text is rendered from the model)."""
        kind = kind_of(specialist)
        if task.specialist != kind.name:
            raise ValueError(f"a {task.specialist} task cannot be rendered for {kind.name}")
        text = task_text(task)
        # The tag is a digest of the very text it frames: text inside cannot contain it.
        tag = f"task-data-{hashlib.sha256(text.encode('utf-8')).hexdigest()[:FRAME_TAG_HEX]}"
        values: dict[str, object] = {
            "specialist": kind.name,
            "task_json": f"<{tag}>\n{text}\n</{tag}>",
            "answer_example": example_answer(kind.name).model_dump_json(
                indent=2, exclude_defaults=True
            ),
            "title_max_bytes": TITLE_MAX_BYTES,
            "recommendation_max_bytes": RECOMMENDATION_MAX_BYTES,
            "reason_max_bytes": REASON_MAX_BYTES,
            "keyword_min_terms": KEYWORD_GROUP_MIN_TERMS,
            "keyword_max_terms": KEYWORD_GROUP_MAX_TERMS,
            "broad_words": ", ".join(sorted(BROAD_WORDS)),
            "lesson_count": len(task.lessons) if isinstance(task, MaintenanceTask) else 0,
            "evidence_count": len(task.evidence) if isinstance(task, DiscoveryTask) else 0,
        }
        return self._templates[kind.name].substitute(values)

    def fixed_bytes(self, specialist: str) -> int:
        """UTF-8 bytes of `specialist`'s prompt around the task (its template filled in,
        the frame lines, six digits of counts): what a bound on the whole prompt must
        leave aside for the text that is not the task."""
        kind = kind_of(specialist)
        values = {name: "" for name in KNOWN_PLACEHOLDERS}
        values.update(
            specialist=kind.name,
            task_json="<task-data-"
            + "0" * FRAME_TAG_HEX
            + ">\n\n</task-data-"
            + "0" * FRAME_TAG_HEX
            + ">",
            answer_example=example_answer(kind.name).model_dump_json(
                indent=2, exclude_defaults=True
            ),
            title_max_bytes=str(TITLE_MAX_BYTES),
            recommendation_max_bytes=str(RECOMMENDATION_MAX_BYTES),
            reason_max_bytes=str(REASON_MAX_BYTES),
            keyword_min_terms=str(KEYWORD_GROUP_MIN_TERMS),
            keyword_max_terms=str(KEYWORD_GROUP_MAX_TERMS),
            broad_words=", ".join(sorted(BROAD_WORDS)),
            lesson_count="000000",
            evidence_count="000000",
        )
        return len(self._templates[kind.name].substitute(values).encode("utf-8"))


@functools.cache
def load_prompts() -> Prompts:
    """The package's templates, validated once per process (raises `PromptTemplateError`)."""
    return Prompts.load()


def render(specialist: str, task: MaintenanceTask | DiscoveryTask) -> str:
    """The prompt for `specialist` and `task`, from the package's templates."""
    return load_prompts().render(specialist, task)
