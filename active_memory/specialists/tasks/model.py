"""What a specialist task holds: the pydantic models of its parts, in reading order.

- `MaintenanceTask`: the run's essentials, the run's evidence items that concern the
  batch's lessons (with the final texts of their executions underneath), one batch of a
  scope's lessons (`lessons`: each with its deliveries, effectiveness, adaptation
  candidates, the IDs of the evidence concerning it and, when deferred, its deferral), the
  living lessons outside the batch that may absorb a retired one (`others`), and the
  authority to check them against: current files (numbered lines), a `git ls-files`
  excerpt around them and folders (repository), or authored nodes (graph).
- `DiscoveryTask`: the run's essentials, the evidence items the specialist may cite with
  their completions underneath, the current files the evidence names (repository), the
  authored nodes involved, and the active lessons of its scope (not to be repeated).

Every model serialises deterministically: a task is identified by `digest()`, the SHA-256
of `canonical_json` (keys sorted, compact, UTF-8), and the providers key recorded answers
by the same function (`input_digest(task.to_json()) == task.digest()`).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    JsonValue,
    SerializerFunctionWrapHandler,
    field_serializer,
    model_serializer,
)

from active_memory.evidence import EvidenceItem
from active_memory.lessons import Associations, Evidence, Scope
from active_memory.specialists.tasks.model_failures import FailureGroupView, RunFailureView
from active_memory.store.candidates import Candidate
from active_memory.store.effectiveness import Effectiveness

MaintenanceName = Literal["graph_maintenance", "repository_maintenance"]
DiscoveryName = Literal["graph_discovery", "repository_discovery"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def canonical_json(value: Any) -> str:
    """Keys sorted, no whitespace, UTF-8 kept, no NaN: one spelling per value."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


class _Task(_Model):
    def to_json(self) -> dict[str, Any]:
        """The task as JSON data (what the provider gets as `input`)."""
        return self.model_dump(mode="json")

    def canonical_json(self) -> str:
        """The task's one canonical JSON spelling."""
        return canonical_json(self.to_json())

    def digest(self) -> str:
        """Lowercase hex SHA-256 of `canonical_json()`: the key of a recorded answer."""
        return hashlib.sha256(self.canonical_json().encode("utf-8")).hexdigest()


# --- the run ---------------------------------------------------------------------------


class RequestView(_Model):
    """What a person asked one execution (its `node_started` input: a turn's typed prompt,
    bounded, SPEC §3); `truncated` when cut."""

    execution: str
    node: str
    text: str
    truncated: bool = False


class RunEssentials(_Model):
    """The run a postmortem is about, in a few fields: what it was, how it ended, what was
    asked (`requests`, in order; `requests_omitted` counts the turns left out) and which
    nodes executed (a started or settled visit)."""

    run_id: str
    title: str | None
    outcome: str
    repository: str | None
    graph_name: str | None
    graph_hash: str | None
    executed_nodes: tuple[str, ...]
    requests: tuple[RequestView, ...] = ()
    requests_omitted: int = 0

    @model_serializer(mode="wrap")
    def _without_no_requests(self, handler: SerializerFunctionWrapHandler) -> Any:
        # A run whose executions carry no input reads (and digests) as before requests
        # were shown.
        data = handler(self)
        if isinstance(data, dict) and not self.requests and not self.requests_omitted:
            data.pop("requests", None)
            data.pop("requests_omitted", None)
        return data


class CompletionView(_Model):
    """An execution's final text (bounded): what the agent said when it ended."""

    execution: str
    node: str
    text: str
    truncated: bool = False


class EvidenceView(EvidenceItem):
    """An evidence item with the final texts of its executions right under it.

    `receipts_omitted`: receipts left out (`TaskLimits.receipts_max`); `completions`: each
    execution's text once, under the first item that points to it. A repeated-failure
    item (an episode) shows under each of its `failures` the calls that failed
    (`FailureGroupView`); `groups_omitted` and `not_counted_omitted` count the groups and
    the failures not counted that are past `GROUPS_SHOWN` and `NOT_COUNTED_SHOWN`; its
    completions are those of the executions its calls ran in.
    """

    failures: tuple[FailureGroupView, ...] = ()
    groups_omitted: int = 0
    not_counted_omitted: int = 0
    edited_before_resolution: tuple[str, ...] = ()
    """A repeated-failure item: the files edited between its first failure and its
    resolution (what was likely changed to make it pass)."""
    receipts_omitted: int = 0
    completions: tuple[CompletionView, ...] = ()

    left_out_when_unset: ClassVar[dict[str, Any]] = {
        **EvidenceItem.left_out_when_unset,
        "groups_omitted": 0,
        "not_counted_omitted": 0,
        "edited_before_resolution": (),
    }


# --- the code and the graph ----------------------------------------------------------------


class FileAuthority(_Model):
    """One file of the checkout: its state and (bounded) content, with line numbers.

    `status` is the citation checker's verdict (`tracked`, `untracked`, `missing`,
    `ignored`, ...; `no_checkout` when there is no checkout to read); only a `current`
    file has content, one string per line, `"N: text"`. `truncated`: the content stops
    before the end of the file, and its last entry says where and how much is left out;
    `omitted`: current but not shown, because the task's bound was spent (`reason` says
    so); `binary`: not text.
    """

    path: str
    status: str
    current: bool
    reason: str
    target: str | None = None
    size: int | None = None
    content: tuple[str, ...] | None = None
    truncated: bool = False
    omitted: bool = False
    binary: bool = False


class FolderListing(_Model):
    """A folder's direct entries among the checkout's current files (`git ls-files`,
    ignored files never listed); subfolders as `name/ (N files)`; `omitted` counted."""

    folder: str
    entries: tuple[str, ...]
    omitted: int = 0


class FolderAuthority(_Model):
    """One associated folder and whether it exists in the checkout."""

    path: str
    exists: bool


class NodeAuthority(_Model):
    """A graph node as authored: what graph lessons are checked against.

    `procedure` lists the enclosing groups from the root down (`"seq run"`, `"loop
    review_loop"`, ...): where in the run's procedure the node works. `found` is False
    when the graph is not available or has no such node (`reason` says which).
    """

    graph_hash: str
    node: str
    found: bool
    reason: str = ""
    kind: str | None = None
    worker: str | None = None
    instructions: str | None = None
    instructions_truncated: bool = False
    output: JsonValue = None
    signals: dict[str, list[str]] = {}
    procedure: tuple[str, ...] = ()
    attempts: int | None = None
    timeout_ms: int | None = None


# --- the lessons -----------------------------------------------------------------------------


class DeferralView(_Model):
    """Why and when a lesson was deferred; `age_days` counts to the end of this run."""

    reason: str
    deferred_at: str | None = None
    age_days: int | None = None


class DeliveryView(_Model):
    """One delivery of a lesson in this run: the session and the revision it received."""

    session: str
    revision: int
    at: str | None = None


class CandidateView(_Model):
    """A refused near-duplicate proposal of an earlier run: an adaptation candidate of
    the lesson it repeats, with its text similarity to that lesson (0-100)."""

    run_id: str
    specialist: str
    title: str
    recommendation: str
    associations: Associations
    similarity: float

    @classmethod
    def of(cls, candidate: Candidate) -> CandidateView:
        """The task's view of a stored candidate."""
        return cls(
            run_id=candidate.run_id,
            specialist=candidate.specialist,
            title=candidate.title,
            recommendation=candidate.recommendation,
            associations=candidate.associations,
            similarity=round(candidate.score, 1),
        )


class ChangedCodeView(_Model):
    """A citation of a stale lesson: what changed, and how: a unified diff from the text
    recorded at publish to the lines now that best match it (`diff`, all removed when
    nothing does), or, for a lesson published before texts were recorded, the cited
    lines as they are now (`now`) and a `note` saying the recorded text is unknown.
    `note` also says when the diff was cut, the text was removed, or where a text found
    in several places is. `lines_now` (and `path_now`, for a file git says was renamed)
    are what a keep or an adapt cites instead: the lines the diff compares with, or the
    nearest of several places."""

    path: str
    lines: tuple[int, int] | None
    why: str  # "lines changed", "lines gone", "found in several places", "file gone"
    path_now: str | None = None
    lines_now: tuple[int, int] | None = None
    now: tuple[str, ...] = ()
    diff: tuple[str, ...] = ()
    note: str = ""

    @model_serializer(mode="wrap")
    def _without_empty(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            for name in ("diff", "note", "path_now", "lines_now"):
                if not data.get(name):
                    data.pop(name, None)
            if "diff" in data:
                data.pop("now", None)  # the diff holds the lines now
        return data


class MovedCodeView(_Model):
    """A citation of a lesson whose recorded text is intact at other lines (`lines_now`),
    or in the file its file was renamed to (`path_now`): not a change. A keep or an
    adapt cites it there."""

    path: str
    lines: tuple[int, int] | None
    path_now: str | None = None
    lines_now: tuple[int, int] | None = None

    @model_serializer(mode="wrap")
    def _without_empty(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict) and data.get("path_now") is None:
            data.pop("path_now", None)
        return data


class SuppliedLesson(_Model):
    """A lesson maintenance must decide on, with the run's deliveries of it, the IDs of
    this run's evidence items that concern it (`run_evidence`, shown in the task's
    `evidence`), its effectiveness counters over earlier postmortems (all zero: never
    observed), its pending adaptation candidates (refused near-duplicates, oldest first)
    and, when it is deferred, why and since when (`deferral`)."""

    id: str
    revision: int
    status: str
    scope: Scope
    title: str
    recommendation: str
    associations: Associations
    evidence: Evidence
    deferral: DeferralView | None = None
    deliveries: tuple[DeliveryView, ...] = ()
    run_evidence: tuple[str, ...] = ()
    effectiveness: Effectiveness = Effectiveness()
    candidates: tuple[CandidateView, ...] = ()
    cited_code_changed: tuple[ChangedCodeView, ...] = ()
    """Its citations whose code changed since it was published, with the lines now."""
    cited_code_moved: tuple[MovedCodeView, ...] = ()
    """Its citations whose text is intact elsewhere: where it is now."""
    offered: Literal["cited code changed"] | None = None
    """Why a lesson the run did not deliver is supplied: its cited code changed
    (`manifest`'s stale offer; docs/staleness.md)."""
    run_failures: tuple[str, ...] = ()
    """IDs of the task's `failures` that concern it (its files, folders or families)."""
    failed_after_delivery: tuple[str, ...] = ()
    """Of its `run_evidence` and `run_failures`, the IDs of those that came at or after
    this run first delivered it: what it did not prevent."""

    @field_serializer("evidence", mode="wrap")
    def _without_recorded_text(
        self, value: Evidence, handler: SerializerFunctionWrapHandler
    ) -> Any:
        # The text recorded at publish is shown as a diff (`cited_code_changed`), never
        # as is: tasks of lessons with recorded text stay as they were.
        return handler(value.without_excerpts())

    @model_serializer(mode="wrap")
    def _without_unchanged(self, handler: SerializerFunctionWrapHandler) -> Any:
        # Only a stale lesson carries the field: other tasks (and their recorded-answer
        # digests) stay as they were.
        data = handler(self)
        if isinstance(data, dict):
            if not self.cited_code_changed:
                data.pop("cited_code_changed", None)
            if not self.cited_code_moved:
                data.pop("cited_code_moved", None)
            if self.offered is None:
                data.pop("offered", None)
            for name in ("run_failures", "failed_after_delivery"):
                if not data.get(name):
                    data.pop(name, None)
        return data


class LessonRef(_Model):
    """A living lesson of the scope outside the batch: a possible `canonical` target."""

    id: str
    revision: int
    scope: Scope
    title: str


class LessonDelivery(_Model):
    """When this run delivered a lesson of discovery's scope, relative to the run's
    failures (failed tool calls, timed-out or crashed executions): how many came before
    and after it, and what failed after it (`failed_after`: the families of failed calls,
    `timeout <node>` / `crash <node>`, distinct, in order of their first failure after the
    delivery). The counts are None when the delivery has no time."""

    session: str
    revision: int
    at: str | None = None
    failures_before: int | None = None
    failures_after: int | None = None
    failed_after: tuple[str, ...] = ()


class ScopeLesson(_Model):
    """An active lesson of discovery's scope: what a new proposal must not repeat, what it
    recommends, and when this run delivered it (`deliveries`, none when it did not)."""

    id: str
    revision: int
    title: str
    node: str | None = None
    recommendation: str
    associations: Associations
    deliveries: tuple[LessonDelivery, ...] = ()

    @model_serializer(mode="wrap")
    def _without_no_deliveries(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict) and not self.deliveries:
            data.pop("deliveries", None)
        return data


# --- the tasks -------------------------------------------------------------------------------


class MaintenanceTask(_Task):
    """One batch of one maintenance specialist (SPEC §6), in reading order."""

    specialist: MaintenanceName
    run: RunEssentials
    evidence: tuple[EvidenceView, ...] = ()
    failures: tuple[RunFailureView, ...] = ()
    """The run's failed tool calls that concern a lesson of the batch (repository)."""
    failures_omitted: int = 0
    """Such failures past the task's bound (`failures_total_bytes`)."""
    lessons: tuple[SuppliedLesson, ...]
    others: tuple[LessonRef, ...] = ()
    files: tuple[FileAuthority, ...] = ()
    listing: tuple[FolderListing, ...] = ()
    folders: tuple[FolderAuthority, ...] = ()
    nodes: tuple[NodeAuthority, ...] = ()

    @model_serializer(mode="wrap")
    def _without_no_failures(self, handler: SerializerFunctionWrapHandler) -> Any:
        # A batch whose lessons no failure concerns reads (and digests) as before.
        data = handler(self)
        if isinstance(data, dict):
            if not self.failures:
                data.pop("failures", None)
            if not self.failures_omitted:
                data.pop("failures_omitted", None)
        return data

    def supplied(self) -> dict[str, SuppliedLesson]:
        """The batch by lesson ID."""
        return {lesson.id: lesson for lesson in self.lessons}


class DiscoveryTask(_Task):
    """What one discovery specialist may propose from (SPEC §4, §6), in reading order."""

    specialist: DiscoveryName
    run: RunEssentials
    evidence: tuple[EvidenceView, ...]
    evidence_omitted: int = 0
    """Repeated-failure items past the task's bound (`failures_total_bytes`): not citable."""
    files: tuple[FileAuthority, ...] = ()
    listing: tuple[FolderListing, ...] = ()
    nodes: tuple[NodeAuthority, ...] = ()
    lessons: tuple[ScopeLesson, ...] = ()
    """The active lessons of this scope (those this run delivered first): a proposal that
    repeats one is refused."""
    lessons_omitted: int = 0
    """Active lessons of the scope past the bound on `lessons` (`scope_lessons_bytes`)."""
    rejected: tuple[dict[str, str], ...] = ()
    """Proposals a person rejected in this scope (manual review): not to be proposed again."""

    @model_serializer(mode="wrap")
    def _without_empty_rejected(self, handler: SerializerFunctionWrapHandler) -> Any:
        # `rejected` only when there are some: a task without any reads (and digests,
        # for recorded answers) exactly as before manual review existed; the same for
        # `lessons_omitted`.
        data = handler(self)
        if isinstance(data, dict):
            if not self.rejected:
                data.pop("rejected", None)
            if not self.lessons_omitted:
                data.pop("lessons_omitted", None)
            if not self.evidence_omitted:
                data.pop("evidence_omitted", None)
        return data

    def evidence_by_id(self) -> dict[str, EvidenceItem]:
        """The citable evidence by ID."""
        return {item.id: item for item in self.evidence}

    @property
    def completions(self) -> tuple[CompletionView, ...]:
        """Every completion shown, across the evidence items."""
        return tuple(c for item in self.evidence for c in item.completions)


Task = MaintenanceTask | DiscoveryTask
