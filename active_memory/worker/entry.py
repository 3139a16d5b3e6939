"""One claimed queue entry: import the session, hold its repository scope, run its
postmortem with retries, and say how the attempt ended. No queue writes but
`bind_scope` happen here; the worker finishes the entry with what this returns.

Failures are sorted once:
- a session with nothing to learn (a transcript never written, as after a `claude -p`
  that stopped before its first turn; a session without a user turn; a postmortem that
  asked no model) is `done`, with that reason;
- a lane this worker lacks for the session (`LaneUnavailable`: no lane at all, no model
  for another harness's session, the CLI gone) releases the entry, uncounted, with the
  reason, unless the session has nothing to learn: another worker (or this one
  restarted with a lane) takes it; this worker claims it no more;
- a lane that ran and failed (it could not start, its key was refused, the provider
  kept failing: `without_lane.lane_failures`) sends the entry back, counted, for
  `LANE_RETRY` seconds: never `done` with a lost lesson;
- bad input (`UsageError`: an unreadable or garbled transcript, a bad plan) is
  permanent: the entry fails with that reason and is not retried;
- a store that cannot be reached is waited for (`STORE_PATIENCE`, the backoff capped),
  each wait said in one line; a postmortem whose publish failed (nothing was written),
  a busy store or a disk I/O error, or any other Active Memory or OS error, is
  transient: retried with exponential backoff (tenacity), then failed with the last
  reason;
- a postmortem that ran is `done`; its summary and reason say what its specialists did.
"""

from __future__ import annotations

import functools
import glob
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, wait_exponential

from active_memory.checkout import Checkout
from active_memory.config import RuntimeConfig
from active_memory.errors import (
    ActiveMemoryError,
    EmptySession,
    StoreCorrupt,
    StoreError,
    StoreTooNew,
    StoreUnavailable,
    UsageError,
)
from active_memory.known_checkouts import remember
from active_memory.orchestrator import (
    PostmortemReport,
    SessionFactory,
    open_checkout,
    run_postmortem,
)
from active_memory.orchestrator.usage import UsageMeter
from active_memory.runlog.importers.harness_session import import_harness_session
from active_memory.runlog.record import RunRecord
from active_memory.specialists.providers import Usage
from active_memory.store import PostmortemQueue, QueueEntry, open_store
from active_memory.worker.lanes import LaneUnavailable, WorkerLane, session_factory
from active_memory.worker.runtime import PROBE_MODEL, NoModel, session_runtime
from active_memory.worker.without_lane import (
    NOTHING_TO_LEARN,
    RefusingSessions,
    checkout_root,
    lane_failures,
    needs_model,
)

Sessions = Callable[[RuntimeConfig, Path | None], SessionFactory | None]
"""Builds one postmortem's session factory (tests pass fakes through the real interface)."""
Say = Callable[[str], None]

STORE_PATIENCE = 600.0
"""How long one claim waits for a store that cannot be reached before it fails."""
NEVER_WRITTEN = "nothing to learn: the session ended before its transcript was written"


class Transient(Exception):
    """A failure that another attempt may cure."""


class Unreachable(Transient):
    """The store cannot be reached: waited for, not counted against `retries`."""


@dataclass(frozen=True, slots=True)
class Settings:
    """What every entry's attempt needs from the worker's options."""

    location: str
    owner: str
    lane: WorkerLane
    overrides: dict[str, Any] | None
    retries: int
    backoff: float
    max_backoff: float
    env: Mapping[str, str]
    patience: float = STORE_PATIENCE


@dataclass(slots=True)
class Attempt:
    """How one claimed entry's attempt ended, and what it cost."""

    outcome: Literal["done", "failed", "waiting", "released", "retry"]
    reason: str = ""
    result: dict[str, Any] | None = None
    usage: Usage = field(default_factory=Usage)


async def attempt(
    queue: PostmortemQueue, entry: QueueEntry, settings: Settings, sessions: Sessions | None,
    say: Say | None = None,
) -> Attempt:  # fmt: skip
    """Run `entry`'s postmortem once it holds its scope; never raises but cancellation."""
    spent: list[Usage] = []
    try:
        if _never_written(entry, settings.env):
            return Attempt("done", NEVER_WRITTEN, {"nothing_to_learn": True})
        record = await anyio.to_thread.run_sync(_import, entry, settings.env)
        scope = record.repository.namespace if record.repository else f"cwd:{entry.cwd}"
        if not await queue.bind_scope(entry.id, settings.owner, scope):
            return Attempt("waiting", f"{scope} is in another postmortem")
        checkout = open_checkout(record)
        root = checkout_root(checkout)
        if root is not None and record.repository is not None:  # known_checkouts.py
            learn = functools.partial(remember, record.repository.namespace, root, "session",
                                      settings.env)  # fmt: skip
            await anyio.to_thread.run_sync(learn)
        section = _settings_section(root, settings)
        problem, config = "", None
        try:
            config = _runtime(record, entry, settings, section)
            factory = (sessions or _lane_sessions(settings))(config, root)
        except (LaneUnavailable, NoModel) as exc:
            problem = str(exc)
        if problem:
            probe = config or _runtime(record, entry, settings, section, model=PROBE_MODEL)
            if await needs_model(settings.location, record, probe, checkout):
                return Attempt("released", f"this worker's lane cannot run it: {problem}")
            config, factory = probe, RefusingSessions(problem)
        assert config is not None
        report = await _with_retries(settings, record, config, checkout, factory, spent, say)
    except EmptySession as exc:
        return Attempt("done", f"nothing to learn: {exc}", {"nothing_to_learn": True})
    except UsageError as exc:
        return Attempt("failed", str(exc), usage=_total(spent))
    except Transient as exc:
        return Attempt("failed", str(exc), usage=_total(spent))
    except Exception as exc:  # a bug must fail its entry, not the worker
        return Attempt(
            "failed", f"internal error: {type(exc).__name__}: {exc}", usage=_total(spent)
        )
    failed = lane_failures(report)
    if failed:
        return Attempt("retry", "the lane could not run the postmortem: " + "; ".join(failed),
                       summary(report), _total(spent))  # fmt: skip
    return Attempt("done", _reason(report), summary(report), _total(spent))


def _runtime(
    record: RunRecord, entry: QueueEntry, settings: Settings, section: dict[str, Any],
    model: str | None = None,
) -> RuntimeConfig:  # fmt: skip
    target = settings.lane.target()
    if model is not None:
        from dataclasses import replace

        target = replace(target, model=model)
    return session_runtime(record, target=target, fallback_model=entry.model,
                           overrides=settings.overrides, active_memory=section)  # fmt: skip


def _never_written(entry: QueueEntry, env: Mapping[str, str]) -> bool:
    """The harness named a transcript, it did not exist when the session ended and does
    not now: the session stopped before its first turn (`claude -p` without a prompt)."""
    if not entry.transcript or entry.size is not None:
        return False
    return not os.path.lexists(entry.transcript)


def _settings_section(root: Path | None, settings: Settings) -> dict[str, Any]:
    """`activeMemory` for the session's postmortem from the one settings module: the
    `--config` runtime JSON, the repository's `.active-memory.toml`, the user's file,
    the defaults (docs/settings.md)."""
    from active_memory.settings import SettingsError, effective_settings

    try:
        chosen = effective_settings(
            str(root) if root else None, settings.env, runtime=settings.overrides,
            use_env=False,
        )  # fmt: skip
    except SettingsError as exc:  # an opt-out may hide behind the typo: collect nothing
        raise UsageError(f"{exc}; fix the file, then `active-memory queue retry`") from None
    return {"repository": chosen.repository, "graph": chosen.graph,
            "budgetBytes": chosen.budget_bytes}  # fmt: skip


def summary(report: PostmortemReport) -> dict[str, Any]:
    """The result kept on a done entry: what the postmortem did, in a few fields."""
    usage = report.usage
    return {
        "run_id": report.run_id,
        "ok": report.ok,
        "specialists": {name: s.status for name, s in report.specialists.items()},
        "published": report.published.model_dump(mode="json"),
        "conflicts": len(report.conflicts),
        "elapsed_ms": report.elapsed_ms,
        "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
                  "cost_usd": usage.cost_usd, "requests": usage.requests},
    }  # fmt: skip


def _reason(report: PostmortemReport) -> str:
    bad = [
        f"{name}: {s.status}" + (f" ({s.reason})" if s.reason else "")
        for name, s in report.specialists.items()
        if s.status in ("failed", "timed_out")
    ]
    if report.conflicts:
        bad.append(f"{len(report.conflicts)} conflict(s) unresolved")
    if not bad and report.usage.requests == 0:
        return NOTHING_TO_LEARN
    return "; ".join(bad)


def _lane_sessions(settings: Settings) -> Sessions:
    def build(config: RuntimeConfig, checkout: Path | None) -> SessionFactory | None:
        return session_factory(settings.lane, config, checkout=checkout, environ=settings.env)

    return build


def _total(spent: list[Usage]) -> Usage:
    total = Usage()
    for usage in spent:
        total = total.plus(usage)
    return total


async def _with_retries(
    settings: Settings, record: RunRecord, config: RuntimeConfig, checkout: Checkout | None,
    sessions: SessionFactory | None, spent: list[Usage], say: Say | None,
) -> PostmortemReport:  # fmt: skip
    counted = [0]

    def stop(state: RetryCallState) -> bool:
        failure = state.outcome.exception() if state.outcome else None
        if isinstance(failure, Unreachable):
            return (state.seconds_since_start or 0.0) >= settings.patience
        counted[0] += 1
        return counted[0] > settings.retries

    def before_sleep(state: RetryCallState) -> None:
        failure = state.outcome.exception() if state.outcome else None
        wait = state.next_action.sleep if state.next_action else 0.0
        wait = wait or 0.0
        if say is not None and failure is not None:
            say(f"{failure}; retrying in {wait:.0f} s")

    retrying = AsyncRetrying(
        stop=stop,
        wait=wait_exponential(multiplier=settings.backoff, max=settings.max_backoff),
        retry=retry_if_exception_type(Transient),
        sleep=anyio.sleep,
        before_sleep=before_sleep,
        reraise=True,
    )
    try:
        report: PostmortemReport = await retrying(
            _postmortem, settings, record, config, checkout, sessions, spent
        )
    except Transient as exc:
        tries = counted[0]
        raise Transient(f"after {tries} attempt{'s' * (tries != 1)}: {exc}") from None
    return report


async def _postmortem(
    settings: Settings, record: RunRecord, config: RuntimeConfig, checkout: Checkout | None,
    sessions: SessionFactory | None, spent: list[Usage],
) -> PostmortemReport:  # fmt: skip
    """One postmortem on its own store connection; a transient failure raises `Transient`."""
    meter = UsageMeter()
    try:
        async with open_store(settings.location) as store:
            report = await run_postmortem(
                record, config, store, checkout=checkout, sessions=sessions, meter=meter
            )
    except (StoreCorrupt, StoreTooNew):
        raise  # no retry cures these: fail the entry, say why
    except StoreUnavailable as exc:
        raise Unreachable(f"store unreachable ({exc})") from exc
    except StoreError as exc:  # busy, a disk I/O error: may pass
        raise Transient(f"{type(exc).__name__}: {exc}") from exc
    except UsageError:
        raise
    except (ActiveMemoryError, OSError) as exc:
        raise Transient(f"{type(exc).__name__}: {exc}") from exc
    finally:
        spent.append(meter.total())
    if report.publish_error is not None:
        raise Transient(f"publish failed, nothing written: {report.publish_error}")
    return report


def _import(entry: QueueEntry, env: Mapping[str, str]) -> RunRecord:
    transcript = entry.transcript or _find_transcript(entry, env)
    return import_harness_session(
        entry.harness, transcript, session_id=entry.session_id, cwd=entry.cwd or None, env=env
    )


def _find_transcript(entry: QueueEntry, env: Mapping[str, str]) -> str:
    """A Codex hook may name no transcript: its rollout file carries the session ID."""
    if entry.harness == "codex":
        home = env.get("CODEX_HOME") or os.path.join(env.get("HOME", "~"), ".codex")
        pattern = os.path.join(glob.escape(os.path.expanduser(home)), "sessions", "**",
                               f"rollout-*{glob.escape(entry.session_id)}.jsonl")  # fmt: skip
        found = sorted(glob.glob(pattern, recursive=True))
        if found:
            return found[-1]
    raise UsageError(
        f"{entry.harness} session {entry.session_id}: the hook named no transcript and none "
        "was found; import it by hand (`active-memory import`)"
    )
