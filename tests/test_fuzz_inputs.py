"""Fuzzing every file-reading command and the hook's stdin (issue 17, "must show").

Inputs are valid seed files mutated by hypothesis (splices of hostile fragments: deep
nesting, 5,000-digit integers, lone surrogates, U+2028/U+0085, NaN, bad UTF-8, a
truncation) or arbitrary bytes. Every command runs in-process through `cli.main`.
A command must end with exit 0, 1 or 2; a failure is one `active-memory: …` message,
never a traceback; and exit 2 leaves the store exactly as it was. The hook must answer
exit 0 whatever its stdin. Bounded: a few dozen examples per command, no deadline.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO_ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from active_memory.cli import main
from active_memory.hooks import command

EXAMPLES = REPO_ROOT / "examples"
SESSIONS = REPO_ROOT / "tests" / "fixtures" / "sessions"

HOSTILE = [
    b"[" * 5000,
    b'{"a":' * 3000,
    b"1" * 5000,
    b'"\\ud800"',
    b'"\\udfff x"',
    "\u2028\u2029\u0085".encode(),
    b"NaN",
    b"-Infinity",
    b"1e999",
    b"\xff\xfe\x00",
    b"\xed\xa0\x80",
    b"\x00",
    b"\n",
    b"\r\n",
    b'"' + b"x" * 70000 + b'"',
    b"{}",
    b"[]",
    b"null",
]

FUZZ = settings(
    max_examples=int(os.environ.get("ACTIVE_MEMORY_FUZZ_EXAMPLES", "30")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=True,
)


@st.composite
def mutated(draw: st.DrawFn, seed: bytes) -> bytes:
    """`seed` with one to three hostile edits, or arbitrary bytes."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.binary(max_size=4000))
    data = seed
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(["insert", "replace", "truncate", "delete"]))
        fragment = draw(st.sampled_from(HOSTILE))
        if kind == "insert":
            data = data[:where] + fragment + data[where:]
        elif kind == "replace":
            data = data[:where] + fragment + data[where + len(fragment) :]
        elif kind == "truncate":
            data = data[:where]
        else:
            data = data[:where] + data[where + draw(st.integers(1, 200)) :]
    return data


def run(argv: list[str], stdin: bytes = b"") -> tuple[int, str]:
    """`cli.main(argv)` in-process: (exit code, stderr)."""
    err = io.StringIO()
    out = io.StringIO()
    stream = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        saved, sys.stdin = sys.stdin, stream
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse
            code = int(exc.code or 0)
        finally:
            sys.stdin = saved
    return code, err.getvalue()


def check_outcome(code: int, err: str) -> None:
    assert code in (0, 1, 2), f"exit {code}: {err}"
    assert "Traceback" not in err, err
    if code != 0:
        assert err.startswith("active-memory: "), err
        assert "internal error" not in err, err


def store_digest(path: Path) -> str:
    if not path.exists():
        return "absent"
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return hashlib.sha256("\n".join(connection.iterdump()).encode()).hexdigest()
    finally:
        connection.close()


@pytest.fixture
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("fuzz")
    state = folder / "state"
    saved = {k: os.environ.get(k) for k in ("ZEROSHOT_STATE_DIR", "ACTIVE_MEMORY_STORE")}
    os.environ["ZEROSHOT_STATE_DIR"] = str(state)
    os.environ.pop("ACTIVE_MEMORY_STORE", None)
    code, err = run(["lessons", "import", str(EXAMPLES / "lessons.jsonl")])
    assert code == 0, err
    try:
        yield folder
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def store_of(world: Path) -> Path:
    return world / "state" / "active-memory" / "lessons.sqlite3"


LESSONS_SEED = (EXAMPLES / "lessons.jsonl").read_bytes()
RUN_SEED = (EXAMPLES / "run.json").read_bytes()
RUNTIME_SEED = (REPO_ROOT / "config.example.json").read_bytes()
GRAPH = REPO_ROOT / "software-change.graph.json"
RUNTIME_SEED_FILE = REPO_ROOT / "config.example.json"
CLAUDE_SEED = (SESSIONS / "claude-session.jsonl").read_bytes()[:6000]
CODEX_SEED = (SESSIONS / "codex-rollout.jsonl").read_bytes()[:6000]


@FUZZ
@given(data=mutated(LESSONS_SEED))
def test_lessons_import_survives_any_file_and_refusals_change_nothing(
    world: Path, data: bytes
) -> None:
    source = world / "in.jsonl"
    source.write_bytes(data)
    before = store_digest(store_of(world))
    code, err = run(["lessons", "import", str(source)])
    check_outcome(code, err)
    if code == 2:
        assert store_digest(store_of(world)) == before


@FUZZ
@given(data=mutated(LESSONS_SEED))
def test_lessons_import_from_stdin_survives_anything(world: Path, data: bytes) -> None:
    before = store_digest(store_of(world))
    code, err = run(["lessons", "import", "-"], stdin=data)
    check_outcome(code, err)
    if code == 2:
        assert store_digest(store_of(world)) == before


@FUZZ
@given(data=mutated(RUN_SEED))
def test_evidence_survives_any_run_record(world: Path, data: bytes) -> None:
    source = world / "run.json"
    source.write_bytes(data)
    check_outcome(*run(["evidence", str(source)]))


@FUZZ
@given(data=mutated(RUNTIME_SEED))
def test_config_check_survives_any_runtime_json(world: Path, data: bytes) -> None:
    source = world / "runtime.json"
    source.write_bytes(data)
    check_outcome(*run(["config", "check", str(source), "--graph", str(GRAPH)]))


@FUZZ
@given(data=mutated(GRAPH.read_bytes()[:20000]))
def test_config_check_survives_any_graph(world: Path, data: bytes) -> None:
    source = world / "graph.json"
    source.write_bytes(data)
    check_outcome(*run(["config", "check", str(RUNTIME_SEED_FILE), "--graph", str(source)]))


@FUZZ
@given(data=mutated(RUN_SEED[:20000]))
def test_postmortem_config_and_graph_survive_anything(world: Path, data: bytes) -> None:
    source = world / "bad.json"
    source.write_bytes(data)
    before = store_digest(store_of(world))
    for option in ("--config", "--graph"):
        code, err = run(["postmortem", str(EXAMPLES / "run.json"), option, str(source)])
        check_outcome(code, err)
        if code == 2:
            assert store_digest(store_of(world)) == before


@FUZZ
@given(data=mutated(CLAUDE_SEED), kind=st.sampled_from(["claude", "codex"]))
def test_session_imports_survive_any_log(world: Path, data: bytes, kind: str) -> None:
    source = world / "session.jsonl"
    source.write_bytes(data if kind == "claude" else data.replace(CLAUDE_SEED, CODEX_SEED))
    out = world / "records"
    out.mkdir(exist_ok=True)
    check_outcome(*run(["import", kind, str(source), "--out", str(out), "--force"]))


@FUZZ
@given(data=mutated(b'{"tool_name": "Edit", "tool_input": {"file_path": "api/schema.json"}}'))
def test_recall_tool_json_file_survives_anything(world: Path, data: bytes) -> None:
    source = world / "tool.json"
    source.write_bytes(data)
    check_outcome(*run(["recall", f"@{source}", "--session", "s", "--cwd", str(REPO_ROOT)]))


HOOK_SEED = json.dumps(
    {
        "session_id": "s",
        "hook_event_name": "PreToolUse",
        "cwd": str(REPO_ROOT),
        "tool_name": "Edit",
        "tool_input": {"file_path": str(REPO_ROOT / "README.md"), "old_string": "a"},
    }
).encode()


@FUZZ
@given(data=mutated(HOOK_SEED), harness=st.sampled_from(["claude", "codex", "after-tool"]))
def test_the_hook_answers_exit_0_whatever_its_stdin(world: Path, data: bytes, harness: str) -> None:
    out = io.StringIO()
    stream = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")
    saved, sys.stdin = sys.stdin, stream
    try:
        with contextlib.redirect_stdout(out):
            code = command.main([harness, "stray-argument"])
    finally:
        sys.stdin = saved
    assert code == 0
    text = out.getvalue().strip()
    if text and harness != "after-tool":
        json.loads(text)
