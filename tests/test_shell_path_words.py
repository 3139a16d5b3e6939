"""Which shell words are paths (recall/shell_paths.py), on the real spotter sessions.

The five public Claude Code sessions of marot/spotter (tests/fixtures/spotter/), each
replayed in a checkout of the repository at the commit it started from (the learning
bench's spotter sequence, tests/fixtures/learning/spotter/): their shell calls say
`bd close spotter-gqc.7`, `git push origin master`, `git log master..HEAD`,
`chmod +x …`. Before, every such word was a path signal, so the hook's receipts, and from
them the discovery tasks' `files`, held `close`, `origin`, `master..HEAD` and `+x` as
missing files, and folders as `not_a_file` entries.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT

from active_memory.recall.signals import extract_signals
from active_memory.recall.types import ToolCall

sys.path.insert(0, str(REPO_ROOT / "bench"))

from learning.calls import Call, session_calls
from learning.replay import replay
from learning.sequence import PreparedSession, load_sequence, prepare
from learning.steps import environment, import_session

from active_memory.checkout import Checkout
from active_memory.recall.shell_paths import has_file_suffix, is_path_argument
from active_memory.runlog.record import load_run_record
from active_memory.specialists.tasks import build_discovery

SPOTTER = REPO_ROOT / "tests" / "fixtures" / "learning" / "spotter"
BARE_WORDS = ("close", "origin", "master..HEAD", "+x", "in_progress", "show", "update")
"""Words of the sessions' shell calls that name no file (bd's verbs and states, a remote,
a revision range, a chmod mode)."""


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> list[PreparedSession]:
    return prepare(load_sequence(SPOTTER / "sequence.json"), tmp_path_factory.mktemp("spotter"))


def _calls(session: PreparedSession) -> list[Call]:
    return session_calls("claude", session.log, session.checkout)[1]


def _shell_text(sessions: list[PreparedSession]) -> str:
    return "\n".join(
        str(call.tool_input.get("command", ""))
        for session in sessions
        for call in _calls(session)
        if call.tool == "Bash"
    )


def test_the_sessions_do_say_the_bare_words(sessions: list[PreparedSession]) -> None:
    # The test can fail: the words are really in the recorded commands.
    text = _shell_text(sessions)
    for word in BARE_WORDS:
        assert f" {word}" in text, word


def test_the_hook_reads_no_bare_shell_word_as_a_path(sessions: list[PreparedSession]) -> None:
    every: set[str] = set()
    bare_missing: set[str] = set()
    for session in sessions:
        root = str(session.checkout)
        for call in _calls(session):
            tool_call = ToolCall("claude", call.tool, call.tool_input, cwd=call.cwd)
            paths = list(extract_signals(tool_call, root).paths)
            every.update(paths)
            bare_missing.update(
                p
                for p in paths
                if "/" not in p and not has_file_suffix(p) and not (session.checkout / p).exists()
            )
    # A path without a folder or a suffix names something in the checkout; the one
    # exception is `deps`, the literal folder of `grep -r … deps/opentelemetry*/src/` (a
    # glob's folder is a folder signal), left out of the reduced fixture repository.
    assert bare_missing == {"deps"}
    assert not every & set(BARE_WORDS)
    assert not any(".." in p.replace("../", "") for p in every)
    # What the sessions really touched is still read.
    assert {"mix.exs", "assets/build.js", "config/test.exs"} <= every
    assert any(p.startswith("priv/static/assets") for p in every)


@pytest.mark.parametrize(
    ("word", "program", "exists", "expected"),
    [
        ("close", "bd", False, False),
        ("origin", "git", False, False),
        ("master..HEAD", "git", True, False),
        ("+x", "chmod", True, False),
        ("HEAD:lib/a.ex", "git", True, False),
        ("spotter-gqc.7", "bd", False, False),
        ("Makefile", "git", True, True),  # exists
        ("test", "mix", True, True),  # exists (a verb is dropped before: without_verbs)
        ("newdir", "mkdir", False, True),  # its arguments are files
        ("app.css", "git", False, True),  # a file suffix
        (".gitignore", "git", False, True),
        ("priv/static/assets", "git", False, True),  # a folder part
        ("../elsewhere/x", "cat", False, True),  # a parent-relative path
        ("Phoenix.LiveView", "find", False, False),  # a module, looked up: not there
        ("highlight.js", "npm install", True, False),  # a package
        ("./vendor/pkg", "npm install", False, True),
    ],
)  # fmt: skip
def test_the_rule_for_one_word(word: str, program: str, exists: bool, expected: bool) -> None:
    asked: list[str] = []

    def lookup(text: str) -> bool:
        asked.append(text)
        return exists

    assert is_path_argument(word, program, lookup) is expected
    # Only a bare word of a program whose arguments are not files is looked up.
    bare = "/" not in word and not has_file_suffix(word) and program not in ("mkdir", "npm install")
    assert (asked == [word]) is (bare and not word.startswith("+") and ".." not in word
                                 and ":" not in word)  # fmt: skip


def test_an_options_value_is_a_path_only_by_the_same_rule() -> None:
    root = "/work/api"
    reason = 'bd close x-1 --reason="Rebuilt the panel: rows/columns fixed" --out=build/r.json'
    found = extract_signals(ToolCall("claude", "Bash", {"command": reason}, cwd=root), root)
    assert list(found.paths) == ["build/r.json"]


def test_the_task_of_a_session_shows_no_bare_word_and_no_folder_as_a_file(
    sessions: list[PreparedSession], tmp_path: Path
) -> None:
    # The first session, end to end: its calls through the hook's recall path (the
    # receipts), `active-memory import`, and the repository-discovery task.
    session = next(s for s in sessions if s.session_id.startswith("258c7280"))
    env = environment(tmp_path / "state")
    replayed = replay("claude", session.session_id, session.log, _calls(session), env)
    assert not replayed.errors
    record_path = import_session("claude", session.log, tmp_path / "run.json", env)
    record = load_run_record(record_path)
    touched = {p for receipt in record.receipts for p in receipt.paths}
    assert touched and not touched & set(BARE_WORDS)
    task = build_discovery("repository_discovery", record, checkout=Checkout(session.checkout))
    shown = {file.path: file.status for file in task.files}
    assert "not_a_file" not in shown.values()
    bare_missing = [p for p, status in shown.items() if status == "missing" and "/" not in p
                    and not has_file_suffix(p)]  # fmt: skip
    assert bare_missing == []
    # The folders the session listed or searched are in the listing instead.
    assert {"", "lib/spotter_web"} <= {listing.folder for listing in task.listing}
