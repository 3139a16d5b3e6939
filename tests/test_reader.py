"""The one bounded reader (issue 17 items 6, 8, 12): regular files only, size caps,
strict JSON with file and line, JSON Lines lines, and every reader routed through it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from recall_support import REPO_ROOT, claude_payload, hook_env, make_checkout, repository_lesson
from recall_support import publish as publish_lessons
from test_server_app import TOKEN, Recorder, call

from active_memory import reader
from active_memory.cli import main
from active_memory.errors import InvalidRecord, UsageError
from active_memory.hooks.server import RecallApp
from active_memory.recall.environment import read_remote_url

# --- regular files only ------------------------------------------------------------


def fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def test_a_fifo_a_device_and_a_folder_are_refused_without_blocking(tmp_path: Path) -> None:
    pipe = fifo(tmp_path / "pipe.json")
    for path, reason in (
        (pipe, "is a FIFO (named pipe)"),
        (Path("/dev/zero"), "is a device"),
        (tmp_path, "is a folder"),
    ):
        with pytest.raises(UsageError) as caught:
            reader.load_json(path, "run record")
        assert str(caught.value) == (
            f"{path}: {reason}, not a run record; give the path of a regular file"
        )


def test_a_missing_file_names_what_was_expected(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"absent.json: no such graph; check the path$"):
        reader.load_json(tmp_path / "absent.json", "graph")


def test_a_file_over_the_cap_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_bytes(b"[" + b"1," * 600 + b"1]")
    with pytest.raises(UsageError, match="larger than"):
        reader.read_input(path, "run record", limit=1000)


@pytest.mark.parametrize(
    "argv",
    [
        ["lessons", "import", "{f}"],
        ["evidence", "{f}"],
        ["config", "check", "{f}", "--graph", "{f}"],
        ["import", "claude", "{f}"],
        ["import", "codex", "{f}"],
        ["postmortem", "{f}"],
    ],
)
def test_every_file_reading_command_refuses_a_fifo_with_exit_2(
    tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    pipe = fifo(tmp_path / "input")
    # A writer that never comes would hang a blocking open: fail the test instead.
    timer = threading.Timer(10, lambda: os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))
    timer.start()
    try:
        code = main([part.format(f=pipe) for part in argv])
    finally:
        timer.cancel()
    err = capsys.readouterr().err
    assert code == 2, err
    assert "FIFO" in err and len(err.strip().splitlines()) == 1


# --- strict JSON ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ('{\n "a": ' + "[" * 5000 + "]" * 5000 + "}", "nested deeper than 128 levels", 2),
        ('{\n "a": ' + "[" * 200 + "]" * 200 + "}", "nested deeper than 128 levels", 2),
        ('{\n\n "n": ' + "7" * 5000 + "}", "does not fit 64 bits", 3),
        ('{"n": 9223372036854775808}', "does not fit 64 bits", 1),
        ('{\n "t": "\\ud800"}', "lone surrogate", 2),
        ('{"\\udfff": 1}', "lone surrogate", 1),
        ('{"x": NaN}', "NaN is not JSON", 1),
        ('{"x": 1e999}', "out of range", 1),
        ('{\n  "a" 1}', "not valid JSON", 2),
    ],
)
def test_hostile_json_is_an_invalid_record_naming_the_line(
    tmp_path: Path, text: str, message: str, line: int
) -> None:
    path = tmp_path / "doc.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InvalidRecord) as caught:
        reader.load_json(path, "run record")
    assert message in str(caught.value)
    assert caught.value.line == line
    assert str(caught.value).startswith(f"{path}:{line}: ")


def test_bad_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "doc.json"
    path.write_bytes(b'{\n"a":\n"caf\xe9"}')
    with pytest.raises(InvalidRecord, match=r":3: not UTF-8 text"):
        reader.load_json(path, "config")


# --- JSON Lines ----------------------------------------------------------------------


def test_only_newline_ends_a_json_lines_line(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    values = [{"t": "a\u2028b"}, {"t": "c\u2029d\u0085e"}, {"t": "f\rg"}]
    path.write_text("\n".join(json.dumps(v, ensure_ascii=False) for v in values) + "\r\n")
    assert [v for _, v in reader.iter_json_lines(path, "lessons")] == values


def test_an_overlong_line_is_one_problem_and_the_next_lines_still_count(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"a": "' + b"x" * 5000 + b'"}\n{"b": 1}\n')
    found = list(reader.iter_json_lines(path, "lessons", limit=100))
    assert isinstance(found[0][1], reader.LineProblem)
    assert found[1] == (2, {"b": 1})


def test_a_card_with_line_separators_round_trips_through_export_and_import(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "a.sqlite3"
    text = "Run make\u2028then check\u2029the diff\u0085twice."
    publish_lessons(store, [repository_lesson("Wrapper", text, files=["api/x.json"])])
    export = tmp_path / "out.jsonl"
    assert main(["lessons", "export", "-o", str(export), "--store", str(store)]) == 0
    assert export.read_bytes().count(b"\n") == 1
    other = tmp_path / "b.sqlite3"
    code = main(["lessons", "import", str(export), "--store", str(other)])
    assert code == 0, capsys.readouterr().err
    again = tmp_path / "again.jsonl"
    assert main(["lessons", "export", "-o", str(again), "--store", str(other)]) == 0
    (line,) = again.read_text(encoding="utf-8").split("\n")[:-1]
    assert json.loads(line)["recommendation"] == text


# --- hook, server, .git/config ---------------------------------------------------------


def test_a_fifo_as_git_config_does_not_hang_recall(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    fifo(root / ".git" / "config")
    started = time.monotonic()
    assert read_remote_url(str(root)) is None
    assert time.monotonic() - started < 5


def test_the_hook_with_a_fifo_git_config_answers_at_once(tmp_path: Path) -> None:
    root = make_checkout(tmp_path / "api")
    config = root / ".git" / "config"
    config.unlink()
    fifo(config)
    store = tmp_path / "store" / "lessons.sqlite3"
    publish_lessons(store, [repository_lesson("Use the wrapper", files=["api/schema.json"])])
    payload = claude_payload(
        "Edit",
        {"file_path": str(root / "api/schema.json"), "old_string": "a", "new_string": "b"},
        session="s",
        cwd=root,
    )
    result = subprocess.run(
        [sys.executable, "-m", "active_memory.hooks.command", "claude", "stray"],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=hook_env(tmp_path / "state", store),
        cwd=str(REPO_ROOT),
        timeout=30,
        check=False,
    )
    assert result.returncode == 0


@pytest.mark.parametrize("extra", [["stray"], ["--flag", "x"], ["-"], ["claude", "codex"]])
def test_the_hook_never_exits_2_on_stray_arguments(
    extra: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    assert main(["hook", "claude", *extra]) == 0
    assert capsys.readouterr().out == ""


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "body",
    [b"[" * 100000, b'{"a": ' + b"1" * 5000 + b"}", b'{"a": "\\ud800"}', b"\xff\xfe"],
)
async def test_a_hostile_http_body_is_400_never_a_traceback(body: bytes) -> None:
    answer = Recorder()
    status, document = await call(RecallApp(answer, TOKEN), "/active-memory/v1/hook/claude", body)
    assert status == 400
    assert "Traceback" not in json.dumps(document)
    assert answer.calls == []


@pytest.mark.parametrize(
    "answer",
    ["[" * 5000 + "]" * 5000, "[" * 300 + "]" * 300, '{"n": ' + "9" * 30 + "}", '{"t": "\\udc00"}'],
)
def test_a_hostile_model_answer_is_a_not_json_problem_never_an_exception(answer: str) -> None:
    from active_memory.specialists.providers.base import decode_answer

    value, problem = decode_answer(answer)
    assert value is None and problem is not None
    assert problem.kind == "not_json"


def test_a_settings_file_that_is_a_fifo_or_too_deep_is_a_settings_error(tmp_path: Path) -> None:
    from active_memory.settings import SettingsError, _parse

    pipe = fifo(tmp_path / "settings.toml")
    with pytest.raises(SettingsError, match="is a FIFO"):
        _parse(str(pipe))
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 3000 + "]" * 3000 + "\n", encoding="utf-8")
    with pytest.raises(SettingsError, match="nested too deeply"):
        _parse(str(deep))
