"""One claimed queue entry: import the session, hold its repository scope, run its
postmortem with retries, and say how the attempt ended. No queue writes but
`bind_scope` happen here; the worker finishes the entry with what this returns.

Failures are sorted once:
- a lane this worker cannot run for the session (`LaneUnavailable`: its CLI is missing,
  the session is of another harness) releases the entry, uncounted, for
  `LANE_RETRY` seconds: another worker (or this one, fixed) takes it;
- bad input (`UsageError`: an unreadable or empty transcript, no model, a bad plan) is
  permanent: the entry fails with that reason and is not retried;
- a postmortem whose publish failed (nothing was written), a store error other than a
  damaged or too-new store (busy, unreachable, a disk I/O error while many processes
  open it), or any other Active Memory or OS error, is transient: retried with
  exponential backoff (tenacity), then failed with the last reason;
- a postmortem that ran is `done`, whatever its specialists did; its summary says so.
"""

from __future__ import annotations

import functools
import glob
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from active_memory.checkout import Checkout
from active_memory.config import RuntimeConfig
from active_memory.errors import (
    ActiveMemoryError,
    StoreCorrupt,
    StoreError,
    StoreTooNew,
    UsageError,
)
from active_memory.known_checkouts import remember
from active_memory.orchestrator import (
    PostmortemReport,
    SessionFactory,
    open_checkout,
    run_postmortem,
)
from active_memory.runlog.importers.harness_session import import_harness_session
from active_memory.runlog.record import RunRecord
from active_memory.store import PostmortemQueue, QueueEntry, open_store
from active_memory.worker.lanes import LaneChoice, LaneUnavailable, session_factory
from active_memory.worker.runtime import session_runtime

Sessions = Callable[[RuntimeConfig, Path | None], SessionFactory | None]
"""Builds one postmortem's session factory (tests pass fakes through the real interface)."""


class Transient(Exception):
    """A failure that another attempt may cure."""


@dataclass(frozen=True, slots=True)
class Settings:
    """What every entry's attempt needs from the worker's options."""

    location: str
    owner: str
    lane: LaneChoice
    model: str | None
    overrides: dict[str, Any] | None
    retries: int
    backoff: float
    max_backoff: float
    env: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Attempt:
    """How one claimed entry's attempt ended."""

    outcome: Literal["done", "failed", "waiting", "released"]
    reason: str = ""
    result: dict[str, Any] | None = None


async def attempt(
    queue: PostmortemQueue, entry: QueueEntry, settings: Settings, sessions: Sessions | None
) -> Attempt:
    """Run `entry`'s postmortem once it holds its scope; never raises but cancellation."""
    try:
        record = await anyio.to_thread.run_sync(_import, entry, settings.env)
        scope = record.repository.namespace if record.repository else f"cwd:{entry.cwd}"
        if not await queue.bind_scope(entry.id, settings.owner, scope):
            return Attempt("waiting", f"{scope} is in another postmortem")
        checkout = open_checkout(record)
        root = Path(checkout.root) if checkout is not None else None
        if root is not None and record.repository is not None:  # known_checkouts.py
            learn = functools.partial(remember, record.repository.namespace, root, "session",
                                      settings.env)  # fmt: skip
            await anyio.to_thread.run_sync(learn)
        config = session_runtime(
            record, model=settings.model, fallback_model=entry.model,
            overrides=settings.overrides, active_memory=_settings_section(root, settings),
        )  # fmt: skip
        factory = (sessions or _lane_sessions(settings))(config, root)
        report = await _with_retries(settings, record, config, checkout, factory)
    except LaneUnavailable as exc:
        return Attempt("released", f"this worker's lane cannot run it: {exc}")
    except UsageError as exc:
        return Attempt("failed", str(exc))
    except Transient as exc:
        return Attempt("failed", f"after {settings.retries + 1} attempts: {exc}")
    except Exception as exc:  # a bug must fail its entry, not the worker
        return Attempt("failed", f"internal error: {type(exc).__name__}: {exc}")
    return Attempt("done", _reason(report), summary(report))


def _settings_section(root: Path | None, settings: Settings) -> dict[str, Any]:
    """`activeMemory` for the session's postmortem from the one settings module: the
    `--config` runtime JSON, the repository's `.active-memory.toml`, the user's file,
    the defaults (SPEC §2, "Settings outside a run")."""
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
    return {
        "run_id": report.run_id,
        "ok": report.ok,
        "specialists": {name: s.status for name, s in report.specialists.items()},
        "published": report.published.model_dump(mode="json"),
        "conflicts": len(report.conflicts),
        "elapsed_ms": report.elapsed_ms,
    }


def _reason(report: PostmortemReport) -> str:
    bad = [f"{n}: {s.status}" for n, s in report.specialists.items() if s.status in
           ("failed", "timed_out")]  # fmt: skip
    if report.conflicts:
        bad.append(f"{len(report.conflicts)} conflict(s) unresolved")
    return "; ".join(bad)


def _lane_sessions(settings: Settings) -> Sessions:
    def build(config: RuntimeConfig, checkout: Path | None) -> SessionFactory | None:
        return session_factory(settings.lane, config, checkout=checkout, environ=settings.env)

    return build


async def _with_retries(
    settings: Settings, record: RunRecord, config: RuntimeConfig, checkout: Checkout | None,
    sessions: SessionFactory | None,
) -> PostmortemReport:  # fmt: skip
    retrying = AsyncRetrying(
        stop=stop_after_attempt(settings.retries + 1),
        wait=wait_exponential(multiplier=settings.backoff, max=settings.max_backoff),
        retry=retry_if_exception_type(Transient),
        sleep=anyio.sleep,
        reraise=True,
    )
    report: PostmortemReport = await retrying(
        _postmortem, settings, record, config, checkout, sessions
    )
    return report


async def _postmortem(
    settings: Settings, record: RunRecord, config: RuntimeConfig, checkout: Checkout | None,
    sessions: SessionFactory | None,
) -> PostmortemReport:  # fmt: skip
    """One postmortem on its own store connection; a transient failure raises `Transient`."""
    try:
        async with open_store(settings.location) as store:
            report = await run_postmortem(
                record, config, store, checkout=checkout, sessions=sessions
            )
    except (StoreCorrupt, StoreTooNew):
        raise  # no retry cures these: fail the entry, say why
    except StoreError as exc:  # busy, unreachable, a disk I/O error: may pass
        raise Transient(f"{type(exc).__name__}: {exc}") from exc
    except UsageError:
        raise
    except (ActiveMemoryError, OSError) as exc:
        raise Transient(f"{type(exc).__name__}: {exc}") from exc
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
