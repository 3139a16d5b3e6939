"""One exception tree for the whole package.

`UsageError` and its children are bad input (exit code 2); everything else under
`ActiveMemoryError` is a failure at run time (exit code 1). Each error carries typed
fields a caller can act on; the message is written for a person mid-work.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


class ActiveMemoryError(Exception):
    """Root of every error this package raises on purpose."""

    exit_code: int = 1


class UsageError(ActiveMemoryError):
    """Bad input or usage: a malformed file, an invalid option, a path outside the checkout."""

    exit_code = 2


class ConfigError(UsageError):
    """The runtime JSON violates SPEC §2; `path` is the JSON path of the offending value."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.detail = message


class InvalidRecord(UsageError):
    """A file of records (JSON Lines, run record) has a bad entry; `line` is 1-based if known."""

    def __init__(self, source: str, message: str, line: int | None = None) -> None:
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {message}")
        self.source = source
        self.line = line
        self.detail = message


class RecordTooLarge(InvalidRecord):
    """A record holds a value past the bounded reader's limits: an integer that does not
    fit 64 bits, a number out of range, nesting deeper than the reader allows. No writer
    of ours or of a harness produces one: the file is corrupt or crafted."""


class EmptySession(InvalidRecord):
    """A session log holds no turn to learn from (no user turn, or nothing at all)."""


class LessonNotFound(UsageError):
    """No lesson, active or retired, has this ID."""

    def __init__(self, lesson_id: str) -> None:
        super().__init__(
            f"no lesson {lesson_id!r} in this store (see `active-memory lessons list`)"
        )
        self.lesson_id = lesson_id


class StoreError(ActiveMemoryError):
    """The lesson store cannot be used as asked."""


class StoreCorrupt(StoreError, UsageError):
    """The store file is not an Active Memory SQLite store, or fails its integrity check."""

    exit_code = 2

    def __init__(self, location: str, reason: str) -> None:
        super().__init__(f"{location}: {reason}")
        self.location = location
        self.reason = reason


class StoreTooNew(StoreError, UsageError):
    """The store was written by a newer Active Memory whose schema this one does not know."""

    exit_code = 2

    def __init__(self, location: str, found: int, supported: int) -> None:
        super().__init__(
            f"{location}: store schema version {found} is newer than this Active Memory "
            f"understands (up to {supported}); upgrade active-memory to use this store"
        )
        self.location = location
        self.found = found
        self.supported = supported


class StoreUnavailable(StoreError, UsageError):
    """The store cannot be opened or reached (missing folder permissions, server down)."""

    exit_code = 2

    def __init__(self, location: str, reason: str) -> None:
        super().__init__(f"{location}: {reason}")
        self.location = location
        self.reason = reason


class StoreMissing(StoreUnavailable):
    """No store exists at the location and the command does not create one."""

    def __init__(self, location: str) -> None:
        super().__init__(
            location,
            "no lesson store here yet; it is created by the first publish or "
            "`active-memory lessons import`, or pass --store",
        )


class StoreBusy(StoreError):
    """Other writers held the store longer than the busy timeout."""

    def __init__(self, location: str, seconds: float) -> None:
        super().__init__(
            f"{location}: the store stayed locked by other writers for {seconds:g} s; "
            "nothing was written, try again"
        )
        self.location = location
        self.seconds = seconds


class InvalidMutation(UsageError):
    """A publish asked for something no revision check can make valid (e.g. a bad canonical)."""

    def __init__(self, lesson_id: str, message: str) -> None:
        super().__init__(f"{lesson_id}: {message}")
        self.lesson_id = lesson_id
        self.detail = message


@dataclass(frozen=True, slots=True)
class Conflict:
    """One lesson whose revision moved since a mutation was decided on it."""

    lesson_id: str
    expected_revision: int
    current_revision: int | None  # None: no lesson with this ID exists
    current_status: str | None


class RevisionConflict(ActiveMemoryError):
    """A publish was refused whole because lessons changed since they were read."""

    def __init__(self, conflicts: Sequence[Conflict]) -> None:
        self.conflicts = tuple(conflicts)
        parts = []
        for c in self.conflicts:
            if c.current_revision is None:
                now = "does not exist"
            elif c.current_status == "retired":
                now = f"was retired at r{c.current_revision}"
            else:
                now = f"is at r{c.current_revision}"
            parts.append(f"{c.lesson_id} (decided on r{c.expected_revision}, {now})")
        super().__init__(
            "nothing published: lessons changed since they were read: " + ", ".join(parts)
        )


class DeadlineExceeded(ActiveMemoryError):
    """A shared deadline ran out before the work finished."""

    def __init__(self, what: str, seconds: float) -> None:
        super().__init__(f"{what} did not finish within {seconds:g} s")
        self.what = what
        self.seconds = seconds


class SpecialistFailed(ActiveMemoryError):
    """A specialist's provider session produced no usable answer.

    `kind` says why, for reports and tests: `invalid_answer` (failed validation after the
    one repair turn), `empty_answer`, `not_json`, `refusal`, `provider` (see
    `ProviderError`), `credentials`, `harness` (a CLI exited badly), `missing_recording`,
    `malformed_exchange`, `timed_out`, `unsafe_answer` (refused by a safety rule while
    its schema failed too: no repair turn, only the rules named). `errors` holds the last
    validation error lines.
    """

    def __init__(
        self,
        specialist: str,
        kind: str,
        detail: str,
        *,
        provider: str | None = None,
        model: str | None = None,
        errors: Sequence[str] = (),
    ) -> None:
        super().__init__(f"{specialist}: {detail}")
        self.specialist = specialist
        self.kind = kind
        self.detail = detail
        self.provider = provider
        self.model = model
        self.errors = tuple(errors)


class ProviderError(SpecialistFailed):
    """The provider refused or failed a request for good (after any retries).

    `status_code` is the HTTP status (None for a connection failure or a CLI);
    `body` is a short excerpt of the response with every secret masked.
    """

    def __init__(
        self,
        specialist: str,
        detail: str,
        *,
        provider: str,
        model: str,
        status_code: int | None = None,
        body: str = "",
    ) -> None:
        super().__init__(specialist, "provider", detail, provider=provider, model=model)
        self.status_code = status_code
        self.body = body


class SpecialistTimedOut(SpecialistFailed):
    """The specialist's deadline passed before its provider answered."""

    def __init__(
        self, specialist: str, seconds: float, *, provider: str | None, model: str | None
    ) -> None:
        super().__init__(
            specialist,
            "timed_out",
            f"no answer before the deadline ({seconds:g} s left when the turn began)",
            provider=provider,
            model=model,
        )
        self.seconds = seconds


class ProposalNotPending(UsageError):
    """A decision on a review proposal that does not exist or was already decided."""

    def __init__(self, seq: int, state: str | None) -> None:
        where = "does not exist" if state is None else f"was already {state}"
        super().__init__(f"proposal {seq} {where}")
        self.seq = seq
        self.state = state


class QueueEntryNotFound(UsageError):
    """No postmortem queue entry has this ID."""

    def __init__(self, entry_id: int) -> None:
        super().__init__(f"no queue entry {entry_id} in this store (see `active-memory queue`)")
        self.entry_id = entry_id
