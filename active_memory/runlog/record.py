"""The run record `active-memory/run@1` (SPEC §3): models, checks and loading.

Public names:

- `RunRecord`: one finished run (identity, outcome, `seeded`, source, repository, graph,
  runtime, `events`, `completions`, `receipts`, `tool_failures`, `deliveries`). Build one with
  `RunRecord.model_validate(data)` or read a file with `load_run_record(path)`;
  `parse_run_record(data, source)` validates decoded JSON with the same clear errors.
  `RunRecord.visits()` folds the event log into one `Visit` per execution.
- Events (`RunEvent`, tagged by `kind`): `RunStarted`, `NodeStarted`, `NodeCompleted`,
  `ExecutionVoided`, `SafeLog`, `TokenUsageObserved`, `ForceStopRequested`, `Terminal`,
  each wrapped in a `StoredEvent` (`sequence`, optional `at`, `event`).
- Outcomes (`Outcome`, tagged by `status`): `VerifiedOutcome`, `VerifierOutcome`
  (`signals`), `ErrorOutcome` (`code` in timeout/crash/malformed/refusal, `reason`).
- `ExecutionRef`, `Occurrence` (`node`, `mapIndices`), `NodeCompletion`, `TerminalResult`.
- `Source`, `Repository`, `GraphRef`, `Receipt`, `Delivery`, `ToolFailure` (with its
  `ResolvedBy`; tool_failures.py holds the bounds).
- `MAX_RECEIPTS` (512), `RECEIPTS_KEPT_FIRST` (256): past the cap, the first 256 and the
  latest 256 receipts survive; `RunRecord.receipts_dropped` counts the rest.
- `MAX_TOOL_FAILURES` (256): past the cap, the first 128 and the latest 128 tool failures
  survive; `RunRecord.tool_failures_dropped` counts the rest.
- `RUN_SCHEMA` (`"active-memory/run@1"`).

Events are kept sorted by `sequence` whatever their order in the file; receipt paths are
stored root-relative to `repository.checkout` and a path outside it is dropped. Unknown
fields are kept everywhere (`extra="allow"`), as SPEC §3 lets formats grow.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    ValidationError,
    field_validator,
    model_validator,
)

from active_memory.errors import InvalidRecord
from active_memory.runlog import receipts as _receipts
from active_memory.runlog import tool_failures as _tool_failures
from active_memory.runlog.graph import Graph, GraphIndex
from active_memory.runlog.receipts import Receipt as Receipt
from active_memory.runlog.receipts import Timestamp
from active_memory.runlog.tool_failures import ResolvedBy as ResolvedBy
from active_memory.runlog.tool_failures import ToolFailure as ToolFailure
from active_memory.validation import describe_validation_error

RUN_SCHEMA = "active-memory/run@1"
MAX_RECEIPTS = _receipts.MAX_RECEIPTS
RECEIPTS_KEPT_FIRST = _receipts.KEPT_FIRST
MAX_TOOL_FAILURES = _tool_failures.MAX_TOOL_FAILURES


class _Model(BaseModel):
    model_config = ConfigDict(
        extra="allow", populate_by_name=True, coerce_numbers_to_str=True, frozen=True
    )


SAFE_IDENTIFIER = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+=-]{0,199}")
"""The alphabet of a run ID and a delivery's session ID: letters, digits and `._:@+=-`,
at most 200 characters. They are identifiers that reach prompts, reports and file names,
so nothing else (spaces, newlines, markup, quotes) may ride in them (issue 17)."""


def _safe_identifier(value: str) -> str:
    if not SAFE_IDENTIFIER.fullmatch(value):
        shown = value if len(value) <= 40 else value[:40] + "…"
        raise ValueError(
            f"{shown!r} is not a safe identifier: use letters, digits and ._:@+=- only "
            "(at most 200 characters, starting with a letter or digit)"
        )
    return value


SafeIdentifier = Annotated[str, AfterValidator(_safe_identifier)]


# --- references and outcomes -----------------------------------------------------


class ExecutionRef(_Model):
    """Which execution of which node instance of which run."""

    run_id: str | None = Field(default=None, alias="runId")
    node: str
    node_instance: str | None = Field(default=None, alias="nodeInstance")
    execution: str


class Occurrence(_Model):
    """Where in the graph structure an execution ran: its node and map item indices."""

    node: str
    map_indices: tuple[Annotated[int, Field(ge=0)], ...] = Field(default=(), alias="mapIndices")


class VerifiedOutcome(_Model):
    """A step (or verifier) that finished normally."""

    status: Literal["verified"]
    output: Any = None


class VerifierOutcome(_Model):
    """A verifier's verdict: `signals` such as `{"verdict": "rejected"}`."""

    status: Literal["verifier"]
    signals: dict[str, str] = Field(default_factory=dict)
    output: Any = None


class ErrorOutcome(_Model):
    """A worker error on zeroshot's closed error channel."""

    status: Literal["error"]
    code: Literal["timeout", "crash", "malformed", "refusal"]
    reason: str


Outcome = Annotated[VerifiedOutcome | VerifierOutcome | ErrorOutcome, Field(discriminator="status")]


class NodeCompletion(_Model):
    """The settled outcome of one execution."""

    reference: ExecutionRef
    outcome: Outcome


class TerminalResult(_Model):
    """How the run's main graph settled."""

    status: str
    output: Any = None


# --- events ----------------------------------------------------------------------


class RunStarted(_Model):
    """The run began."""

    kind: Literal["run_started"]


class NodeStarted(_Model):
    """An execution of an executable node started."""

    kind: Literal["node_started"]
    reference: ExecutionRef
    occurrence: Occurrence
    attempt: Annotated[int, Field(ge=1)] = 1
    input: Any = None


class NodeCompleted(_Model):
    """An execution settled with an outcome."""

    kind: Literal["node_completed"]
    completion: NodeCompletion


class ExecutionVoided(_Model):
    """An execution was cancelled without an outcome (`parallel_join`, `map_terminal`)."""

    kind: Literal["execution_voided"]
    reference: ExecutionRef
    reason: str


class SafeLog(_Model):
    """One redacted log line of an execution (or of the run)."""

    kind: Literal["safe_log"]
    execution: str | None = None
    timestamp: int | None = None
    stream: str | None = None
    line: str = ""


class TokenUsageObserved(_Model):
    """Token usage reported for an execution."""

    kind: Literal["token_usage_observed"]
    execution: str
    usage: Any = None


class ForceStopRequested(_Model):
    """Someone asked the run to stop."""

    kind: Literal["force_stop_requested"]


class Terminal(_Model):
    """The run's main graph settled."""

    kind: Literal["terminal"]
    result: TerminalResult


RunEvent = Annotated[
    RunStarted
    | NodeStarted
    | NodeCompleted
    | ExecutionVoided
    | SafeLog
    | TokenUsageObserved
    | ForceStopRequested
    | Terminal,
    Field(discriminator="kind"),
]


class StoredEvent(_Model):
    """One ledger entry: its position, optional wall-clock time, and the event."""

    sequence: Annotated[int, Field(ge=0)]
    at: Timestamp | None = None
    event: RunEvent


# --- the record ------------------------------------------------------------------


class Source(_Model):
    """What the run worked on, as zeroshot resolved it."""

    repository: str | None = None
    branch: str | None = None
    revision: str | None = None


class Repository(_Model):
    """The repository identity lessons are scoped to, and the local checkout."""

    namespace: str
    checkout: str | None = None
    remote: str | None = None
    aliases: list[str] = Field(default_factory=list)


class GraphRef(_Model):
    """The graph that ran: its name, hash and (optionally) compiled IR."""

    name: str | None = None
    hash: str | None = None
    ir: Graph | None = None

    @field_validator("ir")
    @classmethod
    def _unique_names(cls, ir: Graph | None) -> Graph | None:
        duplicates = GraphIndex(ir).duplicates if ir is not None else ()
        if duplicates:
            raise ValueError(
                f"node name {duplicates[0]!r} is used more than once; node names are unique"
                " in a graph"
            )
        return ir


class Delivery(_Model):
    """One lesson card delivered to one provider session."""

    session: SafeIdentifier
    lesson: str
    revision: Annotated[int, Field(ge=1)]
    at: Timestamp | None = None


@dataclass(frozen=True, slots=True)
class Visit:
    """One execution folded from the event log.

    `outcome` is None while the execution is unsettled or when it was voided (`voided`
    then holds the reason). `started`/`settled` are event sequence numbers.
    """

    execution: str
    node: str
    map_indices: tuple[int, ...]
    attempt: int
    started: int | None
    settled: int | None
    outcome: VerifiedOutcome | VerifierOutcome | ErrorOutcome | None
    voided: str | None
    started_at: datetime | None = None


class RunRecord(_Model):
    """One finished run, as handed to the postmortem (SPEC §3)."""

    schema_: Literal["active-memory/run@1"] = Field(alias="schema")
    run_id: SafeIdentifier
    title: str | None = None
    outcome: Literal["succeeded", "failed", "cancelled"]
    seeded: StrictBool = False
    source: Source | None = None
    repository: Repository | None = None
    graph: GraphRef | None = None
    runtime: dict[str, Any] | None = None
    events: tuple[StoredEvent, ...] = ()
    completions: dict[str, str] = Field(default_factory=dict)
    receipts: tuple[Receipt, ...] = ()
    receipts_dropped: Annotated[int, Field(ge=0)] = 0
    tool_failures: tuple[ToolFailure, ...] = ()
    tool_failures_dropped: Annotated[int, Field(ge=0)] = 0
    # None means "no delivery evidence", which is not the same as "nothing delivered".
    deliveries: tuple[Delivery, ...] | None = None

    @field_validator("events")
    @classmethod
    def _sorted_events(cls, events: tuple[StoredEvent, ...]) -> tuple[StoredEvent, ...]:
        seen: dict[int, int] = {}
        for index, stored in enumerate(events):
            if stored.sequence in seen:
                raise ValueError(
                    f"duplicate sequence {stored.sequence} at events[{seen[stored.sequence]}]"
                    f" and events[{index}]"
                )
            seen[stored.sequence] = index
        return tuple(sorted(events, key=lambda stored: stored.sequence))

    @model_validator(mode="after")
    def _bounded_receipts(self) -> RunRecord:
        checkout = self.repository.checkout if self.repository else None
        kept, dropped = _receipts.normalize(self.receipts, checkout)
        if kept != self.receipts or dropped:
            # Frozen model: write through object.__setattr__ once, at construction.
            object.__setattr__(self, "receipts", kept)
            object.__setattr__(self, "receipts_dropped", self.receipts_dropped + dropped)
        failures, lost = _tool_failures.normalize(self.tool_failures, checkout)
        if failures != self.tool_failures or lost:
            object.__setattr__(self, "tool_failures", failures)
            object.__setattr__(self, "tool_failures_dropped", self.tool_failures_dropped + lost)
        return self

    def visits(self) -> list[Visit]:
        """One `Visit` per execution, in order of first appearance in the log."""
        found: dict[str, dict[str, Any]] = {}
        for stored in self.events:
            event = stored.event
            if isinstance(event, NodeStarted):
                entry = found.setdefault(event.reference.execution, {})
                entry.update(
                    node=event.reference.node,
                    map_indices=event.occurrence.map_indices,
                    attempt=event.attempt,
                    started=stored.sequence,
                    started_at=stored.at,
                )
            elif isinstance(event, NodeCompleted):
                ref = event.completion.reference
                entry = found.setdefault(ref.execution, {})
                entry.setdefault("node", ref.node)
                entry.update(settled=stored.sequence, outcome=event.completion.outcome)
            elif isinstance(event, ExecutionVoided):
                entry = found.setdefault(event.reference.execution, {})
                entry.setdefault("node", event.reference.node)
                entry.update(settled=stored.sequence, voided=event.reason, outcome=None)
        return [
            Visit(
                execution=execution,
                node=entry["node"],
                map_indices=tuple(entry.get("map_indices", ())),
                attempt=entry.get("attempt", 1),
                started=entry.get("started"),
                settled=entry.get("settled"),
                outcome=entry.get("outcome"),
                voided=entry.get("voided"),
                started_at=entry.get("started_at"),
            )
            for execution, entry in found.items()
        ]


# --- loading ---------------------------------------------------------------------

_SCHEMA_PATTERN = re.compile(r"^active-memory/run@(\d+)$")


def load_run_record(path: str | Path) -> RunRecord:
    """Read and validate a run record file; raise `InvalidRecord` naming what is wrong.

    A JSON Lines file (one document per line: a harness's session log) is not a run
    record: the error says how to build one from it."""
    from active_memory.errors import UsageError
    from active_memory.reader import load_json

    try:
        data = load_json(path, "run record")
    except UsageError as exc:
        if "Extra data" not in str(exc):
            raise
        raise InvalidRecord(
            str(path),
            "holds one JSON document per line (a session log?), not a run record; build "
            f"one with `active-memory import claude|codex|pi|gemini|copilot {path} -o "
            "run.json`, then use run.json",
        ) from None
    return parse_run_record(data, str(path))


def parse_run_record(data: Any, source: str = "<run record>") -> RunRecord:
    """Validate decoded JSON as a run record, with errors that name the JSON path."""
    if not isinstance(data, dict):
        raise InvalidRecord(source, f"expected a JSON object, found {_json_type(data)}")
    schema = data.get("schema")
    if schema != RUN_SCHEMA:
        raise InvalidRecord(source, _schema_problem(schema))
    try:
        return RunRecord.model_validate(data)
    except ValidationError as exc:
        raise InvalidRecord(source, describe_validation_error(exc, data)) from None
    except RecursionError:
        raise InvalidRecord(source, "the record is nested too deeply") from None


def _schema_problem(schema: Any) -> str:
    if schema is None:
        return f"schema: required field missing (expected {RUN_SCHEMA!r})"
    match = _SCHEMA_PATTERN.match(schema) if isinstance(schema, str) else None
    if match and int(match.group(1)) > 1:
        return (
            f"schema: {schema} is newer than this Active Memory understands "
            f"({RUN_SCHEMA}); upgrade active-memory to read it"
        )
    return f"schema: expected {RUN_SCHEMA!r}, found {json.dumps(schema)[:60]}"


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "null"
