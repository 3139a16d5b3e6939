"""The `commands` association (SPEC §5): command families, normalised by the one rule of
command_family.py, a bare program refused; stored and read back by both store backends."""

from __future__ import annotations

import json

import pytest
from conftest import AUTHOR, NAMESPACE, card
from pydantic import ValidationError

from active_memory.lessons import (
    ASSOCIATIONS_MAX_PER_KIND,
    AdaptLesson,
    Associations,
    CreateLesson,
    Lesson,
    RepositoryScope,
)
from active_memory.store import LessonStore
from active_memory.store.changes import ScopeKey


@pytest.mark.parametrize(
    ("written", "family"),
    [
        ("mix test", "mix test"),
        ("cd app && timeout 60 mix test test/foo_test.exs", "mix test"),
        ("git push -u origin main", "git push"),
        ("npm run build", "npm run build"),
        ("env MIX_ENV=test mix test", "mix test"),
        ("uv run pytest -x tests", "pytest"),
        ("python -m pytest", "pytest"),
        ("node assets/build.js", "node assets/build.js"),
        ("  git commit  ", "git commit"),
        ("npm t", "npm test"),
    ],
)
def test_a_command_is_stored_as_its_family(written: str, family: str) -> None:
    assert Associations(commands=[written]).commands == [family]


def test_commands_that_read_as_one_family_are_kept_once() -> None:
    associations = Associations(commands=["mix test", "timeout 60 mix test x.exs", "git push"])
    assert associations.commands == ["mix test", "git push"]


@pytest.mark.parametrize("bare", ["git", "mix", "npm", "make", "python", "node", "bash", "ls"])
def test_a_bare_program_is_refused_as_too_broad(bare: str) -> None:
    with pytest.raises(ValidationError) as caught:
        Associations(commands=[bare])
    [error] = caught.value.errors()
    assert error["type"] == "broad_command"
    assert f"command '{bare}' is a bare program, too broad" in error["msg"]
    assert "`git push`" in error["msg"]  # says what to give instead


def test_git_with_only_options_is_still_the_bare_program() -> None:
    with pytest.raises(ValidationError, match="'git' is a bare program"):
        Associations(commands=["git -C app"])


@pytest.mark.parametrize(
    ("written", "why"),
    [
        ("", "names no command"),
        ("   ", "names no command"),
        ("cd app", "names no command"),
        ("git add -A && git commit -m x", r"names several commands \(git add, git commit\)"),
        ("Edit", "is a tool's name, not a command"),
        ("Bash", "is a tool's name, not a command"),
    ],
)
def test_what_is_not_one_command_family_is_refused(written: str, why: str) -> None:
    with pytest.raises(ValidationError, match=why):
        Associations(commands=[written])


def test_a_command_longer_than_its_limit_is_refused() -> None:
    with pytest.raises(ValidationError, match="the limit is 256 bytes"):
        Associations(commands=["node " + "a/" * 200 + "build.js"])


def test_commands_are_bounded_like_every_association_kind() -> None:
    many = [f"npm run task{n}" for n in range(ASSOCIATIONS_MAX_PER_KIND + 1)]
    with pytest.raises(ValidationError, match=f"at most {ASSOCIATIONS_MAX_PER_KIND} items"):
        Associations(commands=many)


@pytest.mark.parametrize("word", ["make", "test", "build", "run"])
def test_make_test_build_and_run_stay_broad_words_for_keywords(word: str) -> None:
    with pytest.raises(ValidationError, match="broad word"):
        Associations(keywords=[["stripe", word]])
    # ... while a family naming them is a command association.
    assert Associations(commands=["make test", "npm run build"]).commands == [
        "make test",
        "npm run build",
    ]


def test_a_lesson_with_only_commands_can_be_recalled() -> None:
    assert not Associations(commands=["mix test"]).is_empty()


def test_no_commands_serialise_as_before_they_existed() -> None:
    # Stored associations, tasks and recorded-answer digests stay byte for byte the same.
    plain = Associations(files=["mix.exs"])
    assert plain.model_dump_json() == (
        '{"files":["mix.exs"],"folders":[],"identifiers":[],"keywords":[]}'
    )
    with_commands = Associations(files=["mix.exs"], commands=["mix test"])
    assert json.loads(with_commands.model_dump_json())["commands"] == ["mix test"]
    assert Associations.model_validate_json(with_commands.model_dump_json()) == with_commands


# --- both store backends ----------------------------------------------------------------


def _create(commands: list[str]) -> CreateLesson:
    associations = Associations(files=["config/test.exs"], commands=commands)
    return CreateLesson(
        scope=RepositoryScope(repository=NAMESPACE),
        card=card("Start the database before mix test", associations=associations),
        author=AUTHOR,
    )


@pytest.mark.asyncio
async def test_the_store_round_trips_commands(store: LessonStore) -> None:
    await store.publish([_create(["cd app && mix test", "git push"])])
    lesson = await store.get("L-1")
    assert isinstance(lesson, Lesson)
    assert lesson.associations.commands == ["mix test", "git push"]
    # What recall reads: the change rows' associations JSON.
    changes = await store.changes(ScopeKey("repository", repository=NAMESPACE), None)
    [row] = changes.rows
    assert json.loads(row[5] or "{}")["commands"] == ["mix test", "git push"]
    # An adaptation replaces them; the history keeps each revision's card.
    changed = Associations(files=["config/test.exs"], commands=["mix ecto.migrate"])
    await store.publish(
        [
            AdaptLesson(
                id="L-1",
                base_revision=1,
                card=card("Migrate before mix test", associations=changed),
                author=AUTHOR,
            )
        ]
    )
    adapted = await store.get("L-1")
    assert isinstance(adapted, Lesson) and adapted.associations.commands == ["mix ecto.migrate"]
    history = await store.history("L-1")
    cards = [entry.card for entry in history if entry.card is not None]
    assert [c.associations.commands for c in cards] == [
        ["mix test", "git push"],
        ["mix ecto.migrate"],
    ]


@pytest.mark.asyncio
async def test_a_lesson_without_commands_is_stored_without_the_field(store: LessonStore) -> None:
    await store.publish([_create([])])
    changes = await store.changes(ScopeKey("repository", repository=NAMESPACE), None)
    [row] = changes.rows
    assert "commands" not in json.loads(row[5] or "{}")


# --- maintenance: the failures a lesson's commands concern -------------------------------


def test_a_repeated_failure_of_a_lessons_command_concerns_it() -> None:
    from active_memory.evidence import scan
    from active_memory.runlog.record import parse_run_record
    from active_memory.specialists.tasks.gather_run import concerning

    error = "** (DBConnection.ConnectionError) connection refused"
    failures = [
        {"node": "worker", "tool": "Bash", "at": f"2026-12-01T10:0{m}:00Z", "family": "mix test",
         "command": "cd app && timeout 60 mix test", "error": error}
        for m in (1, 5)
    ]  # fmt: skip
    record = parse_run_record(
        {"schema": "active-memory/run@1", "run_id": "run-tf", "outcome": "succeeded",
         "tool_failures": failures}
    )  # fmt: skip
    items = [item for item in scan(record).evidence if item.kind == "tool_failures"]
    assert [item.family for item in items] == ["mix test"]

    def lesson(commands: list[str]) -> Lesson:
        return Lesson(
            id="L-1", revision=1, scope=RepositoryScope(repository=NAMESPACE),
            title="Start the database first", recommendation="Run `docker compose up -d db`.",
            associations=Associations(folders=["docs"], commands=commands),
        )  # fmt: skip

    assert concerning(lesson(["mix test"]), items, record) == [items[0].id]
    assert concerning(lesson(["mix format"]), items, record) == []
