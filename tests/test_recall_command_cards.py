"""Cards for commands (SPEC §8): a shell call's command family matches a lesson's
`commands` association, scored 600, wrappers (`cd … &&`, `timeout N`, …) stripped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from recall_support import (
    claude_payload,
    codex_payload,
    hook_env,
    make_checkout,
    opencode_payload,
    publish,
    repository_lesson,
)

from active_memory.recall.build_from_rows import build
from active_memory.recall.engine import answer_hook, answer_tool_call
from active_memory.recall.environment import resolve_context
from active_memory.recall.harness import parse_payload
from active_memory.recall.index import SnapshotIndex
from active_memory.recall.match import match
from active_memory.recall.signals import Signals, extract_signals
from active_memory.recall.types import MATCH_SCORES

ROOT = "/work/api"
DATABASE = "Start the database with `docker compose up -d db` before `mix test`."


def _families(harness: str, payload: dict[str, Any]) -> list[str]:
    return list(extract_signals(parse_payload(harness, payload), ROOT).commands)


# --- the family of each harness's shell call -------------------------------------------


@pytest.mark.parametrize(
    ("harness", "payload"),
    [
        ("claude", claude_payload("Bash", {"command": "cd app && timeout 60 mix test test/foo_test.exs"}, session="s", cwd=ROOT)),  # noqa: E501
        ("codex", codex_payload("Bash", {"command": "cd app && timeout 60 mix test"}, session="s", cwd=ROOT)),  # noqa: E501
        ("codex", codex_payload("exec_command", {"cmd": "timeout 60 mix test", "workdir": "app"}, session="s", cwd=ROOT)),  # noqa: E501
        ("codex", codex_payload("shell", {"command": ["bash", "-lc", "cd app && mix test"]}, session="s", cwd=ROOT)),  # noqa: E501
        ("gemini", {"session_id": "s", "cwd": ROOT, "tool_name": "run_shell_command", "tool_input": {"command": "MIX_ENV=test mix test", "description": "tests"}}),  # noqa: E501
        ("copilot", {"sessionId": "s", "cwd": ROOT, "toolName": "bash", "toolArgs": {"command": "cd app && mix test 2>&1 | tail -20", "description": "tests"}}),  # noqa: E501
        ("copilot", {"sessionId": "s", "cwd": ROOT, "toolName": "bash", "toolArgs": json.dumps({"command": "env MIX_ENV=test mix test"})}),  # noqa: E501
        ("pi", {"tool": "bash", "args": {"command": "nohup mix test"}, "sessionID": "s", "cwd": ROOT}),  # noqa: E501
        ("after-tool", opencode_payload("bash", {"command": "time mix test --trace"}, session="s", cwd=ROOT)),  # noqa: E501
    ],
)  # fmt: skip
def test_every_harness_shell_call_gives_its_family(harness: str, payload: dict[str, Any]) -> None:
    assert _families(harness, payload) == ["mix test"]


def test_every_working_command_of_a_chain_is_a_family() -> None:
    payload = claude_payload(
        "Bash", {"command": "git add -A && git commit -m 'x' && git push"}, session="s", cwd=ROOT
    )
    assert _families("claude", payload) == ["git add", "git commit", "git push"]


def test_a_file_tool_gives_no_family() -> None:
    payload = claude_payload("Read", {"file_path": f"{ROOT}/mix.exs"}, session="s", cwd=ROOT)
    assert _families("claude", payload) == []


def test_a_command_is_scored_between_identifiers_and_keyword_groups() -> None:
    assert MATCH_SCORES["identifier"] > MATCH_SCORES["command"] == 600 > MATCH_SCORES["keywords"]


# --- delivered with the command, end to end over a real store ------------------------------


class World:
    def __init__(self, tmp_path: Path) -> None:
        self.root = make_checkout(tmp_path / "api")
        (self.root / "app" / "test").mkdir(parents=True)
        self.store = tmp_path / "lessons.sqlite3"
        self.env = hook_env(tmp_path / "state", self.store)

    def bash(self, command: str, session: str = "s-1") -> str:
        payload = claude_payload("Bash", {"command": command}, session=session, cwd=self.root)
        answer = answer_hook("claude", payload, self.env)
        return str(answer["hookSpecificOutput"]["additionalContext"]) if answer else ""


@pytest.fixture
def world(tmp_path: Path) -> World:
    made = World(tmp_path)
    publish(
        made.store,
        [
            repository_lesson("Start the database first", DATABASE, commands=["mix test"]),
            repository_lesson(
                "Push with an upstream", "Use `git push -u origin HEAD`.", commands=["git push"]
            ),
        ],
    )
    return made


def test_a_mix_test_lesson_arrives_with_a_wrapped_mix_test(world: World) -> None:
    context = world.bash("cd app && timeout 60 mix test test/foo_test.exs")
    assert DATABASE in context
    assert "git push -u origin HEAD" not in context


@pytest.mark.parametrize("command", ["mix format", "cd app && mix compile", "mix", "ls test"])
def test_another_command_of_the_program_receives_nothing(world: World, command: str) -> None:
    assert world.bash(command) == ""


def test_a_command_card_is_delivered_once_per_session(world: World) -> None:
    assert DATABASE in world.bash("mix test")
    assert world.bash("timeout 120 mix test test/foo_test.exs") == ""
    assert DATABASE in world.bash("mix test", session="s-2")


def test_the_match_is_reported_as_a_command_scored_600(world: World) -> None:
    payload = claude_payload("Bash", {"command": "git push"}, session="s-1", cwd=world.root)
    call = parse_payload("claude", payload)
    answer = answer_tool_call(call, resolve_context(call, world.env))
    [card] = answer.cards
    assert (card.match, card.score) == ("command", 600)


def test_a_file_match_outranks_a_command_match(tmp_path: Path) -> None:
    world = World(tmp_path)
    publish(
        world.store,
        [
            repository_lesson("By command", "Start the database first.", commands=["mix test"]),
            repository_lesson("By file", "Use the sandbox.", files=["app/test/foo_test.exs"]),
        ],
    )
    payload = claude_payload(
        "Bash", {"command": "cd app && mix test test/foo_test.exs"}, session="s", cwd=world.root
    )
    call = parse_payload("claude", payload)
    answer = answer_tool_call(call, resolve_context(call, world.env))
    assert [(c.id, c.match) for c in answer.cards] == [("L-2", "file"), ("L-1", "command")]


# --- the index: command keys in complete and incremental generations -----------------------


def _row(n: int, revision: int = 1, status: str = "active", **associations: Any) -> tuple[Any, ...]:
    if status != "active":
        return (f"L-{n}", revision, status, None, None, None)
    return (f"L-{n}", revision, status, f"Lesson {n}", "Do it.", json.dumps(associations))


def _commands(*families: str) -> Signals:
    found = Signals()
    found.commands.update(dict.fromkeys(families))
    return found


def _open(
    previous: SnapshotIndex | None, rows: list[Any], tmp_path: Path, name: str
) -> SnapshotIndex:
    return SnapshotIndex.open(build(previous, rows, {}, matched=True, path=str(tmp_path / name)))


def test_incremental_generations_add_change_and_drop_command_keys(tmp_path: Path) -> None:
    rows = [_row(n, files=[f"src/{n}.py"]) for n in range(1, 80)]
    rows.append(_row(80, commands=["mix test"]))
    first = _open(None, rows, tmp_path, "g0")
    assert [h.id for h in match(first, _commands("mix test"))] == ["L-80"]

    changes = [
        _row(80, 2, commands=["mix ecto.migrate"]),  # adapted: a new family
        _row(5, 2, files=["src/5.py"], commands=["mix test"]),  # gains one
        _row(81, commands=["git push"]),  # new
    ]
    second = _open(first, changes, tmp_path, "g1")
    # Incremental: the card shards the changes did not touch are the same bytes.
    assert first.raw("cards", 1) == second.raw("cards", 1)
    assert [h.id for h in match(second, _commands("mix test"))] == ["L-5"]
    assert [h.id for h in match(second, _commands("mix ecto.migrate", "git push"))] == [
        "L-80",
        "L-81",
    ]
    third = _open(second, [_row(5, 3, "retired")], tmp_path, "g2")
    state = [r for r in rows if r[0] not in ("L-5", "L-80")] + [changes[0], changes[2]]
    complete = _open(None, state, tmp_path, "full")
    for query in (_commands("mix test"), _commands("mix ecto.migrate", "git push")):
        assert [h.id for h in match(third, query)] == [h.id for h in match(complete, query)]
    assert match(third, _commands("mix test")) == []
