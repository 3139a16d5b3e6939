"""One session's ledger shared by command hooks and `serve`: striped locks, no card twice,
no budget overspent, no synced delivery lost when the server dies mid-call (SPEC §8)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.request
import zlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from recall_support import (
    claude_payload,
    hook_env,
    make_checkout,
    publish,
    repository_lesson,
    run_hook,
)

from active_memory.recall import ledger
from active_memory.recall.engine import answer_hook
from active_memory.recall.files import sync_data
from active_memory.recall.ledger import LOCK_STRIPES, ledger_path_for, lock_path_for, read_state
from active_memory.recall.records import DELIVERIES_FILE, read_deliveries, read_receipts, run_dir

CLI = [sys.executable, "-c", "from active_memory.cli import run; run()"]
CARD = re.compile(r"\((L-\d+) r\d+\)")
FILES = ["api/a.py", "api/b.py", "api/c.py", "api/d.py"]
BUDGET = 700  # two of the four cards below fit, never three


def lessons() -> list[Any]:
    text = "Run the generator before editing; the checked-in copy is derived. " * 2
    return [repository_lesson(f"Card for {name}", text, files=[name]) for name in FILES]


class World:
    """A checkout, a store with one lesson per file of FILES, a state dir."""

    def __init__(self, tmp_path: Path) -> None:
        self.root = make_checkout(tmp_path / "api")
        self.store = tmp_path / "store" / "lessons.sqlite3"
        self.state = tmp_path / "state"
        self.env = hook_env(self.state, self.store, ACTIVE_MEMORY_BUDGET_BYTES=str(BUDGET))
        publish(self.store, lessons())

    @property
    def recall_dir(self) -> str:
        return str(self.state / "active-memory" / "recall")

    def body(self, session: str, path: str) -> bytes:
        payload = claude_payload("Read", {"file_path": str(self.root / path)},
                                 session=session, cwd=self.root)  # fmt: skip
        return json.dumps(payload).encode()

    def deliveries_lines(self, session: str) -> list[dict[str, Any]]:
        path = Path(run_dir(self.recall_dir, f"session:{session}")) / DELIVERIES_FILE
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


def context_text(answer: dict[str, Any]) -> str:
    if not answer:
        return ""
    output = answer.get("hookSpecificOutput")
    return str(output["additionalContext"]) if output else ""


# --- striped locks ---------------------------------------------------------------------


def test_a_sessions_lock_is_one_of_the_stripes_and_always_the_same() -> None:
    path = ledger_path_for("/state/recall", "s-1")
    lock = lock_path_for(path)

    assert lock == lock_path_for(ledger_path_for("/state/recall", "s-1"))
    assert os.path.dirname(lock) == "/state/recall/sessions/locks"
    assert re.fullmatch(r"[0-9a-f]{2}\.lock", os.path.basename(lock))
    stripes = {lock_path_for(ledger_path_for("/r", f"session-{n}")) for n in range(2000)}
    assert len(stripes) == LOCK_STRIPES  # every stripe used: sessions spread over all


def test_sessions_sharing_a_stripe_keep_their_own_ledgers(world: World) -> None:
    first = "s-0"
    stripe = lock_path_for(ledger_path_for(world.recall_dir, first))
    second = next(
        name
        for name in (f"s-{n}" for n in range(1, 100_000))
        if lock_path_for(ledger_path_for(world.recall_dir, name)) == stripe
    )
    payload = json.loads(world.body(first, FILES[0]))
    assert "(L-1 r1)" in context_text(answer_hook("claude", payload, world.env))
    payload = json.loads(world.body(second, FILES[0]))
    assert "(L-1 r1)" in context_text(answer_hook("claude", payload, world.env))

    for session in (first, second):
        state = read_state(ledger_path_for(world.recall_dir, session))
        assert state.delivered == {("L-1", 1)}
    # One lock file for both, none per session.
    sessions = Path(world.recall_dir) / "sessions"
    assert sorted(p.name for p in sessions.iterdir()) == sorted(
        ["locks", f"{first}.ledger", f"{second}.ledger"]
    )
    assert [p.name for p in (sessions / "locks").iterdir()] == [os.path.basename(stripe)]
    assert zlib.crc32(f"{first}.ledger".encode()) % LOCK_STRIPES == int(stripe[-7:-5], 16)


# --- a delivery is synced before the ledger moves; a crash between them loses nothing --


def test_the_delivery_is_synced_before_the_ledger_is_replaced(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[str] = []
    real_sync, real_write = os.fdatasync, ledger.write_state

    def sync(descriptor: int) -> None:
        events.append("sync " + os.path.basename(os.readlink(f"/proc/self/fd/{descriptor}")))
        real_sync(descriptor)

    def write(*args: Any) -> None:
        events.append("ledger")
        real_write(*args)

    monkeypatch.setattr(os, "fdatasync", sync)
    monkeypatch.setattr(ledger, "write_state", write)
    answer = answer_hook("claude", json.loads(world.body("s-1", FILES[0])), world.env)

    assert "(L-1 r1)" in context_text(answer)
    assert events == [f"sync {DELIVERIES_FILE}", "ledger"]


def test_a_call_that_dies_after_the_synced_delivery_is_answered_again_once(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    payload = json.loads(world.body("s-1", FILES[0]))

    def die(*args: Any) -> None:
        raise KeyboardInterrupt  # the process stops between the delivery and the ledger

    monkeypatch.setattr(ledger, "write_state", die)
    with pytest.raises(KeyboardInterrupt):
        answer_hook("claude", payload, world.env)
    monkeypatch.undo()

    # The delivery line is there (the session never saw the card: the answer was lost);
    # the ledger did not move, so the card is delivered on the next call, and the run's
    # deliveries read it once.
    assert [line["lesson"] for line in world.deliveries_lines("s-1")] == ["L-1"]
    assert read_state(ledger_path_for(world.recall_dir, "s-1")).delivered == set()
    assert "(L-1 r1)" in context_text(answer_hook("claude", payload, world.env))
    assert answer_hook("claude", payload, world.env) == {}
    recorded = read_deliveries(world.recall_dir, "session:s-1")
    assert [(r["session"], r["lesson"]) for r in recorded] == [("s-1", "L-1")]


# --- command hooks and the server on one session ---------------------------------------


class Server:
    def __init__(self, process: subprocess.Popen[str], port: int, token: str) -> None:
        self.process = process
        self.port = port
        self.token = token

    def post(self, body: bytes) -> dict[str, Any]:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/active-memory/v1/hook/claude",
            data=body,
            method="POST",
            headers={
                "Authorization": f"Bearer {self.token}",
                "Content-Type": "application/json",
                "X-Active-Memory-Env-ACTIVE_MEMORY_BUDGET_BYTES": str(BUDGET),
            },
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 200
            answer: dict[str, Any] = json.loads(response.read())
            return answer


@pytest.fixture
def server(world: World) -> Iterator[Server]:
    env = {k: v for k, v in world.env.items() if not k.startswith("ACTIVE_MEMORY_")}
    process = subprocess.Popen(
        [*CLI, "serve", "--port", "0", "--store", str(world.store)],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        banner = process.stderr.readline()
        found = re.search(r"listening on http://127\.0\.0\.1:(\d+) ", banner)
        assert found, banner
        token = (world.state / "active-memory" / "server.token").read_text().strip()
        # The command hooks below answer alone (no discovery file), so both transports
        # really write the ledger: neither forwards to the other.
        discovery = world.state / "active-memory" / "server.json"
        discovery.rename(discovery.with_suffix(".aside"))
        yield Server(process, int(found.group(1)), token)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=10)
        if process.stderr is not None:
            process.stderr.close()


def hook(world: World, body: bytes) -> dict[str, Any]:
    done = run_hook("claude", body, world.env)
    assert done.returncode == 0, done.stderr
    answer: dict[str, Any] = json.loads(done.stdout or b"{}")
    return answer


def check_session(world: World, session: str, answers: list[dict[str, Any]]) -> list[str]:
    """The cards the answers delivered; checks the ledger and the deliveries agree."""
    texts = [context_text(a) for a in answers if context_text(a)]
    cards = [card for text in texts for card in CARD.findall(text)]
    assert len(cards) == len(set(cards)), f"a card reached the session twice: {cards}"
    assert sum(len(text.encode()) for text in texts) <= BUDGET
    state = read_state(ledger_path_for(world.recall_dir, session))
    assert {card for card, _ in state.delivered} == set(cards)
    assert state.spent <= BUDGET
    assert sorted(line["lesson"] for line in world.deliveries_lines(session)) == sorted(cards)
    return cards


def test_a_hook_and_the_server_taking_turns_on_one_session(world: World, server: Server) -> None:
    session = "s-turns"
    answers = [
        server.post(world.body(session, FILES[0])),  # L-1 by the server
        hook(world, world.body(session, FILES[0])),  # the hook sees it delivered
        hook(world, world.body(session, FILES[1])),  # L-2 by the hook
        server.post(world.body(session, FILES[1])),  # the server sees it delivered
        server.post(world.body(session, FILES[2])),  # budget spent: nothing
        hook(world, world.body(session, FILES[3])),  # nor here
    ]

    assert [CARD.findall(context_text(a)) for a in answers] == [["L-1"], [], ["L-2"], [], [], []]
    assert check_session(world, session, answers) == ["L-1", "L-2"]


def test_hooks_and_the_server_racing_on_one_session(world: World, server: Server) -> None:
    session = "s-race"

    def call(n: int) -> dict[str, Any]:
        body = world.body(session, FILES[n % len(FILES)])
        return hook(world, body) if n % 2 else server.post(body)

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(call, range(16)))

    assert len(check_session(world, session, answers)) == 2  # the budget admits two
    assert server.process.poll() is None


def test_a_killed_server_loses_no_delivery_it_answered(world: World, server: Server) -> None:
    session = "s-killed"
    answers = [server.post(world.body(session, FILES[0]))]
    assert CARD.findall(context_text(answers[0])) == ["L-1"]

    server.process.send_signal(signal.SIGKILL)
    server.process.wait(timeout=10)

    # The delivery and the ledger were on disk before the answer left the server.
    assert [line["lesson"] for line in world.deliveries_lines(session)] == ["L-1"]
    answers += [
        hook(world, world.body(session, FILES[0])),
        hook(world, world.body(session, FILES[1])),
    ]
    assert [CARD.findall(context_text(a)) for a in answers] == [["L-1"], [], ["L-2"]]
    assert check_session(world, session, answers) == ["L-1", "L-2"]


# --- the server's quick path: resident runs answered on the event loop -----------------


def test_quick_calls_hand_back_a_delivering_calls_flush_and_hold_the_session_meanwhile(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    from active_memory.file_lock import FileLock, is_locked
    from active_memory.hooks.recall_answer import make_answer

    answer = make_answer(world.env)
    sent = {"ACTIVE_MEMORY_BUDGET_BYTES": str(BUDGET)}  # forwarded, as the hooks send it
    lock = lock_path_for(ledger_path_for(world.recall_dir, "s-1"))
    ledger_file = ledger_path_for(world.recall_dir, "s-1")
    flushed: list[int] = []

    def counted_sync(descriptor: int) -> None:
        flushed.append(descriptor)
        sync_data(descriptor)

    monkeypatch.setattr("active_memory.recall.ledger.sync_data", counted_sync)

    def body(path: str, session: str = "s-1") -> dict[str, Any]:
        return dict(json.loads(world.body(session, path)))

    assert answer.quick("claude", body(FILES[0]), sent) is None  # the run's first call
    assert CARD.findall(context_text(answer("claude", body(FILES[0]), sent))) == ["L-1"]
    assert len(flushed) == 1  # a thread's answer flushes inline

    # Resident now: a call that delivers nothing is answered on the loop, no commit.
    for path in (FILES[0], "README.md"):
        thunk = answer.quick("claude", body(path), sent)
        assert thunk is not None
        assert thunk() == ({}, None)

    # A delivering call: its card is chosen on the loop, its delivery line written,
    # but not flushed; the ledger is not charged and the session stays locked until the
    # commit ran (the server runs it in a thread, then sends the answer).
    thunk = answer.quick("claude", body(FILES[1]), sent)
    assert thunk is not None
    document, commit = thunk()
    assert CARD.findall(context_text(dict(document))) == ["L-2"]
    assert commit is not None
    assert [line["lesson"] for line in world.deliveries_lines("s-1")] == ["L-1", "L-2"]
    assert len(flushed) == 1
    assert is_locked(lock)
    assert ("L-2", 1) not in read_state(ledger_file).delivered
    assert answer.quick("claude", body(FILES[3]), sent) is None  # its session waits: a thread
    commit()
    assert len(flushed) == 2
    assert not is_locked(lock)
    assert ("L-2", 1) in read_state(ledger_file).delivered

    thunk = answer.quick("claude", body(FILES[2]), sent)  # L-3 no longer fits the budget
    assert thunk is not None
    assert thunk() == ({}, None)
    receipts = read_receipts(world.recall_dir, "session:s-1")
    assert [r["paths"] for r in receipts] == [
        [FILES[0]], [FILES[0]], ["README.md"], [FILES[1]], [FILES[2]]
    ]  # fmt: skip

    # Another process holds the session's lock: waiting for it belongs in a thread.
    with FileLock(lock):
        assert answer.quick("claude", body(FILES[0]), sent) is None
    # A run not pinned here yet: a thread.
    assert answer.quick("claude", body(FILES[0], "s-2"), sent) is None
    check_session(world, "s-1", [{"hookSpecificOutput": {"additionalContext": t}}
                                 for t in ("(L-1 r1)", "(L-2 r1)")])  # fmt: skip


def test_an_abandoned_commit_unlocks_the_session_and_leaves_its_ledger_uncharged(
    world: World,
) -> None:
    from active_memory.file_lock import is_locked
    from active_memory.hooks.recall_answer import make_answer

    answer = make_answer(world.env)
    sent = {"ACTIVE_MEMORY_BUDGET_BYTES": str(BUDGET)}

    def body(path: str) -> dict[str, Any]:
        return dict(json.loads(world.body("s-1", path)))

    answer("claude", body("README.md"), sent)  # pins the run: resident from now on
    thunk = answer.quick("claude", body(FILES[0]), sent)
    assert thunk is not None
    _, commit = thunk()
    assert isinstance(commit, ledger.Commit)
    commit.abandon()  # the answer never left (the server failed to send it)
    commit.abandon()  # twice is harmless

    assert not is_locked(lock_path_for(ledger_path_for(world.recall_dir, "s-1")))
    assert read_state(ledger_path_for(world.recall_dir, "s-1")).spent == 0
    # The card was never seen, so it comes again; its first line only counts once.
    again = answer("claude", body(FILES[0]), sent)
    assert CARD.findall(context_text(again)) == ["L-1"]
    assert [line["lesson"] for line in world.deliveries_lines("s-1")] == ["L-1", "L-1"]
    assert [d["lesson"] for d in read_deliveries(world.recall_dir, "session:s-1")] == ["L-1"]


def test_a_payload_that_is_not_a_hook_call_is_refused_by_the_quick_path(world: World) -> None:
    from active_memory.hooks.recall_answer import make_answer
    from active_memory.hooks.server import BadHookCall

    with pytest.raises(BadHookCall):
        make_answer(world.env).quick("claude", {"session_id": "s-1"}, {})


class Answers:
    """An answer function with a quick path; records on which thread each call ran."""

    def __init__(self, quick: bool) -> None:
        self.use_quick = quick
        self.threads: list[str] = []

    def __call__(self, harness: str, payload: Any, env: Any) -> dict[str, Any]:
        import threading

        self.threads.append(threading.current_thread().name)
        return {"n": len(self.threads)}

    def quick(self, harness: str, payload: Any, env: Any) -> Any:
        return (lambda: (self("claude", payload, env), None)) if self.use_quick else None


@pytest.mark.asyncio
@pytest.mark.parametrize("quick", [True, False])
async def test_the_app_answers_on_the_loop_only_what_quick_accepts(quick: bool) -> None:
    import threading

    from test_server_app import HOOK, TOKEN, call

    from active_memory.hooks.server import RecallApp

    answers = Answers(quick)
    status, document = await call(RecallApp(answers, TOKEN), "/active-memory/v1/hook/claude", HOOK)

    assert (status, document) == (200, {"n": 1})
    on_loop = answers.threads == [threading.current_thread().name]
    assert on_loop is quick


class Deliverer:
    """An answer function: a call of session `slow` waits in a thread until `hold` is set;
    any other call is answered quickly, delivering a card with `commit` still to run."""

    def __init__(self, commit: Any) -> None:
        import threading

        self.commit = commit
        self.hold = threading.Event()
        self.holding = threading.Event()

    def __call__(self, harness: str, payload: Any, env: Any) -> dict[str, Any]:
        self.holding.set()
        self.hold.wait(10)
        return {}

    def quick(self, harness: str, payload: Any, env: Any) -> Any:
        if payload.get("session_id") == "slow":
            return None
        return lambda: ({"card": 1}, self.commit)


@pytest.mark.asyncio
async def test_with_other_calls_in_flight_a_cards_flush_waits_in_a_thread_not_on_the_loop() -> None:
    import threading

    import anyio
    from test_server_app import HOOK, TOKEN, call

    from active_memory.hooks.server import RecallApp

    flushing, release = threading.Event(), threading.Event()
    flushed_on: list[str] = []

    def slow_flush() -> None:  # a disk that takes its time
        flushed_on.append(threading.current_thread().name)
        flushing.set()
        release.wait(10)

    answers = Deliverer(slow_flush)
    app = RecallApp(answers, TOKEN)
    results: dict[str, Any] = {}
    slow = json.dumps({**json.loads(HOOK), "session_id": "slow"}).encode()

    async def hook_call(name: str, body: bytes) -> None:
        results[name] = await call(app, "/active-memory/v1/hook/claude", body)

    async with anyio.create_task_group() as group:
        group.start_soon(hook_call, "slow", slow)  # another session's call, in a thread
        assert await anyio.to_thread.run_sync(answers.holding.wait, 10)
        group.start_soon(hook_call, "card", HOOK)
        assert await anyio.to_thread.run_sync(flushing.wait, 10)
        assert await call(app, "/active-memory/v1/health", method="GET") == (200, {"ok": True})
        assert "card" not in results  # the card leaves only once its delivery is flushed
        release.set()
        answers.hold.set()

    assert results == {"slow": (200, {}), "card": (200, {"card": 1})}
    assert flushed_on != [threading.current_thread().name]


@pytest.mark.asyncio
async def test_with_no_other_call_in_flight_a_cards_flush_runs_on_the_loop() -> None:
    import threading

    from test_server_app import HOOK, TOKEN, call

    from active_memory.hooks.server import RecallApp

    flushed_on: list[str] = []
    app = RecallApp(Deliverer(lambda: flushed_on.append(threading.current_thread().name)), TOKEN)

    assert await call(app, "/active-memory/v1/hook/claude", HOOK) == (200, {"card": 1})
    assert flushed_on == [threading.current_thread().name]  # no thread hop to pay


@pytest.mark.asyncio
async def test_a_failed_flush_answers_no_context() -> None:
    from test_server_app import HOOK, TOKEN, call

    from active_memory.hooks.server import RecallApp

    def broken_disk() -> None:
        raise OSError(5, "Input/output error")

    app = RecallApp(Deliverer(broken_disk), TOKEN)
    assert await call(app, "/active-memory/v1/hook/claude", HOOK) == (200, {})
