"""One sequence, one variant: import, postmortem and publish each session, and replay each
next session's calls through recall, in the order the sessions happened.

The time model: sessions are taken in order of their first logged moment. Before a
session is replayed, every earlier session that had *ended* by the time it started is
imported and its postmortem published (in order of ending), and nothing else: sessions
overlap, and a session sees only what was published before it started (its first call
pins the store's generation; later publishes reach only later sessions). A session is
replayed before its own postmortem, so its record joins the cards it received, and
maintenance sees them. The postmortem of a session that no later session could see is
not run: it could not change anything measured.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from active_memory.evidence.model import evidence_id
from active_memory.recall.signals import extract_signals
from active_memory.recall.types import ToolCall
from active_memory.runlog.importers.claude import import_transcript
from active_memory.runlog.importers.codex import import_rollout
from learning import steps
from learning.answers import Recorder
from learning.calls import Call, mark_failures, session_calls
from learning.contexts import session_contexts
from learning.outcome import (
    LessonKey,
    Recurrence,
    classify,
    concerned_families,
    concerns_nothing_after,
)
from learning.replay import Delivery, Replayed, replay
from learning.sequence import PreparedSession, Sequence, checkout_commit, prepare

RECORD_COMMAND = ".venv/bin/python bench/learning_bench.py --record"


class MissingRecording(Exception):
    """A task of the replay lane has no recorded answer."""


class NeedAnswers(Exception):
    """A record pass wrote tasks that need a person's answer."""


@dataclass(frozen=True)
class Lane:
    """Where the specialists' answers come from."""

    name: str
    """`replay`, `api`, `claude`, `codex` or `exchange`."""
    exchange_dir: Path | None = None
    model: str | None = None
    timeout_ms: int = 120_000

    def options(self, sequence: Sequence, work: Path) -> list[str]:
        """The postmortem's lane options (a sequence without recordings replays an empty
        file, so that its first task fails by name)."""
        if self.name == "replay":
            recordings = sequence.recordings
            if not recordings.exists():
                recordings = work / "no-recordings.json"
                recordings.write_text('{"schema": "active-memory/recordings@1"}\n', "utf-8")
            return ["--replay", str(recordings)]
        extra = ["--exchange-dir", str(self.exchange_dir)] if self.exchange_dir else []
        return ["--lane", self.name, *extra]


@dataclass
class SessionResult:
    """What one session received, and what its postmortem did."""

    session: PreparedSession
    calls: list[Call]
    replayed: Replayed
    failures: list[dict[str, Any]]
    unmatched: list[str]
    recurrences: list[Recurrence] = field(default_factory=list)
    not_learnable: list[str] = field(default_factory=list)
    """Families that failed here and earlier, but only in sessions still running then."""
    nothing_bytes: int = 0
    nothing_cards: list[LessonKey] = field(default_factory=list)
    postmortem: dict[str, Any] | None = None
    prompts: list[datetime] = field(default_factory=list)
    """The session's typed prompts (contexts.py)."""
    per_prompt: list[str] = field(default_factory=list)
    """Families that recur here which a snapshot per typed prompt could have reached and
    the snapshot per session did not (see `_reachable_by_a_prompt`)."""


@dataclass
class VariantResult:
    """A sequence under one variant."""

    sequence: str
    with_failures: bool
    sessions: list[SessionResult]
    lessons: dict[LessonKey, dict[str, Any]]
    problems: list[str]


def _record_failures(session: PreparedSession) -> list[dict[str, Any]]:
    importer = import_transcript if session.spec.harness == "claude" else import_rollout
    result = importer(session.log)
    if not result.runs:
        return []
    failures = result.runs[0].record.get("tool_failures") or []
    return [f for f in failures if isinstance(f, dict)]


def run_variant(
    sequence: Sequence,
    *,
    with_failures: bool,
    lane: Lane,
    work: Path,
    recorder: Recorder | None = None,
) -> VariantResult:
    """Run the sequence under one variant (`with_failures`: the records keep their
    `tool_failures`); `recorder` turns the postmortems into record passes."""
    variant = "with" if with_failures else "without"
    state, store = work / "state", work / "lessons.sqlite3"
    env = steps.environment(state)
    recall_env = {"ZEROSHOT_STATE_DIR": str(state), "ACTIVE_MEMORY_STORE": str(store),
                  "HOME": str(work / "home")}  # fmt: skip
    prepared = prepare(sequence, work)
    results: dict[str, SessionResult] = {}
    lessons: dict[LessonKey, dict[str, Any]] = {}
    problems: list[str] = []
    published: list[PreparedSession] = []
    waiting: list[PreparedSession] = []
    if sequence.spec.lessons:
        seed = sequence.folder / sequence.spec.lessons
        steps.run_cli(["lessons", "import", str(seed), "--store", str(store)], env)
        for lesson in steps.export_lessons(store, env):
            lessons[(str(lesson["id"]), int(lesson["revision"]))] = lesson
    for index, session in enumerate(prepared):
        due = sorted((s for s in waiting if s.ended <= session.started), key=lambda s: s.ended)
        for earlier in due:
            waiting.remove(earlier)
            results[earlier.key].postmortem = _postmortem(
                sequence, earlier, variant, with_failures, lane, work, env, store, recorder,
                problems,
            )  # fmt: skip
            published.append(earlier)
            for lesson in steps.export_lessons(store, env):
                lessons[(str(lesson["id"]), int(lesson["revision"]))] = lesson
        session_id, calls = session_calls(session.spec.harness, session.log, session.checkout)
        failures = _record_failures(session)
        unmatched = mark_failures(calls, failures)
        contexts = session_contexts(session.spec.harness, session.log)
        replayed = replay(session.spec.harness, session_id, session.log, calls, recall_env,
                          contexts)  # fmt: skip
        problems.extend(f"{sequence.name} {session.key}: {e}" for e in replayed.errors)
        results[session.key] = SessionResult(session, calls, replayed, failures, unmatched,
                                             prompts=contexts.prompts)  # fmt: skip
        if any(later.started >= session.ended for later in prepared[index + 1 :]):
            waiting.append(session)
    ordered = [results[s.key] for s in prepared]
    _measure(ordered, published_before(prepared), lessons)
    return VariantResult(sequence.name, with_failures, ordered, lessons, problems)


def published_before(prepared: list[PreparedSession]) -> dict[str, list[str]]:
    """For each session, the sessions whose postmortem it could see (ended before it began)."""
    return {
        s.key: [o.key for o in prepared if o is not s and o.ended <= s.started] for s in prepared
    }


def _postmortem(
    sequence: Sequence,
    session: PreparedSession,
    variant: str,
    with_failures: bool,
    lane: Lane,
    work: Path,
    env: dict[str, str],
    store: Path,
    recorder: Recorder | None,
    problems: list[str],
) -> dict[str, Any]:
    checkout_commit(session.checkout, session.spec.end)
    record = steps.import_session(
        session.spec.harness, session.log, work / "runs" / f"{session.key}.run.json", env
    )
    if not with_failures:
        steps.drop_tool_failures(record)
    runtime = steps.write_runtime(
        record, work / "runs" / f"{session.key}.runtime.json", model=lane.model,
        timeout_ms=lane.timeout_ms,
    )  # fmt: skip
    arguments = steps.postmortem_arguments(record, runtime, session.checkout, store)
    if recorder is not None:
        before = len(recorder.missing)
        steps.record_pass(arguments, env, recorder, f"{session.key}.{variant}")
        if len(recorder.missing) > before:
            raise NeedAnswers(session.key)
        recorder.store.write()
    report = steps.postmortem(arguments, lane.options(sequence, work), env)
    _check(report, sequence, session, variant, lane, problems)
    return report


_DIGEST = re.compile(r"input digest ([0-9a-f]{64})")


def _check(
    report: dict[str, Any],
    sequence: Sequence,
    session: PreparedSession,
    variant: str,
    lane: Lane,
    problems: list[str],
) -> None:
    where = (
        f"{sequence.name}, session {session.key} ({session.session_id}), {variant} tool_failures"
    )
    for name, entry in (report.get("specialists") or {}).items():
        status, reason = entry.get("status"), str(entry.get("reason") or "")
        if status not in ("failed", "timed_out"):
            for rejected in entry.get("rejected") or []:
                problems.append(f"{where}: {name} proposal refused: {rejected.get('reason')}")
            continue
        missing = "missing_recording" in reason or "no recorded answer" in reason
        if lane.name == "replay" and missing:
            digest = _DIGEST.search(reason)
            raise MissingRecording(
                f"no recorded answer for the {name} task of {where} "
                f"(digest {digest.group(1) if digest else '?'}) in {sequence.recordings}; "
                f"re-record with: {RECORD_COMMAND} --sequence {sequence.name}"
            )
        if lane.name == "replay":
            raise steps.StepFailed(f"{where}: {name} {status}: {reason}")
        problems.append(f"{where}: {name} {status}: {reason}")


def _measure(
    results: list[SessionResult],
    visible: dict[str, list[str]],
    lessons: dict[LessonKey, dict[str, Any]],
) -> None:
    by_key = {r.session.key: r for r in results}
    families = {c.family for r in results for c in r.calls}
    families |= {str(f.get("family")) for r in results for f in r.failures}
    evidence_families = {
        evidence_id(r.session.run_id, "tool_failures", family=str(f.get("family"))): str(
            f.get("family")
        )
        for r in results
        for f in r.failures
    }
    cache: dict[LessonKey, frozenset[str]] = {}

    def concerns(key: LessonKey) -> frozenset[str]:
        if key not in cache:
            lesson = lessons.get(key)
            cache[key] = (
                concerned_families(lesson, families, evidence_families) if lesson else frozenset()
            )
        return cache[key]

    for result in results:
        failed_here = {c.failure_family for c in result.calls if c.failed and c.failure_family}
        seen = {
            str(f.get("family")) for other in visible[result.session.key]
            for f in by_key[other].failures
        }  # fmt: skip
        earlier = {
            str(f.get("family"))
            for other in results
            if other.session.started < result.session.started
            for f in other.failures
        }
        for family in sorted(failed_here):
            if family in seen:
                result.recurrences.append(
                    classify(result.session.key, result.calls, family,
                             result.replayed.deliveries, concerns, result.replayed.epochs)
                )  # fmt: skip
            elif family in earlier:
                result.not_learnable.append(family)
        result.per_prompt = _reachable_by_a_prompt(result, results, failed_here)
        root = str(result.session.checkout)
        harness = result.session.spec.harness

        def touched(call: Call, root: str = root, harness: str = harness) -> list[str]:
            tool_call = ToolCall(harness, call.tool, call.tool_input, cwd=call.cwd)
            return list(extract_signals(tool_call, root).paths)

        for delivery in result.replayed.deliveries:
            key = (delivery.lesson, delivery.revision)
            if concerns_nothing_after(
                delivery, result.calls, concerns(key), lessons.get(key, {}), touched
            ):
                result.nothing_bytes += delivery.size
                result.nothing_cards.append(key)


def _reachable_by_a_prompt(
    result: SessionResult, results: list[SessionResult], failed_here: set[str]
) -> list[str]:
    """The measure of the long-session decision (docs/recall.md, "Long sessions"): the
    families failing here whose lesson a snapshot taken at each typed prompt could have
    delivered in time and the one snapshot per session could not, because the earlier
    session that failed on them ended while this one ran, before a prompt typed before
    this session's first failure of the family. An upper bound: whether that session's
    postmortem writes the lesson, and the lesson's card reaches a call in time, is not
    asked (its postmortem is not run when no session starts after it)."""
    reachable = []
    for family in sorted(failed_here):
        first = min(c.at for c in result.calls if c.failed and c.failure_family == family)
        ends = [
            other.session.ended for other in results
            if other is not result and other.session.started < result.session.started
            and other.session.ended > result.session.started
            and any(str(f.get("family")) == family for f in other.failures)
        ]  # fmt: skip
        caught = any(r.family == family and r.verdict != "missed" for r in result.recurrences)
        if not caught and any(end <= p <= first for end in ends for p in result.prompts):
            reachable.append(family)
    return reachable


def delivered(result: SessionResult) -> list[Delivery]:
    """The session's deliveries, in order."""
    return result.replayed.deliveries
