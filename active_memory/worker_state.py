"""What this machine knows about the worker of a store: its lock, its status, its log and
what it spent per day (docs/queue.md, "The automatic worker").

All in `store.location.worker_folder(location)`, named by `store_key(location)`:

- `<key>.lock`: held (`flock`) by the one worker of this machine that drains this store
  for as long as it runs. The session-end hook takes it before it starts a worker and
  hands it to that process, so two session ends never start two workers; the kernel
  releases it when the worker dies, so a crash never leaves a stale lock.
- `<key>.json`: the running worker's status (pid, host, start, lane, model, log), written
  at its start and removed at its end; without the lock held it is a leftover.
- `<key>.log`: what a worker started by a hook says (it has no terminal), rotated at
  1 MiB to `<key>.log.1`.
- `<key>.spend.jsonl`: one line per postmortem the worker ran: the UTC day and the
  tokens and dollars it cost (dollars where the lane reports them). The daily cap
  (`[worker] daily_tokens`, `daily_usd`) and `queue` read it; lines older than
  `KEEP_DAYS` are dropped when the file is rewritten.

Standard library only (the session-end hook reads the lock through this module).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from active_memory.atomic_files import write_atomically
from active_memory.processes import pid_alive
from active_memory.store.location import store_key, worker_folder

LOCK_FD_ENV = "ACTIVE_MEMORY_WORKER_LOCK_FD"
"""The descriptor of the held lock a session-end hook hands the worker it starts."""
LOG_MAX_BYTES = 1024 * 1024
SPEND_MAX_BYTES = 1024 * 1024
KEEP_DAYS = 62


@dataclass(frozen=True, slots=True)
class WorkerFiles:
    """The paths of one store's worker files on this machine."""

    folder: str
    lock: str
    status: str
    log: str
    spend: str

    @classmethod
    def of(cls, location: str, env: Mapping[str, str] | None = None) -> WorkerFiles:
        """The files of the worker of the store at `location`."""
        folder = worker_folder(location, env)
        base = os.path.join(folder, store_key(location))
        return cls(folder, base + ".lock", base + ".json", base + ".log", base + ".spend.jsonl")


def take_lock(path: str) -> int | None:
    """The descriptor of `path` locked by us, or None when another holder has it (or this
    platform has no `flock`: Windows cannot tell, so no worker is started for it)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return None
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        return None
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def adopt_lock(path: str, env: Mapping[str, str]) -> int | None:
    """The lock a session-end hook handed this process (`LOCK_FD_ENV`), if it is really
    `path`'s and held; None otherwise."""
    text = env.get(LOCK_FD_ENV, "")
    if not text.isdigit():
        return None
    descriptor = int(text)
    try:
        import fcntl

        same = os.path.samestat(os.fstat(descriptor), os.stat(path))
        if not same:
            return None
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)  # ours already: succeeds
    except (OSError, ImportError):
        return None
    return descriptor


def worker_running(files: WorkerFiles) -> bool:
    """A worker of this machine holds the store's lock now."""
    from active_memory.file_lock import is_locked

    return os.name != "nt" and is_locked(files.lock)


def write_status(files: WorkerFiles, status: Mapping[str, Any]) -> None:
    """Record the running worker's status (owner only)."""
    data = json.dumps(dict(status), indent=1, sort_keys=True).encode("utf-8")
    write_atomically(files.status, data, mode=0o600, sync=False)


def clear_status(files: WorkerFiles) -> None:
    """Remove the status file of a worker that ends (best effort)."""
    try:  # noqa: SIM105 - the hook path avoids contextlib
        os.unlink(files.status)
    except OSError:
        pass


def worker_status(location: str, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Whether and where this machine's worker of `location` runs:
    `{"running", "pid"?, "host"?, "started_at"?, "lane"?, "model"?, "auto"?, "log"}`."""
    files = WorkerFiles.of(location, env)
    found: dict[str, Any] = {"running": worker_running(files), "log": files.log}
    try:
        with open(files.status, encoding="utf-8") as handle:
            recorded = json.load(handle)
    except (OSError, ValueError):
        recorded = None
    if isinstance(recorded, dict):
        alive = pid_alive(int(recorded.get("pid") or 0))
        if found["running"] and alive:
            found.update({k: recorded.get(k) for k in
                          ("pid", "host", "started_at", "lane", "model", "auto")})  # fmt: skip
        elif not found["running"]:
            found["last_pid"] = recorded.get("pid")
    return found


def open_log(files: WorkerFiles) -> int:
    """The log's descriptor for appending (owner only), rotated past `LOG_MAX_BYTES`."""
    os.makedirs(files.folder, mode=0o700, exist_ok=True)
    try:
        if os.path.getsize(files.log) > LOG_MAX_BYTES:
            os.replace(files.log, files.log + ".1")
    except OSError:
        pass
    return os.open(files.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)


def utc_day(at: float | None = None) -> str:
    """`YYYY-MM-DD` of `at` (default now) in UTC: the day a spend counts for."""
    return time.strftime("%Y-%m-%d", time.gmtime(time.time() if at is None else at))


def record_spend(files: WorkerFiles, line: Mapping[str, Any]) -> None:
    """Append one postmortem's spend (`day`, `run_id`, tokens, `cost_usd`, ...)."""
    os.makedirs(files.folder, mode=0o700, exist_ok=True)
    data = (json.dumps(dict(line), sort_keys=True) + "\n").encode("utf-8")
    descriptor = os.open(files.spend, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(descriptor, data)
    finally:
        os.close(descriptor)
    try:
        too_big = os.path.getsize(files.spend) > SPEND_MAX_BYTES
    except OSError:
        too_big = False
    if too_big:
        _prune(files)


def _prune(files: WorkerFiles) -> None:
    oldest = utc_day(time.time() - KEEP_DAYS * 86400)
    kept = [line for line in _spend_lines(files) if str(line.get("day", "")) >= oldest]
    text = "".join(json.dumps(line, sort_keys=True) + "\n" for line in kept)
    write_atomically(files.spend, text.encode("utf-8"), mode=0o600)


def _spend_lines(files: WorkerFiles) -> list[dict[str, Any]]:
    try:
        with open(files.spend, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return []
    found = []
    for text in lines:
        try:
            line = json.loads(text)
        except ValueError:
            continue  # a line cut by a crash: the rest still counts
        if isinstance(line, dict):
            found.append(line)
    return found


def spend_by_day(
    location: str, env: Mapping[str, str] | None = None, *, days: int = 7,
    files: WorkerFiles | None = None,
) -> list[dict[str, Any]]:  # fmt: skip
    """The worker's spend on this machine for the last `days` UTC days (today first):
    `[{"day", "postmortems", "input_tokens", "output_tokens", "tokens", "cost_usd",
    "complete"}]`; `cost_usd` is None unless every postmortem's lane reported it."""
    files = files or WorkerFiles.of(location, env)
    wanted = [utc_day(time.time() - n * 86400) for n in range(days)]
    totals = {day: _empty(day) for day in wanted}
    for line in _spend_lines(files):
        total = totals.get(str(line.get("day", "")))
        if total is None:
            continue
        total["postmortems"] += 1
        for key in ("input_tokens", "output_tokens"):
            total[key] += _count(line.get(key))
        cost = line.get("cost_usd")
        if isinstance(cost, int | float) and total["cost_usd"] is not None:
            total["cost_usd"] += float(cost)
        elif _count(line.get("requests")) > 0:
            total["cost_usd"] = None  # a lane that reports no cost: dollars unknown
        total["complete"] = total["complete"] and bool(line.get("complete", True))
    for total in totals.values():
        total["tokens"] = total["input_tokens"] + total["output_tokens"]
    return [totals[day] for day in wanted]


def _empty(day: str) -> dict[str, Any]:
    return {"day": day, "postmortems": 0, "input_tokens": 0, "output_tokens": 0, "tokens": 0,
            "cost_usd": 0.0, "complete": True}  # fmt: skip


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def cap_reached(
    today: Mapping[str, Any], daily_tokens: int | None, daily_usd: float | None
) -> str | None:
    """Why the day's spend stops the worker from claiming more, or None."""
    if daily_tokens is not None and today["tokens"] >= daily_tokens:
        return (f"daily cap reached: {today['tokens']:,} of {daily_tokens:,} tokens spent "
                f"today ({today['day']} UTC)")  # fmt: skip
    cost = today.get("cost_usd")
    if daily_usd is not None and cost is not None and cost >= daily_usd:
        return (
            f"daily cap reached: ${cost:.2f} of ${daily_usd:.2f} spent today ({today['day']} UTC)"
        )
    return None


def worker_report(location: str, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Everything this machine knows about the worker of `location`, for `queue --json`,
    `hook doctor` and the web view: `status` (`worker_status`), `auto_start` (does a
    session end start one) and `auto_start_off` (why not), `lane` (what an automatic
    worker would run on), `settings` (the `[worker]` table; `error` when invalid),
    `today` and `days` (`spend_by_day`, 7 days), `cap` and `cap_reached`, `spooled`."""
    from active_memory.settings import SettingsError
    from active_memory.store import spool
    from active_memory.worker_settings import (
        AUTO_WORKER_ENV,
        lane_environment,
        pick_lane,
        read_worker_settings,
    )

    environment = os.environ if env is None else env
    days = spend_by_day(location, environment, days=7)
    report: dict[str, Any] = {
        "status": worker_status(location, environment),
        "today": days[0],
        "days": days,
        "spooled": spool.spooled(location, environment),
    }
    try:
        chosen = read_worker_settings(environment)
    except SettingsError as exc:
        report.update(auto_start=False, auto_start_off=f"invalid settings: {exc}",
                      lane="unknown (the settings file is invalid)", settings={"error": str(exc)},
                      cap=None, cap_reached=None)  # fmt: skip
        return report
    off = None
    if environment.get(AUTO_WORKER_ENV) == "0":
        off = f"{AUTO_WORKER_ENV}=0"
    elif not chosen.enabled:
        off = f"[worker] enabled = false in {chosen.path}"
    lanes = lane_environment(chosen, environment, inherit=False)
    report.update(auto_start=off is None, auto_start_off=off,
                  lane=pick_lane(chosen, lanes).describe(), settings=chosen.to_json())  # fmt: skip
    report["cap"] = _cap_text(chosen)
    report["cap_reached"] = cap_reached(days[0], chosen.daily_tokens, chosen.daily_usd)
    if report["cap_reached"]:
        report["cap"] = report["cap_reached"]
    return report


def _cap_text(chosen: Any) -> str | None:
    parts = []
    if chosen.daily_tokens is not None:
        parts.append(f"{chosen.daily_tokens:,} tokens")
    if chosen.daily_usd is not None:
        parts.append(f"${chosen.daily_usd:.2f}")
    return f"daily cap {' or '.join(parts)}" if parts else None
