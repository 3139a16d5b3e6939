"""Exports that fit their readers (docs/export.md, "Budgets"): a byte budget per format,
filled by the most effective, non-stale lessons first, with a line saying how many were
left out; stale lessons marked or left out."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from checkout_support import git_checkout
from recall_support import AUTHOR, publish, repository_lesson

from active_memory.checkout import Checkout
from active_memory.cli import main
from active_memory.exports import read_section
from active_memory.lessons import Associations, Citation, Evidence, Lesson, RepositoryScope
from active_memory.orchestrator.publish import fingerprinted
from active_memory.store.effectiveness import RunObservation
from active_memory.store.sqlite import SqliteStore

NS = "repo:github.com/acme/api"
LEFT = re.compile(r"_(\d+) more lessons of `repo:github\.com/acme/api` were left out")


def _checkout(root: Path, files: dict[str, str] | None = None) -> Path:
    git_checkout(root, files or {"README.md": "api\n"})
    subprocess.run(["git", "-C", str(root), "remote", "add", "origin",
                    "git@github.com:acme/api.git"], check=True)  # fmt: skip
    return root


def _lesson(n: int) -> Lesson:
    top = ("src", "web", "infra", "docs", "")[n % 5]
    files = [f"{top}/mod{n % 37}/file{n}.py"] if top else []
    return Lesson(
        id=f"L-{n}", revision=1, scope=RepositoryScope(repository=NS),
        title=f"Regenerate module {n % 37} before its tests ({n})",
        recommendation=f"Run `make gen-{n % 37}` after editing module {n % 37}: the tests "
        "import the generated code, and a stale copy fails them with an ImportError.",
        associations=Associations(files=files, identifiers=[] if top else [f"helper_{n}"]),
    )  # fmt: skip


@pytest.fixture(scope="module")
def big_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of 10,000 active lessons of one repository."""
    path = tmp_path_factory.mktemp("big") / "lessons.sqlite3"

    async def seed() -> None:
        async with await SqliteStore.open(path) as store:
            await store.import_lessons([_lesson(n) for n in range(1, 10_001)], AUTHOR)

    anyio.run(seed, backend="asyncio")
    return path


def _export(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["lessons", "export", "--json", *args]) == 0
    result: dict[str, Any] = json.loads(capsys.readouterr().out)
    return result


def test_a_10k_store_gives_an_agents_md_under_its_budget_with_the_left_out_line(
    big_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    root = _checkout(tmp_path / "api")
    mine = "# Team rules\n\nRun `make check` before every commit.\n"
    (root / "AGENTS.md").write_text(mine, encoding="utf-8")
    monkeypatch.chdir(root)
    result = _export(capsys, "--format", "agents-md", "--store", str(big_store))
    data = (root / "AGENTS.md").read_bytes()
    assert len(data) <= 32 * 1024 == result["budget"] and result["bytes"] == len(data)
    text = data.decode("utf-8")
    assert text.startswith(mine)  # the user's text is kept, and counted
    kept = read_section(text)
    assert len(kept) == len(result["lessons"]) > 50
    [left] = LEFT.findall(text)
    assert int(left) == 10_000 - len(kept) == len(result["left_out"])
    assert "to keep AGENTS.md under 32 KiB" in text
    assert f"`active-memory lessons list --repository {NS}`" in text
    # Nearly full: the next lesson would not have fitted.
    assert len(data) > 32 * 1024 - 600
    # A smaller budget, asked for: honoured the same way.
    result = _export(capsys, "--format", "claude-md", "--max-bytes", "8K",
                     "--store", str(big_store))  # fmt: skip
    assert (root / "CLAUDE.md").stat().st_size <= 8192 and result["budget"] == 8192


def test_a_10k_store_gives_short_rules_and_a_short_skill(
    big_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    root = _checkout(tmp_path / "api")
    monkeypatch.chdir(root)
    result = _export(capsys, "--format", "cursor-rules", "--store", str(big_store))
    rules = sorted((root / ".cursor" / "rules").glob("*.mdc"))
    assert sum(p.stat().st_size for p in rules) <= 32 * 1024 and len(rules) <= 10
    assert all(len(p.read_text().splitlines()) <= 500 for p in rules)
    assert len(result["lessons"]) + len(result["left_out"]) == 10_000
    assert any(LEFT.search(p.read_text()) for p in rules)
    result = _export(capsys, "--format", "skill", "--store", str(big_store))
    folder = root / ".claude" / "skills" / "active-memory-lessons"
    files = [folder / "SKILL.md", *sorted((folder / "references").glob("*.md"))]
    assert sum(p.stat().st_size for p in files) <= 256 * 1024
    assert len((folder / "SKILL.md").read_text().splitlines()) < 200
    assert all(p.stat().st_size <= 24 * 1024 for p in files)
    assert LEFT.search((folder / "SKILL.md").read_text())
    held = [m[0] for p in files[1:] for m in read_section(p.read_text())]
    assert sorted(held) == sorted(result["lessons"])


def _observe(store: Path, observations: list[RunObservation]) -> None:
    async def run() -> None:
        async with await SqliteStore.open(store) as opened:
            await opened.publish([], observations)

    anyio.run(run, backend="asyncio")


def _seen(lesson_id: str, run: str, delivered: bool, recurred: bool) -> RunObservation:
    return RunObservation(lesson_id=lesson_id, run_id=run, delivered=delivered, recurred=recurred)


def test_the_most_effective_lessons_fill_the_budget_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _checkout(tmp_path / "api")
    store = tmp_path / "lessons.sqlite3"
    long = "Run the generator, then the tests, then commit both. " * 11
    publish(store, [repository_lesson(f"Lesson {n}", long, files=[f"src/f{n}.py"])
                    for n in range(1, 6)])  # fmt: skip
    # L-4 works (delivered 3 times, never back); L-2 does not (back every time);
    # the others were never delivered.
    _observe(store, [_seen("L-4", "r1", True, False), _seen("L-2", "r1", True, True)])
    _observe(store, [_seen("L-4", "r2", True, False), _seen("L-2", "r2", True, True)])
    _observe(store, [_seen("L-4", "r3", True, False), _seen("L-2", "r3", True, True)])
    monkeypatch.chdir(root)
    result = _export(capsys, "--format", "agents-md", "--max-bytes", "2K", "--store", str(store))
    assert result["lessons"] == ["L-4", "L-1"]  # the proven one, then the best unknown
    assert result["left_out"] == ["L-3", "L-5", "L-2"]  # the recurring one ranks last
    text = (root / "AGENTS.md").read_text()
    assert [m[0] for m in read_section(text)] == ["L-4", "L-1"]
    assert "_3 more lessons of" in text


def _stale_world(tmp_path: Path) -> tuple[Path, Path]:
    root = _checkout(tmp_path / "api", {"src/a.py": "".join(f"x{n} = {n}\n" for n in range(9))})
    store = tmp_path / "lessons.sqlite3"

    def cited(title: str, lines: tuple[int, int]) -> Any:
        made = repository_lesson(title, "Keep `x3` in step with `x4`.", files=["src/a.py"])
        evidence = Evidence(run_ids=["run-1"], citations=[Citation(path="src/a.py", lines=lines)])
        return made.model_copy(update={"evidence": evidence})

    mutations = [cited("Cites lines 1-2", (1, 2)), cited("Cites lines 4-5", (4, 5))]
    publish(store, fingerprinted(mutations, Checkout(root)))
    (root / "src" / "a.py").write_text("".join(f"x{n} = {n * 2}\n" for n in range(9)))
    return root, store


def test_stale_lessons_are_marked_and_placed_last_or_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root, store = _stale_world(tmp_path)
    monkeypatch.chdir(root)
    result = _export(capsys, "--format", "agents-md", "--store", str(store))
    assert result["stale"] == {"checked": True, "marked": ["L-1", "L-2"], "omitted": []}
    text = (root / "AGENTS.md").read_text()
    assert text.count("_Possibly outdated: the code it cites changed since (src/a.py:") == 2
    assert "src/a.py:4-5 lines changed" in text
    result = _export(capsys, "--format", "agents-md", "--stale", "omit", "--store", str(store))
    assert result["lessons"] == [] and result["stale"]["omitted"] == ["L-1", "L-2"]
    text = (root / "AGENTS.md").read_text()
    assert "_2 more lessons of" in text and "left out as stale" in text
    assert read_section(text) == []


def test_a_scope_other_than_the_checkouts_is_exported_unchecked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _, store = _stale_world(tmp_path)
    other = git_checkout(tmp_path / "elsewhere", {"x.txt": "x\n"})
    monkeypatch.chdir(other)
    result = _export(capsys, "--format", "agents-md", "--scope", NS, "--store", str(store))
    assert result["stale"]["checked"] is False and len(result["lessons"]) == 2
    assert "Possibly outdated" not in (other / "AGENTS.md").read_text()


def test_a_scope_exported_elsewhere_is_judged_against_the_checkout_this_machine_knows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from active_memory.known_checkouts import remember

    root, store = _stale_world(tmp_path)
    remember(NS, root, "session")
    other = git_checkout(tmp_path / "elsewhere", {"x.txt": "x\n"})
    monkeypatch.chdir(other)
    result = _export(capsys, "--format", "agents-md", "--scope", NS, "--store", str(store))
    assert result["stale"] == {"checked": True, "marked": ["L-1", "L-2"], "omitted": []}


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--format", "agents-md", "--max-bytes", "12"], "at least 1024"),
        (["--format", "agents-md", "--max-bytes", "lots"], "at least 1024"),
        (["--format", "agents-md", "--stale", "hide"], "invalid choice"),
        (["--max-bytes", "4096"], "only with a rules --format"),
    ],
)
def test_bad_budget_and_stale_options_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    args: list[str], says: str,
) -> None:  # fmt: skip
    root = _checkout(tmp_path / "api")
    monkeypatch.chdir(root)
    store = ["--store", str(tmp_path / "none.sqlite3")]
    try:
        code = main(["lessons", "export", *args, *store])
    except SystemExit as exit_info:  # argparse's own refusal
        code = int(exit_info.code or 0)
    assert code == 2
    assert says in capsys.readouterr().err
    assert not (root / "AGENTS.md").exists()
