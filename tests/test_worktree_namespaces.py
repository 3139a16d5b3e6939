"""One repository, one namespace: a checkout without a remote gets recall under
`repo:local/<main worktree path>`, shared by its worktrees; with a remote, the remote's
namespace; `import --repository NS` files a foreign log under NS (recall/environment.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from recall_support import publish, repository_lesson

from active_memory.recall.environment import repository_namespace

CLI = [sys.executable, "-c", "from active_memory.cli import run; run()"]
FIXTURES = Path(__file__).parent / "fixtures"


def _repository(tmp_path: Path, remote: str | None) -> tuple[Path, Path]:
    main = tmp_path / "main"
    main.mkdir()
    (main / "a.py").write_text("A = 1\n", encoding="utf-8")
    git = ["git", "-C", str(main)]
    subprocess.run([*git, "init", "-q"], check=True)
    if remote:
        subprocess.run([*git, "remote", "add", "origin", remote], check=True)
    subprocess.run([*git, "add", "a.py"], check=True)
    subprocess.run(
        [*git, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a"], check=True
    )
    second = tmp_path / "second"
    subprocess.run([*git, "worktree", "add", "-q", str(second)], check=True)
    return main, second


def _recall(tmp_path: Path, cwd: Path, store: Path) -> dict[str, object]:
    env = os.environ | {"ZEROSHOT_STATE_DIR": str(tmp_path / "state"),
                        "ACTIVE_MEMORY_STORE": str(store)}  # fmt: skip
    call = json.dumps({"tool_name": "Read", "tool_input": {"file_path": str(cwd / "a.py")}})
    done = subprocess.run(
        [*CLI, "recall", "--session", "s", "--cwd", str(cwd), "--json", call],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


@pytest.mark.parametrize("remote", [None, "git@github.com:acme/api.git"])
def test_both_worktrees_get_the_lesson_of_their_repository(
    tmp_path: Path, remote: str | None
) -> None:
    main, second = _repository(tmp_path, remote)
    namespace = repository_namespace(str(main))
    expected = (
        "repo:github.com/acme/api" if remote else "repo:local/" + str(main.resolve()).lstrip("/")
    )
    assert namespace == expected
    assert repository_namespace(str(second)) == namespace  # the worktree shares it
    store = tmp_path / "lessons.sqlite3"
    publish(store, [repository_lesson("Card for a", "Regenerate a.py.", files=["a.py"],
                                      namespace=expected)])  # fmt: skip
    for cwd in (main, second):
        cards = _recall(tmp_path, cwd, store)["cards"]
        assert isinstance(cards, list) and len(cards) == 1, cwd


def test_a_folder_outside_git_names_no_namespace(tmp_path: Path) -> None:
    assert repository_namespace(str(tmp_path)) is None


def test_import_repository_files_a_foreign_log_under_the_given_namespace(
    tmp_path: Path,
) -> None:
    log = FIXTURES / "harness_sessions" / "gemini-0.61.0.jsonl"
    out = tmp_path / "out"
    out.mkdir()
    done = subprocess.run(
        [*CLI, "import", "gemini", str(log), "--out", str(out),
         "--repository", "repo:github.com/acme/spotter", "--json"],
        env=os.environ | {"ZEROSHOT_STATE_DIR": str(tmp_path / "state")},
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    records = list(out.glob("*.run.json"))
    assert records
    for record in records:
        data = json.loads(record.read_text(encoding="utf-8"))
        assert data["repository"]["namespace"] == "repo:github.com/acme/spotter"
        assert "acme/spotter" in data["repository"]["aliases"]


@pytest.mark.parametrize("value", ["acme/api", "repo:", "repo:github.com", "repo:a b/c"])
def test_import_rejects_a_malformed_namespace_and_writes_nothing(
    tmp_path: Path, value: str
) -> None:
    out = tmp_path / "out"
    done = subprocess.run(
        [*CLI, "import", "claude", str(tmp_path / "missing.jsonl"), "--out", str(out),
         "--repository", value],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "--repository" in done.stderr and "repo:HOST/OWNER/NAME" in done.stderr
    assert not out.exists()
