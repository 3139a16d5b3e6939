"""The shared driver of the end-to-end tests with every real harness (issue 29 item 4).

One scenario, run the same way with each harness (tests/e2e_harnesses.py says how each
binary is set up, hooked and run):

1. **Session 1** in a real git repository: the scripted model runs the same failing
   command twice (`make client`: the Makefile has no such target; the same error both
   times, a repeated tool failure of SPEC §3 and §4 item 4), then answers.
2. **Its end** fires the harness's session-end hook, which queues the session and starts
   the automatic worker (docs/queue.md, "The automatic worker"). The test never starts a
   worker: it waits, bounded, for the queue entry to be done.
3. The worker's lane is the real `claude` binary (`claude -p`) pointed at the same
   scripted model on loopback, chosen by the user's `[worker]` settings, never by the
   harness's environment. Repository discovery answers with a lesson citing the
   repeated failure's `ev-tf-` item and a tracked file; it is **published**.
4. **Session 2** reads that file: the card is in the model request that carries the
   read's result, and in none before.
5. Its end queues it and starts a worker again (or the one still idle takes it): its
   postmortem gives repository maintenance the delivered lesson, and maintenance keeps
   it (it judged the lesson: it did not abstain for want of delivery evidence).

The fake model plays the user's agent of each harness (tool names and arguments of that
harness, told apart by the `E2E-<n>:` marker of the prompt) and the four specialists
(told apart by their prompts).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fakes.harness import CLAUDE_QUIET
from fakes.model_server import ModelServer, Received, Turn, answer, text
from loop_support import NAMESPACE, SCHEMA_FILE, make_repository

FAILING = "make client"
"""The command session 1 runs twice: the Makefile has `api-client`, no `client`."""
LESSON_TITLE = "Generate the API client with make api-client, not make client"
LESSON_TEXT = (
    "After editing api/schema.json run `make api-client`: there is no `client` target, "
    "and `make client` failed twice with the same error."
)
LANE_MODEL = "claude-sonnet-5"
LANE_KEY = "sk-ant-api03-E2ELANEkey0123456789abcdef"
CLI = Path(sys.executable).with_name("active-memory")
WAIT = 240.0
"""How long a postmortem may take before the test says the worker never did it."""
ORPHANED = 30.0
"""How long an unfinished queue may go without a running worker (one starting up under
load has not written its status file yet) before the test says none was started."""

_SPECIALIST = re.compile(r"You are the (graph|repository) (discovery|maintenance) specialist")
_FAILURES = re.compile(r"ev-tf-[0-9a-f]{12}")
_SESSION = re.compile(r"E2E-(\d+):")


@dataclass(frozen=True)
class Tools:
    """How one harness's model calls its shell and its file reader."""

    shell: Callable[[str], Turn]
    read: Callable[[Path], Turn]


Run = Callable[[Path, "World", dict[str, str], str], subprocess.CompletedProcess[str]]


@dataclass(frozen=True)
class Drive:
    """One harness in the scenario: its model's tools, its set-up (configuration and
    `hook install`; returns the environment its sessions run in) and one session of its
    binary."""

    name: str
    tools: Tools
    prepare: Callable[[World], dict[str, str]]
    run: Run


@dataclass
class E2EModel:
    """The scripted model: each harness session's agent, then the specialists."""

    repo: Path
    tools: Tools
    lessons: dict[str, int] = field(default_factory=dict)  # published: ID -> revision
    maintained: list[str] = field(default_factory=list)  # IDs maintenance was given
    asked: dict[str, int] = field(default_factory=dict)  # specialist -> requests
    lane: list[Received] = field(default_factory=list)  # the specialists' requests
    sessions: dict[int, list[Received]] = field(default_factory=dict)  # agent requests

    def __call__(self, request: Received) -> Turn | None:
        dump = request.dump()
        found = _SPECIALIST.search(dump)
        if found is not None:
            name = f"{found.group(1)}_{found.group(2)}"
            self.asked[name] = self.asked.get(name, 0) + 1
            self.lane.append(request)
            return self._specialist(name, dump)
        session = _SESSION.search(dump)
        if session is None or not request.tool_names():
            return None  # a request the harness makes for itself (a title, a probe)
        number = int(session.group(1))
        self.sessions.setdefault(number, []).append(request)
        done = len(request.tool_results())
        if number == 1 and done < 2:
            return self.tools.shell(FAILING)
        if number == 2 and done == 0:
            return self.tools.read(self.repo / SCHEMA_FILE)
        return text(f"Session {number} done.")

    def _specialist(self, name: str, dump: str) -> Turn:
        if name == "repository_discovery":
            evidence = sorted(set(_FAILURES.findall(dump)))
            return answer({"lessons": [_lesson(evidence)] if evidence else []})
        if name == "graph_discovery":
            return answer({"lessons": []})
        # Maintenance keeps the lessons it is given; the test tells the fake model which
        # exist (ID and revision), as a model reads them off its task.
        given = {i: r for i, r in self.lessons.items() if f'{i}\\"' in dump or f'{i}"' in dump}
        self.maintained.extend(given)
        return answer({"decisions": [_keep(i, r) for i, r in sorted(given.items())]})


def _lesson(evidence: list[str]) -> dict[str, Any]:
    return {
        "title": LESSON_TITLE,
        "recommendation": LESSON_TEXT,
        "associations": {"files": [SCHEMA_FILE], "folders": [], "identifiers": [],
                         "keywords": []},
        "evidence": evidence,
        "citations": [{"path": SCHEMA_FILE, "lines": None}],
        "why_recurs": "Every change to the API starts in api/schema.json.",
    }  # fmt: skip


def _keep(lesson_id: str, revision: int) -> dict[str, Any]:
    return {
        "id": lesson_id,
        "revision": revision,
        "action": "keep",
        "reason": "The card came with the read of api/schema.json and make client was not "
        "run again.",
    }


@dataclass
class World:
    """One test's user: a repository, a state folder, the fake model server."""

    root: Path
    server: ModelServer
    model: E2EModel
    repo: Path

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def store(self) -> Path:
        """The default store of the state folder: every hook and command finds it."""
        return self.state / "active-memory" / "lessons.sqlite3"

    @property
    def workers(self) -> Path:
        """The automatic worker's files (`worker/` beside the SQLite store)."""
        return self.store.parent / "worker"

    def ours(self, env: dict[str, str]) -> dict[str, str]:
        """A harness environment with our console scripts first on PATH and this state
        folder; the automatic worker allowed (isolated_home switches it off)."""
        env = {k: v for k, v in env.items() if k != "ACTIVE_MEMORY_AUTO_WORKER"}
        path = f"{CLI.parent}{os.pathsep}{env.get('PATH', '')}"
        return env | {"PATH": path, "ZEROSHOT_STATE_DIR": str(self.state)}

    def write_settings(self, claude: Path) -> None:
        """The user's `[worker]` settings: the real `claude` as the lane, pointed at the
        fake model on loopback. The harness's own environment never reaches it."""
        lane_env = {
            "ACTIVE_MEMORY_CLAUDE_BIN": str(claude),
            "ANTHROPIC_BASE_URL": self.server.url,
            "ANTHROPIC_API_KEY": LANE_KEY,
            **CLAUDE_QUIET,
        }
        lines = [
            "[worker]",
            'lane = "claude"',
            f'model = "{LANE_MODEL}"',
            "idle_seconds = 3",
            "concurrency = 1",
            "",
            "[worker.env]",
            *(f'{key} = "{value}"' for key, value in lane_env.items()),
        ]
        path = self.state / "active-memory" / "settings.toml"
        for folder in (self.state, path.parent):  # owner only, as the hooks make them
            folder.mkdir(mode=0o700, exist_ok=True)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    def cli(self, env: dict[str, str], *argv: str) -> Any:
        """`active-memory ARGV --json` as the user runs it: its parsed output."""
        done = subprocess.run([str(CLI), *argv, "--json"], env=env, cwd=self.repo,
                              capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
        assert done.returncode == 0, (argv, done.stderr)
        return json.loads(done.stdout)


def new_world(root: Path, server: ModelServer, model: E2EModel) -> World:
    """The world of one test (the repository is `model.repo`)."""
    return World(root=root, server=server, model=model, repo=model.repo)


def repository(root: Path) -> Path:
    """A committed checkout of acme/api (loop_support's) with its Makefile."""
    return make_repository(root)


def queue_rows(store: Path) -> list[dict[str, Any]]:
    """The queue's entries, read straight from the store beside the worker using it."""
    with sqlite3.connect(store, timeout=30) as raw:
        raw.row_factory = sqlite3.Row
        found = raw.execute(
            "SELECT id, harness, session_id, state, attempts, reason, result, final "
            "FROM postmortem_queue ORDER BY id"
        ).fetchall()
    return [{**dict(row), "result": json.loads(row["result"] or "null")} for row in found]


def wait_until_finished(world: World, count: int) -> list[dict[str, Any]]:
    """The queue once `count` entries are there and none is pending or running. Fails,
    saying what the queue and the worker's log say, after `WAIT` seconds, or sooner when
    for `ORPHANED` seconds no worker of the store ran while the queue was unfinished
    (nothing else would ever process it: the test starts no worker)."""
    deadline = time.monotonic() + WAIT
    found: list[dict[str, Any]] = []
    orphaned_since: float | None = None
    while (now := time.monotonic()) < deadline:
        if world.store.exists():
            try:
                found = queue_rows(world.store)
            except sqlite3.OperationalError:
                found = []
            if len(found) == count and all(e["state"] in ("done", "failed") for e in found):
                return found
        if workers_alive(world):
            orphaned_since = None
        elif orphaned_since is None:
            orphaned_since = now
        elif now - orphaned_since > ORPHANED:
            raise AssertionError(
                _unfinished(world, count, found, f"no worker ran for {ORPHANED:g} s")
            )
        time.sleep(0.5)
    raise AssertionError(_unfinished(world, count, found, f"not done within {WAIT:g} s"))


def _unfinished(world: World, count: int, found: list[dict[str, Any]], why: str) -> str:
    return (
        f"the automatic worker did not finish {count} queued session(s) ({why}); "
        f"queue: {found}; worker log: {worker_log(world)!r}; hook log: {hook_log(world)!r}"
    )


def worker_log(world: World) -> str:
    """What the automatic workers of the store said (their log has no terminal)."""
    return "".join(p.read_text() for p in sorted(world.workers.glob("*.log")))


def hook_log(world: World) -> str:
    """The hooks' own error lines (none when every hook call went right)."""
    path = world.state / "active-memory" / "recall" / "hook.log"
    return path.read_text() if path.exists() else ""


def started_workers(world: World) -> set[int]:
    """Pids of the workers session-end hooks started (`worker --auto` names itself so)."""
    return {int(p) for p in re.findall(r"automatic worker pid (\d+) ", worker_log(world))}


def workers_alive(world: World) -> list[int]:
    """Pids of workers of this store still running (from their status files)."""
    alive = []
    for status in world.workers.glob("*.json"):
        try:
            pid = int(json.loads(status.read_text()).get("pid") or 0)
        except (OSError, ValueError):
            continue
        try:
            os.kill(pid, 0)
        except OSError:
            continue
        alive.append(pid)
    return alive


def wait_until_gone(world: World, timeout: float = 60.0) -> list[int]:
    """Wait for every worker of the store to exit (idle); the pids still alive after."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and workers_alive(world):
        time.sleep(0.3)
    return workers_alive(world)


def stop_workers(world: World) -> None:
    """A failed test must not leave its worker running."""
    import signal

    for pid in workers_alive(world):
        os.kill(pid, signal.SIGKILL)


@dataclass
class Timings:
    """Wall time of each phase of one scenario, in seconds (reported, never asserted)."""

    phases: dict[str, float] = field(default_factory=dict)
    _last: float = field(default_factory=time.monotonic)

    def mark(self, phase: str) -> None:
        now = time.monotonic()
        self.phases[phase] = round(now - self._last, 1)
        self._last = now

    def __str__(self) -> str:
        total = sum(self.phases.values())
        return ", ".join(f"{k} {v:g} s" for k, v in self.phases.items()) + f"; total {total:.1f} s"


def run_scenario(drive: Drive, root: Path, binary: Path, claude: Path) -> Timings:
    """The whole loop with `binary` (the harness) and `claude` (the worker's lane)."""
    timings = Timings()
    model = E2EModel(repo=repository(root), tools=drive.tools)
    with ModelServer(respond=model) as server:
        world = new_world(root, server, model)
        try:
            world.write_settings(claude)
            env = drive.prepare(world)
            timings.mark("set-up")
            _first_session(drive, world, binary, env, timings)
            _second_session(drive, world, binary, env, timings)
            assert wait_until_gone(world) == [], "the automatic worker did not exit when idle"
            timings.mark("worker exit")
        finally:
            stop_workers(world)
    assert hook_log(world) == "", hook_log(world)
    return timings


def _first_session(
    drive: Drive, world: World, binary: Path, env: dict[str, str], timings: Timings
) -> None:
    done = drive.run(binary, world, env, f"E2E-1: generate the API client ({drive.name})")
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    requests = world.model.sessions.get(1, [])
    assert len(requests) >= 3, f"session 1 made {len(requests)} model request(s)"
    results = requests[-1].tool_results()
    assert len(results) == 2 and all("client" in r for r in results), results
    timings.mark("session 1")
    [entry] = wait_until_finished(world, 1)
    timings.mark("postmortem 1")
    assert (entry["harness"], entry["final"], entry["state"], entry["attempts"]) == (
        drive.name, 1, "done", 1), entry  # fmt: skip
    _by_a_started_worker(world, entry)
    result = entry["result"]
    assert result["specialists"]["repository_discovery"] == "reconciled", result
    assert result["published"]["created"] == 1, result
    listed = world.cli(env, "lessons", "list")["lessons"]
    [lesson] = [x for x in listed if x["title"] == LESSON_TITLE]
    assert lesson["scope"]["repository"] == NAMESPACE
    assert lesson["associations"]["files"] == [SCHEMA_FILE]
    shown = world.cli(env, "lessons", "show", lesson["id"])
    # It stands on session 1's repeated failure (SPEC §4 item 4), nothing else.
    assert shown["evidence"]["run_ids"] == [result["run_id"]], shown["evidence"]
    assert [e[:6] for e in shown["evidence"]["evidence_ids"]] == ["ev-tf-"], shown["evidence"]
    world.model.lessons[lesson["id"]] = lesson["revision"]
    _through_the_settings_lane(world)


def _second_session(
    drive: Drive, world: World, binary: Path, env: dict[str, str], timings: Timings
) -> None:
    done = drive.run(binary, world, env, f"E2E-2: add a field to the charge ({drive.name})")
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    requests = world.model.sessions.get(2, [])
    carrying = [bool(r.tool_results()) and LESSON_TITLE in r.dump() for r in requests]
    before = [LESSON_TITLE in r.dump() for r in requests if not r.tool_results()]
    # The card is in the request that carries the read's result, and in none before it.
    assert carrying[:1] == [False] and True in carrying and not any(before), carrying
    timings.mark("session 2")
    discovered = world.model.asked.get("repository_discovery", 0)
    _, second = wait_until_finished(world, 2)
    timings.mark("postmortem 2")
    assert (second["harness"], second["final"], second["state"], second["attempts"]) == (
        drive.name, 1, "done", 1), second  # fmt: skip
    _by_a_started_worker(world, second)
    [lesson_id] = world.model.lessons
    # Maintenance was given the delivered lesson (the delivery is the run record's, from
    # the recall hook) and judged it: it kept it instead of abstaining.
    assert world.model.maintained == [lesson_id], world.model.maintained
    assert second["result"]["specialists"]["repository_maintenance"] == "reconciled", second
    assert second["result"]["published"]["kept"] == 1, second["result"]
    # Session 2 has no qualifying evidence: discovery cost no model call.
    assert world.model.asked.get("repository_discovery", 0) == discovered, world.model.asked
    _through_the_settings_lane(world)
    shown = world.cli(env, "lessons", "show", lesson_id)
    assert (shown["status"], shown["revision"]) == ("active", 1), shown
    assert shown["effectiveness"]["runs_delivered"] == 1, shown["effectiveness"]
    report = world.cli(env, "queue")["worker"]
    assert report["today"]["postmortems"] == 2, report["today"]


def _through_the_settings_lane(world: World) -> None:
    """Every specialist request came from the real `claude -p` with the settings' model
    and key (`[worker.env]`), never the harness's own."""
    assert world.model.lane, "no specialist asked the model"
    for request in world.model.lane:
        seen = (request.headers.get("x-api-key"), request.headers.get("user-agent", "")[:11],
                request.body.get("model") if isinstance(request.body, dict) else None)  # fmt: skip
        assert seen == (LANE_KEY, "claude-cli/", LANE_MODEL), seen


def _by_a_started_worker(world: World, entry: dict[str, Any]) -> None:
    """The entry was processed by a worker a session-end hook started (`worker --auto`
    logs `automatic worker pid N`; the entry's result names its owner `host:pid:…`)."""
    owner = str(entry["result"]["worker"])
    pid = int(owner.rsplit(":", 2)[1])
    assert pid in started_workers(world), (owner, worker_log(world))
    assert "lane claude (" in worker_log(world), worker_log(world)
