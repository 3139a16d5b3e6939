from __future__ import annotations

import json
from pathlib import Path

import pytest

from active_memory.cli import main

SCOPE = {"kind": "repository", "repository": "repo:github.com/acme/api"}


def _line(lesson_id: str, title: str = "Regenerate the client", **extra: object) -> str:
    record: dict[str, object] = {
        "id": lesson_id,
        "revision": 1,
        "scope": SCOPE,
        "status": "active",
        "title": title,
        "recommendation": "After editing api/schema.json run `make api-client`.",
        "associations": {"files": ["api/schema.json"]},
    }
    record.update(extra)
    return json.dumps(record)


@pytest.fixture
def store(tmp_path: Path) -> str:
    return str(tmp_path / "lessons.sqlite3")


def _write(tmp_path: Path, *lines: str) -> str:
    path = tmp_path / "lessons.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def test_list_of_a_store_that_does_not_exist_is_empty_and_creates_nothing(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["lessons", "list", "--store", store, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"lessons": [], "count": 0, "offset": 0}
    assert not Path(store).exists()


def test_import_then_export_round_trips(
    store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _write(tmp_path, _line("L-1"), _line("L-2", "Second lesson", revision=3))
    assert main(["lessons", "import", source, "--store", store, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["added"] == [["L-1", 1], ["L-2", 3]]
    assert main(["lessons", "export", "--store", store]) == 0
    exported = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(e["id"], e["revision"], e["status"]) for e in exported] == [
        ("L-1", 1, "active"),
        ("L-2", 3, "active"),
    ]
    again = tmp_path / "again.sqlite3"
    export_file = tmp_path / "export.jsonl"
    assert main(["lessons", "export", "--store", store, "-o", str(export_file)]) == 0
    assert main(["lessons", "import", str(export_file), "--store", str(again)]) == 0
    capsys.readouterr()
    assert main(["lessons", "export", "--store", str(again)]) == 0
    assert [json.loads(line) for line in capsys.readouterr().out.splitlines()] == exported


def test_import_with_a_bad_line_imports_nothing_and_names_the_line(
    store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _write(
        tmp_path,
        _line("L-1"),
        _line("L-2", "é" * 49),
        "{not json",
        _line("L-4", associations={"files": ["/etc/passwd"]}),
    )
    assert main(["lessons", "import", source, "--store", store]) == 2
    err = capsys.readouterr().err
    assert "line 2: title: is 98 bytes in UTF-8; the limit is 96 bytes" in err
    assert "line 3: not JSON" in err
    assert "line 4: associations.files[0]: '/etc/passwd' is absolute" in err
    assert "nothing was imported" in err
    assert not Path(store).exists()


def test_history_and_revert_through_the_cli(
    store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["lessons", "import", _write(tmp_path, _line("L-1", "First")), "--store", store])
    newer = tmp_path / "newer.jsonl"
    newer.write_text(_line("L-1", "Second", revision=2) + "\n")
    main(["lessons", "import", str(newer), "--store", store])
    capsys.readouterr()
    assert main(["lessons", "revert", "L-1", "--to", "1", "--store", store, "--json"]) == 0
    reverted = json.loads(capsys.readouterr().out)
    assert (reverted["revision"], reverted["title"]) == (3, "First")
    assert main(["lessons", "history", "L-1", "--store", store, "--json"]) == 0
    history = json.loads(capsys.readouterr().out)["history"]
    assert [(h["revision"], h["action"]) for h in history] == [
        (1, "import"),
        (2, "import"),
        (3, "revert"),
    ]
    assert main(["lessons", "history", "L-1", "--store", store]) == 0
    assert "revert to r1" in capsys.readouterr().out


def test_show_of_an_unknown_lesson_is_a_usage_error(
    store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["lessons", "import", _write(tmp_path, _line("L-1")), "--store", store])
    assert main(["lessons", "show", "L-404", "--store", store]) == 2
    assert "no lesson 'L-404'" in capsys.readouterr().err


def test_show_prints_card_and_history(
    store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["lessons", "import", _write(tmp_path, _line("L-1")), "--store", store])
    capsys.readouterr()
    assert main(["lessons", "show", "L-1", "--store", store]) == 0
    out = capsys.readouterr().out
    assert "Regenerate the client" in out and "api/schema.json" in out and "import" in out


def test_import_refuses_a_bare_program_and_show_prints_the_commands(
    store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bare = _line("L-1", associations={"files": ["mix.exs"], "commands": ["mix"]})
    assert main(["lessons", "import", _write(tmp_path, bare), "--store", store]) == 2
    assert "command 'mix' is a bare program, too broad" in capsys.readouterr().err
    given = _line("L-1", associations={"files": ["mix.exs"], "commands": ["cd app && mix test"]})
    assert main(["lessons", "import", _write(tmp_path, given), "--store", store]) == 0
    capsys.readouterr()
    assert main(["lessons", "show", "L-1", "--store", store]) == 0
    assert "commands: mix test" in capsys.readouterr().out


def test_store_that_is_not_sqlite_exits_2_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bogus = tmp_path / "bogus.sqlite3"
    bogus.write_text("hello")
    assert main(["lessons", "list", "--store", str(bogus)]) == 2
    assert "is not a SQLite database; nothing was changed" in capsys.readouterr().err
    assert bogus.read_text() == "hello"


def test_store_from_environment_variable(
    store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ACTIVE_MEMORY_STORE", store)
    assert main(["lessons", "import", _write(tmp_path, _line("L-1"))]) == 0
    capsys.readouterr()
    assert main(["lessons", "list", "--json"]) == 0
    assert [item["id"] for item in json.loads(capsys.readouterr().out)["lessons"]] == ["L-1"]


def test_backup_command_refuses_to_overwrite(
    store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["lessons", "import", _write(tmp_path, _line("L-1")), "--store", store])
    destination = tmp_path / "copy.sqlite3"
    assert main(["backup", str(destination), "--store", store]) == 0
    assert main(["backup", str(destination), "--store", store]) == 2
    assert "already exists" in capsys.readouterr().err


def test_revert_needs_a_revision(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["lessons", "revert", "L-1", "--store", store])
    assert caught.value.code == 2
    assert "--to" in capsys.readouterr().err


def _many(tmp_path: Path, count: int) -> str:
    lines = [_line(f"L-{n}", f"Lesson {n} title") for n in range(1, count + 1)]
    return _write(tmp_path, *lines)


def test_list_to_a_pipe_is_plain_lines_and_the_count_goes_to_stderr(
    store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["lessons", "import", _many(tmp_path, 12), "--store", store]) == 0
    capsys.readouterr()
    assert main(["lessons", "list", "--store", store]) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert len(lines) == 12 and "─" not in captured.out
    assert lines[0].split("\t")[0] == "L-1" and lines[0].split("\t")[-1] == "Lesson 1 title"
    assert captured.err.strip() == "12 lessons"


def test_list_pages_with_limit_and_offset_and_says_how_many(
    store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["lessons", "import", _many(tmp_path, 12), "--store", store]) == 0
    capsys.readouterr()
    assert main(["lessons", "list", "--store", store, "--limit", "5", "--offset", "10"]) == 0
    captured = capsys.readouterr()
    # ID order is the store's (text): L-1, L-10, L-11, L-12, L-2, …
    assert [line.split("\t")[0] for line in captured.out.splitlines()] == ["L-8", "L-9"]
    assert "showing 11-12 of 12" in captured.err
    assert main(["lessons", "list", "--store", store, "--limit", "2", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["count"] == 12 and [d["id"] for d in document["lessons"]] == ["L-1", "L-10"]
    assert main(["lessons", "list", "--store", store, "--table", "--limit", "3"]) == 0
    out = capsys.readouterr().out
    assert "12 lessons" in out and "showing 1-3 of 12" in out and "─" in out


@pytest.mark.parametrize("bad", [["--limit", "0"], ["--offset", "-1"], ["--limit", "x"]])
def test_list_refuses_a_bad_page(store: str, bad: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["lessons", "list", "--store", store, *bad])
    assert exit_info.value.code == 2
