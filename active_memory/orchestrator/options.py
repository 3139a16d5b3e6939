"""The postmortem's tunables and its progress events."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from active_memory.quality.duplicates import DuplicateLimits
from active_memory.specialists.tasks import DEFAULT_BATCH_BYTES, DEFAULT_LIMITS, TaskLimits


@dataclass(frozen=True, slots=True)
class PostmortemLimits:
    """Bounds of one postmortem; the deadline itself is the config's `timeoutMs`.

    - `batch_bytes`: serialized size bound of one maintenance batch.
    - `batch_concurrency`: batches of one specialist asked at once (its own session).
    - `publish_seconds`: the publish's own bound (it runs shielded, after the deadline's
      task group; the store's busy timeout also applies).
    - `reconcile_rounds`: how many times a revision conflict is refreshed and decided
      again (within the deadline) before it is reported.
    - `task`: what a specialist task may contain (`TaskLimits`).
    - `duplicates`: when a discovery proposal repeats a living lesson (`DuplicateLimits`).
    """

    batch_bytes: int = DEFAULT_BATCH_BYTES
    batch_concurrency: int = 1
    publish_seconds: float = 10.0
    reconcile_rounds: int = 3
    task: TaskLimits = field(default_factory=lambda: DEFAULT_LIMITS)
    duplicates: DuplicateLimits = field(default_factory=DuplicateLimits)


@dataclass(frozen=True, slots=True)
class ProgressEvent:
    """One step of a postmortem, for a progress display (stderr), never for logic.

    `stage`: `started`, `batch` (one maintenance batch answered), `finished` (a
    specialist ended; `detail` is its status), `publishing`, `published`, `conflict`.
    `specialist` is None for the postmortem as a whole.
    """

    stage: str
    specialist: str | None = None
    detail: str = ""
    done: int | None = None
    total: int | None = None


Progress = Callable[[ProgressEvent], None]
"""A progress callback; it must not block (it runs on the event loop)."""
