"""The bounds on what a specialist receives, and the batches a maintenance manifest is cut
into so that each batch's prompt stays within its bound (SPEC §6).

- `TaskLimits`: the size bounds of one task's parts (files, completions, listings, ...);
- `DEFAULT_BATCH_BYTES`: the default bound on one whole rendered prompt;
- `cut_by_serialized_size`: the manifest in complete batches whose lessons, serialized as
  the task shows them, take at most `LESSON_SHARE` of that bound (the postmortem's and
  `init`'s one rule);
- `cut_utf8`: a text cut to a byte bound at a character boundary.

A lesson's size is the UTF-8 length of its JSON as a task shows it (`serialized_size`).
Lessons are taken in manifest order and a batch is closed before the lesson that would
take it past the bound, so no lesson is ever cut. A lesson larger than the bound on its
own is a batch of its own: it is never dropped (maintenance must decide every supplied
lesson). Every lesson is in exactly one batch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from active_memory.lessons import Lesson


@dataclass(frozen=True, slots=True)
class TaskLimits:
    """Size bounds of what a task carries (UTF-8 bytes of text)."""

    file_bytes: int = 16 * 1024
    """Bytes of one file's text read for a task; the rest is cut and the cut marked."""
    files_total_bytes: int = 64 * 1024
    """Rendered bytes (numbered lines as JSON) of all file contents of one task; files past
    it are `omitted` (listed with their state, no content, the reason said)."""
    completion_bytes: int = 4 * 1024
    """One agent completion text."""
    completions_total_bytes: int = 32 * 1024
    """All completion texts of one task."""
    instructions_bytes: int = 8 * 1024
    """One node's authored instructions."""
    others_max: int = 200
    """Living lessons outside the batch listed as possible `canonical` targets."""
    receipts_max: int = 64
    """Receipts shown per evidence item (the first and the latest half); the rest counted."""
    listing_per_folder: int = 60
    """Entries of one folder's `git ls-files` excerpt; the rest counted."""
    listing_folders_max: int = 12
    """Folders listed per task (those of the most relevant files first)."""
    scope_lessons_max: int = 100
    """Active lessons of its scope shown to discovery (card, associations, deliveries)."""
    scope_lessons_bytes: int = 24 * 1024
    """Rendered bytes of those lessons: the ones this run delivered first, then the most
    related; the rest counted (`lessons_omitted`)."""
    failures_total_bytes: int = 32 * 1024
    """Rendered bytes of the run's failed tool calls one task shows: discovery's
    repeated-failure items (each first without its calls, the costliest episodes first),
    then their calls; maintenance's failures concerning its lessons, then their calls.
    Identical calls are shown once with their count; the rest is counted."""
    request_bytes: int = 4 * 1024
    """One execution's input as a task shows it (a turn's typed prompt)."""
    requests_total_bytes: int = 12 * 1024
    """All inputs of one task: the first and then the latest that fit; the rest counted."""


DEFAULT_LIMITS = TaskLimits()


def cut_utf8(text: str, limit: int) -> tuple[str, bool]:
    """`text` cut to at most `limit` UTF-8 bytes at a character boundary, and whether it was."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text, False
    return data[:limit].decode("utf-8", errors="ignore"), True


# --- batches of a manifest ----------------------------------------------------------------

DEFAULT_BATCH_BYTES = 96_000
"""The default bound on what the model receives for one batch (the whole rendered prompt,
about 24k tokens): `LESSON_SHARE` of it for the lessons (about 80 typical cards), the
rest for the run's evidence, the files and the prompt's own text."""

LESSON_SHARE = 0.5
"""The part of a batch bound its lessons (serialized as the task shows them) may take;
the rest is for the evidence, the files, the names of the other lessons and the prompt's
own text."""

SUPPLIED_EXTRA_BYTES = 400
"""What a supplied lesson adds to its own JSON in a maintenance task, rendered: its
deliveries, effectiveness counters, run evidence IDs, candidates, deferral (typical: a
lesson delivered once with one evidence item concerning it adds about 320 bytes)."""

_T = TypeVar("_T")


def serialized_size(lesson: Lesson) -> int:
    """Bytes a supplied lesson takes in a maintenance task: its compact JSON without the
    text recorded at publish (a task never shows it), plus `SUPPLIED_EXTRA_BYTES`."""
    evidence = lesson.evidence.without_excerpts()
    if evidence is not lesson.evidence:
        lesson = lesson.model_copy(update={"evidence": evidence})
    return len(lesson.model_dump_json().encode("utf-8")) + SUPPLIED_EXTRA_BYTES


def lesson_bytes(batch_bytes: int) -> int:
    """The bytes a batch's lessons may take under a bound of `batch_bytes` on its prompt."""
    if batch_bytes < 1:
        raise ValueError(f"the batch bound must be at least 1 byte, not {batch_bytes}")
    return max(1, int(batch_bytes * LESSON_SHARE))


def cut_batches(items: Sequence[_T], max_bytes: int, size: Callable[[_T], int]) -> list[list[_T]]:
    """`items` in order, cut into consecutive batches of total `size` ≤ `max_bytes`,
    except that an item bigger than the bound alone makes a batch of one."""
    if max_bytes < 1:
        raise ValueError(f"the batch bound must be at least 1 byte, not {max_bytes}")
    batches: list[list[_T]] = []
    current: list[_T] = []
    used = 0
    for item in items:
        cost = size(item)
        if current and used + cost > max_bytes:
            batches.append(current)
            current, used = [], 0
        current.append(item)
        used += cost
    if current:
        batches.append(current)
    return batches


def cut_by_serialized_size(
    lessons: Sequence[Lesson], batch_bytes: int = DEFAULT_BATCH_BYTES
) -> list[list[Lesson]]:
    """SPEC §6: a maintenance manifest in complete batches bounded by serialized size, the
    one rule the postmortem and `init` cut by. `batch_bytes` bounds a batch's whole
    prompt; its lessons, serialized as the task shows them (`serialized_size`), take at
    most `lesson_bytes(batch_bytes)` of it."""
    return cut_batches(lessons, lesson_bytes(batch_bytes), serialized_size)
