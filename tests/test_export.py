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
from active_memory.exports import BEGIN, END, globs_of, read_section
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


def test_cursor_rules_are_grouped_by_folder_with_the_globs_of_their_lessons(
    world: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    rules = world["checkout"] / ".cursor" / "rules"
    rules.mkdir(parents=True)
    own = rules / "style.mdc"
    own.write_text("---\ndescription: house style\nalwaysApply: true\n---\nTabs.\n")
    # A rule of an older export (one file per lesson) is ours and goes away.
    legacy = rules / "active-memory-L-9.mdc"
    legacy.write_text('---\ndescription: "old"\nlesson: "L-9"\nrevision: 1\n---\nOld.\n')
    publish(
        world["store"],
        [repository_lesson("Handlers stay thin", folders=["src/handlers"], namespace=NS),
         repository_lesson("Generated code is rebuilt", files=["src/generated/x.ts"])],
    )  # fmt: skip
    result = _export("cursor-rules", capsys)
    store = {lesson.id: lesson for lesson in _active(world["store"])}
    found: dict[str, tuple[dict[str, Any], str]] = {}
    for path in sorted(rules.glob("active-memory-*.mdc")):
        found[path.name] = _front_matter(path)
    # One rule per top folder: api/, src/ (two lessons), and the lessons with no path.
    assert set(found) == {"active-memory-api.mdc", "active-memory-src.mdc",
                          "active-memory-general.mdc"}  # fmt: skip
    held: dict[str, str] = {}
    for name, (header, body) in found.items():
        assert header["alwaysApply"] is False and isinstance(header["description"], str)
        marks = read_section(body)
        assert header["lessons"] == ", ".join(f"{i} r{r}" for i, r, _ in marks)
        globs = [g for i, _, _ in marks for g in globs_of(store[i])]
        assert (header["globs"] or "") == ", ".join(dict.fromkeys(globs))
        for lesson_id, revision, title in marks:
            assert (revision, title) == (store[lesson_id].revision, store[lesson_id].title)
            assert store[lesson_id].recommendation in body
            held[lesson_id] = name
    assert set(held) == set(store)  # every active lesson, once
    assert found["active-memory-general.mdc"][0]["globs"] is None
    assert {"path": str(legacy), "action": "removed"} in result["files"] and not legacy.exists()
    # A retired lesson leaves its rule; a rule left with no lesson goes away.
    retired = next(lesson for lesson in store.values() if lesson.associations.identifiers)
    _retire(world["store"], retired)
    result = _export("cursor-rules", capsys)
    general = rules / "active-memory-general.mdc"
    assert {"path": str(general), "action": "removed"} in result["files"]
    assert own.read_text() == "---\ndescription: house style\nalwaysApply: true\n---\nTabs.\n"


def test_the_skill_lands_where_claude_code_loads_skills_with_short_skill_md(
    world: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    # An older export left the skill at the checkout root, where no client looks.
    legacy = world["checkout"] / "active-memory-lessons" / "SKILL.md"
    legacy.parent.mkdir()
    legacy.write_text(f"---\nname: active-memory-lessons\ndescription: old\n---\n{BEGIN}\n{END}\n")
    result = _export("skill", capsys)
    folder = world["checkout"] / ".claude" / "skills" / "active-memory-lessons"
    header, body = _front_matter(folder / "SKILL.md")
    assert header["name"] == "active-memory-lessons"
    assert NS in header["description"] and len(header["description"]) <= 500
    assert "\n" not in header["description"]
    assert len((folder / "SKILL.md").read_text().splitlines()) < 100
    # SKILL.md points at reference files; they hold every lesson, with its mark.
    references = sorted((folder / "references").glob("*.md"))
    assert references and all(f"(references/{p.name})" in body for p in references)
    marks = [m for p in references for m in read_section(p.read_text(encoding="utf-8"))]
    expected = [(lesson.id, lesson.revision, lesson.title) for lesson in _active(world["store"])]
    assert sorted(marks) == sorted(expected)
    assert not legacy.exists() and {"path": str(legacy), "action": "removed"} in result["files"]
    # Codex reads .agents/skills.
    _export("skill", capsys, "--client", "codex")
    assert (
        world["checkout"] / ".agents" / "skills" / "active-memory-lessons" / "SKILL.md"
    ).is_file()


def test_a_skill_folder_we_did_not_write_is_left_alone(
    world: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    theirs = world["checkout"] / ".claude" / "skills" / "active-memory-lessons" / "SKILL.md"
    theirs.parent.mkdir(parents=True)
    theirs.write_text("---\nname: active-memory-lessons\ndescription: mine\n---\nMine.\n")
    assert main(["lessons", "export", "--format", "skill"]) == 2
    assert "did not write" in capsys.readouterr().err
    assert theirs.read_text().endswith("Mine.\n")
    assert not (theirs.parent / "references").exists()


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
    from active_memory.exports import Candidate, markdown_section
    from active_memory.lessons import Associations, Lesson, RepositoryScope

    lesson = Lesson(
        id="L-3", revision=2, scope=RepositoryScope(repository="repo:github.com/acme/api"),
        title="Start the database first", recommendation="Run `docker compose up -d db`.",
        associations=Associations(files=["config/test.exs"], commands=["mix test", "git push"]),
    )  # fmt: skip
    section = markdown_section([Candidate(lesson)], "repo:github.com/acme/api")
    assert "Applies to: `config/test.exs`, `mix test`, `git push`" in section
