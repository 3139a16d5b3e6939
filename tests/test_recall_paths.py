"""Which file a relative path names (SPEC §8): the tool's cwd first, then the workspace
root; both readings tried for folders; `file::test`, `file:line`, `file:line:col`.

Every case is answered end to end (a real store, a frozen snapshot, the matcher) from
three working directories: the root `repo/`, `repo/src/`, and `repo/docs/guide/`, a
sub-folder outside every lesson's files and folders.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from recall_support import hook_env, make_checkout, publish, repository_lesson

from active_memory.recall.engine import answer_tool_call
from active_memory.recall.environment import resolve_context
from active_memory.recall.signals import extract_signals, split_location
from active_memory.recall.types import ToolCall

FILES = (
    "src/a.py",
    "src/api/client.py",
    "tests/test_cart.py",
    "docs/guide/intro.md",
)
CWDS = ("", "src", "docs/guide")


class Repo:
    """A checkout with four files and three lessons: a file each for `src/a.py` (L-1)
    and `tests/test_cart.py` (L-3), the folder `src/api` (L-2)."""

    def __init__(self, tmp_path: Path) -> None:
        self.root = make_checkout(tmp_path / "repo")
        for name in FILES:
            (self.root / name).parent.mkdir(parents=True, exist_ok=True)
            (self.root / name).write_text("x\n")
        self.store = tmp_path / "lessons.sqlite3"
        self.env = hook_env(tmp_path / "state", self.store)
        publish(
            self.store,
            [
                repository_lesson("A module", files=["src/a.py"]),
                repository_lesson("The API client", folders=["src/api"]),
                repository_lesson("Cart tests", files=["tests/test_cart.py"]),
            ],
        )

    def call(self, tool: str, tool_input: dict[str, Any], cwd: str) -> ToolCall:
        folder = self.root / cwd if cwd else self.root
        return ToolCall("claude", tool, tool_input, session="s", cwd=str(folder))

    def cards(self, tool: str, tool_input: dict[str, Any], cwd: str) -> list[tuple[str, str]]:
        call = self.call(tool, tool_input, cwd)
        answer = answer_tool_call(call, resolve_context(call, self.env, dry_run=True))
        return [(hit.id, hit.match) for hit in answer.cards]

    def paths(self, tool: str, tool_input: dict[str, Any], cwd: str) -> list[str]:
        return list(extract_signals(self.call(tool, tool_input, cwd), str(self.root)).paths)


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return Repo(tmp_path)


@pytest.mark.parametrize("cwd", CWDS)
def test_a_root_relative_file_path_is_found_from_every_working_directory(
    repo: Repo, cwd: str
) -> None:
    assert repo.cards("Read", {"file_path": "src/a.py"}, cwd) == [("L-1", "file")]
    assert repo.paths("Read", {"file_path": "src/a.py"}, cwd) == ["src/a.py"]
    assert repo.cards("Bash", {"command": "cat src/a.py"}, cwd) == [("L-1", "file")]


def test_a_path_relative_to_the_working_directory_wins_when_it_names_a_file(
    repo: Repo,
) -> None:
    assert repo.cards("Read", {"file_path": "a.py"}, "src") == [("L-1", "file")]
    # `tests/test_cart.py` exists under `src/` too: the agent in `src/` means that one
    (repo.root / "src" / "tests").mkdir()
    (repo.root / "src" / "tests" / "test_cart.py").write_text("y\n")
    assert repo.paths("Read", {"file_path": "tests/test_cart.py"}, "src") == [
        "src/tests/test_cart.py"
    ]
    assert repo.cards("Read", {"file_path": "tests/test_cart.py"}, "src") == []
    # from the root the root's file is meant
    assert repo.cards("Read", {"file_path": "tests/test_cart.py"}, "") == [("L-3", "file")]


@pytest.mark.parametrize("cwd", CWDS)
@pytest.mark.parametrize(
    "command",
    [
        "pytest tests/test_cart.py::test_total",
        "pytest -q tests/test_cart.py::TestCart::test_total[2-items]",
        "python -m pytest 'tests/test_cart.py::test_total' -x",
    ],
)
def test_a_pytest_node_id_in_a_shell_argument_names_the_file(
    repo: Repo, cwd: str, command: str
) -> None:
    assert repo.cards("Bash", {"command": command}, cwd) == [("L-3", "file")]
    assert "tests/test_cart.py" in repo.paths("Bash", {"command": command}, cwd)


@pytest.mark.parametrize("cwd", CWDS)
@pytest.mark.parametrize("location", ["src/a.py:12", "src/a.py:12:5", "src/a.py::helper"])
def test_file_line_and_column_forms_name_the_file(repo: Repo, cwd: str, location: str) -> None:
    assert repo.cards("Read", {"file_path": location}, cwd) == [("L-1", "file")]
    assert repo.cards("Bash", {"command": f"code -g {location}"}, cwd) == [("L-1", "file")]
    assert repo.paths("Bash", {"command": f"code -g {location}"}, cwd) == ["src/a.py"]


@pytest.mark.parametrize("cwd", CWDS)
def test_a_folder_is_found_against_the_working_directory_or_the_root(repo: Repo, cwd: str) -> None:
    assert repo.cards("Bash", {"command": "ls src/api"}, cwd) == [("L-2", "folder")]
    assert repo.cards("Read", {"file_path": "src/api/client.py:3"}, cwd) == [("L-2", "folder")]
    assert repo.cards("Glob", {"pattern": "src/api/**/*.py"}, cwd) == [("L-2", "folder")]


def test_a_folder_relative_to_src_is_found_from_src(repo: Repo) -> None:
    assert repo.cards("Bash", {"command": "ls api"}, "src") == [("L-2", "folder")]
    assert repo.cards("Bash", {"command": "ls api"}, "") == []
    assert repo.cards("Bash", {"command": "ls api"}, "docs/guide") == []


def test_a_new_file_tries_both_readings_for_folders_but_is_written_where_the_cwd_says(
    repo: Repo,
) -> None:
    write = {"file_path": "src/api/new.py", "content": "x"}
    # neither `docs/guide/src/api/new.py` nor `src/api/new.py` exists yet
    assert repo.paths("Write", write, "docs/guide") == ["docs/guide/src/api/new.py"]
    assert repo.cards("Write", write, "docs/guide") == [("L-2", "folder")]
    signals = extract_signals(repo.call("Write", write, "docs/guide"), str(repo.root))
    assert list(signals.folders) == ["src/api/new.py"]


def test_when_both_readings_exist_the_root_reading_counts_for_folders_only(
    repo: Repo,
) -> None:
    (repo.root / "src" / "src").mkdir()
    (repo.root / "src" / "src" / "a.py").write_text("shadow\n")
    signals = extract_signals(repo.call("Read", {"file_path": "src/a.py"}, "src"), str(repo.root))
    assert list(signals.paths) == ["src/src/a.py"]
    assert list(signals.folders) == ["src/a.py"]
    # the file lesson of `src/a.py` is not the file read; nothing else matches
    assert repo.cards("Read", {"file_path": "src/a.py"}, "src") == []


def test_paths_outside_the_workspace_are_still_dropped_from_a_sub_folder(repo: Repo) -> None:
    assert repo.paths("Read", {"file_path": "../../../etc/passwd"}, "docs/guide") == []
    assert repo.paths("Read", {"file_path": "/etc/passwd:3"}, "src") == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("tests/x.py::test_y", ("tests/x.py", "test_y")),
        ("x.py::T::t[a-b]", ("x.py", "T::t[a-b]")),
        ("src/a.py:12", ("src/a.py", "")),
        ("src/a.py:12:5", ("src/a.py", "")),
        ("crate::module", ("crate::module", "")),
        ("src/a.py:main", ("src/a.py:main", "")),
        (":12", (":12", "")),
        ("a:1:2:3", ("a:1", "")),
    ],
)
def test_split_location_reads_only_file_locations(text: str, expected: tuple[str, str]) -> None:
    assert split_location(text) == expected
