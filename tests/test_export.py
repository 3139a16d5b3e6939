"""`lessons export --format agents-md|claude-md|cursor-rules|skill`: round trips against
the store, and a re-export that leaves the user's own text alone (docs/export.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from recall_support import make_checkout, publish, repository_lesson

from active_memory.cli import main
from active_memory.exports import BEGIN, END, read_section
from active_memory.lessons import AdaptLesson, Author, Card, Lesson, RetireLesson
from active_memory.store.sqlite import SqliteStore

NS = "repo:github.com/acme/api"


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    checkout = make_checkout(tmp_path / "api")
    store = tmp_path / "lessons.sqlite3"
    publish(
        store,
        [
            repository_lesson(
                'Regenerate the client: "make api-client"',
                "Run make api-client after editing api/schema.json.",
                files=["api/schema.json"],
                folders=["src/generated"],
            ),
            repository_lesson("Use the retry helper", identifiers=["with_retry"]),
            repository_lesson("Web only", files=["x.js"], namespace="repo:github.com/acme/web"),
        ],
    )
    monkeypatch.setenv("ACTIVE_MEMORY_STORE", str(store))
    monkeypatch.chdir(checkout)
    return {"checkout": checkout, "store": store}


def _active(store: Path) -> list[Lesson]:
    async def run() -> list[Lesson]:
        opened = await SqliteStore.open(store)
        try:
            found = await opened.select()
        finally:
            await opened.aclose()
        return [
            item
            for item in found
            if isinstance(item, Lesson) and item.status == "active" and item.scope.repository == NS
        ]

    return anyio.run(run)


def _export(fmt: str, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    assert main(["lessons", "export", "--format", fmt, "--json", *extra]) == 0
    result: dict[str, Any] = json.loads(capsys.readouterr().out)
    return result


@pytest.mark.parametrize(("fmt", "name"), [("agents-md", "AGENTS.md"), ("claude-md", "CLAUDE.md")])
def test_markdown_sections_round_trip_and_keep_the_users_text(
    world: dict[str, Any], capsys: pytest.CaptureFixture[str], fmt: str, name: str
) -> None:
    path = world["checkout"] / name
    mine_before = "# Team rules\n\nAlways run `make check`.\n"
    mine_after = "\n## Release\n\nTag from main only.\n"
    path.write_text(mine_before, encoding="utf-8")
    result = _export(fmt, capsys)
    assert result["scope"] == NS
    text = path.read_text(encoding="utf-8")
    assert text.startswith(mine_before)
    expected = [(lesson.id, lesson.revision, lesson.title) for lesson in _active(world["store"])]
    assert read_section(text) == sorted(expected)
    assert "Web only" not in text  # another repository's lesson
    assert "`api/schema.json`, `src/generated/**`" in text
    # The user writes below our section; the store changes; a re-export replaces only ours.
    path.write_text(text + mine_after, encoding="utf-8")
    first = _active(world["store"])[0]
    _adapt(world["store"], first, "Regenerate the client with the wrapper")
    _export(fmt, capsys)
    again = path.read_text(encoding="utf-8")
    assert again.startswith(mine_before) and again.endswith(mine_after)
    assert again.count(BEGIN) == 1 and again.count(END) == 1
    assert (first.id, 2, "Regenerate the client with the wrapper") in read_section(again)
    # A third export with nothing new changes nothing.
    assert _export(fmt, capsys)["files"][0]["action"] == "unchanged"


def _adapt(store: Path, lesson: Lesson, title: str) -> None:
    async def run() -> None:
        opened = await SqliteStore.open(store)
        try:
            await opened.publish(
                [
                    AdaptLesson(
                        id=lesson.id,
                        base_revision=lesson.revision,
                        card=Card(
                            title=title,
                            recommendation=lesson.recommendation,
                            associations=lesson.associations,
                        ),
                        author=Author(specialist="person:test"),
                    )
                ]
            )
        finally:
            await opened.aclose()

    anyio.run(run)


def _retire(store: Path, lesson: Lesson) -> None:
    async def run() -> None:
        opened = await SqliteStore.open(store)
        try:
            await opened.publish(
                [
                    RetireLesson(
                        id=lesson.id,
                        base_revision=lesson.revision,
                        author=Author(specialist="person:test"),
                    )
                ]
            )
        finally:
            await opened.aclose()

    anyio.run(run)


def _front_matter(path: Path) -> tuple[dict[str, Any], str]:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n")
    header, body = text[4:].split("\n---\n", 1)
    return yaml.safe_load(header), body.strip()


def test_cursor_rules_carry_globs_from_the_associations(
    world: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    rules = world["checkout"] / ".cursor" / "rules"
    rules.mkdir(parents=True)
    own = rules / "style.mdc"
    own.write_text("---\ndescription: house style\nalwaysApply: true\n---\nTabs.\n")
    _export("cursor-rules", capsys)
    store = {lesson.id: lesson for lesson in _active(world["store"])}
    found = {}
    for path in sorted(rules.glob("active-memory-*.mdc")):
        header, body = _front_matter(path)
        found[header["lesson"]] = (header, body)
    assert set(found) == set(store)
    for lesson_id, (header, body) in found.items():
        lesson = store[lesson_id]
        assert header["description"] == lesson.title  # quotes in the title survive
        assert header["revision"] == lesson.revision and body == lesson.recommendation
        paths = [*lesson.associations.files, *(f"{f}/**" for f in lesson.associations.folders)]
        if paths:
            assert header["globs"] == ", ".join(paths) and header["alwaysApply"] is False
        else:
            assert header["globs"] is None and header["alwaysApply"] is True
    # A retired lesson's rule goes away on the next export; the user's rule stays.
    retired = next(lesson for lesson in store.values() if lesson.associations.identifiers)
    _retire(world["store"], retired)
    result = _export("cursor-rules", capsys)
    assert {"path": str(rules / f"active-memory-{retired.id}.mdc"), "action": "removed"} in (
        result["files"]
    )
    assert own.read_text() == "---\ndescription: house style\nalwaysApply: true\n---\nTabs.\n"


def test_skill_folder_has_valid_front_matter_and_every_lesson(
    world: dict[str, Any], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = world["checkout"] / ".claude" / "skills"
    out.mkdir(parents=True)
    _export("skill", capsys, "--dir", str(out))
    path = out / "active-memory-lessons" / "SKILL.md"
    header, _ = _front_matter(path)
    assert header["name"] == "active-memory-lessons"
    assert isinstance(header["description"], str) and NS in header["description"]
    expected = [(lesson.id, lesson.revision, lesson.title) for lesson in _active(world["store"])]
    assert read_section(path.read_text(encoding="utf-8")) == sorted(expected)


def test_bad_uses_are_clear_errors(
    world: dict[str, Any], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(["lessons", "export", "--format", "agents-md", "-o", "x.md"]) == 2
    assert "use --dir" in capsys.readouterr().err
    outside = tmp_path / "nowhere"
    outside.mkdir()
    assert main(["lessons", "export", "--format", "claude-md", "--dir", str(outside)]) == 2
    assert "--scope repo:" in capsys.readouterr().err
    agents = world["checkout"] / "AGENTS.md"
    damaged = f"# Rules\n{BEGIN}\nhalf a section\n"
    agents.write_text(damaged, encoding="utf-8")
    assert main(["lessons", "export", "--format", "agents-md"]) == 2
    assert "markers are damaged" in capsys.readouterr().err
    assert agents.read_text(encoding="utf-8") == damaged  # nothing written


def test_jsonl_export_of_a_scope_imports_back_into_another_store(
    world: dict[str, Any], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # The team pack: committed to git, imported by a teammate into their own store.
    pack = world["checkout"] / ".active-memory" / "lessons.jsonl"
    pack.parent.mkdir()
    assert main(["lessons", "export", "--scope", NS, "-o", str(pack)]) == 0
    lines = [json.loads(line) for line in pack.read_text().splitlines()]
    assert {line["scope"]["repository"] for line in lines} == {NS}
    other = tmp_path / "teammate.sqlite3"
    assert main(["lessons", "import", str(pack), "--store", str(other), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert len(report["added"]) == len(lines)


def test_a_markdown_entry_names_the_commands_it_applies_to() -> None:
    from active_memory.exports import markdown_section
    from active_memory.lessons import Associations, Lesson, RepositoryScope

    lesson = Lesson(
        id="L-3", revision=2, scope=RepositoryScope(repository="repo:github.com/acme/api"),
        title="Start the database first", recommendation="Run `docker compose up -d db`.",
        associations=Associations(files=["config/test.exs"], commands=["mix test", "git push"]),
    )  # fmt: skip
    section = markdown_section([lesson], "repo:github.com/acme/api")
    assert "Applies to: `config/test.exs`, `mix test`, `git push`" in section
