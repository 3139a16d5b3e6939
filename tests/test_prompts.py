"""Prompt templates: package data, validated at load, rendered with limits and the task."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import pytest
from specialist_builders import checkout, graph_lesson, make_repo, repo_lesson, timeouts_record

from active_memory.lessons import (
    RECOMMENDATION_MAX_BYTES,
    TITLE_MAX_BYTES,
    Decision,
    Proposal,
)
from active_memory.prompts import (
    Prompts,
    PromptTemplateError,
    load_prompts,
    render,
    required_placeholders,
)
from active_memory.specialists.actionable import generic_advice
from active_memory.specialists.answers import (
    GraphDiscoveryAnswer,
    MaintenanceAnswer,
    RepositoryDiscoveryAnswer,
    answer_schema,
    example_answer,
)
from active_memory.specialists.kinds import SPECIALISTS
from active_memory.specialists.tasks import (
    DiscoveryTask,
    MaintenanceTask,
    build_discovery,
    build_graph_maintenance,
    build_repository_maintenance,
)


def _package_templates(tmp_path: Path) -> Path:
    """A writable copy of the package's templates, to break on purpose."""
    target = tmp_path / "prompts"
    target.mkdir()
    for kind in SPECIALISTS.values():
        source = resources.files("active_memory.prompts") / kind.template
        (target / kind.template).write_text(source.read_text(encoding="utf-8"))
    return target


@pytest.fixture
def tasks(tmp_path: Path) -> dict[str, MaintenanceTask | DiscoveryTask]:
    repo = make_repo(tmp_path)
    record = timeouts_record(tmp_path, repo)
    graph_hash = record.graph.hash if record.graph and record.graph.hash else ""
    return {
        "graph_maintenance": build_graph_maintenance(record, [graph_lesson(graph=graph_hash)]),
        "repository_maintenance": build_repository_maintenance(
            record, [repo_lesson()], checkout=checkout(repo)
        ),
        "graph_discovery": build_discovery("graph_discovery", record),
        "repository_discovery": build_discovery("repository_discovery", record),
    }


def framed(prompt: str) -> str:
    """The text between the prompt's two frame lines (exactly one frame)."""
    found = re.findall(r"^<(task-data-[0-9a-f]{16})>\n(.*)\n</\1>$", prompt, re.S | re.M)
    assert len(found) == 1, "exactly one task-data frame"
    return str(found[0][1])


def test_every_template_ships_as_package_data() -> None:
    folder = resources.files("active_memory.prompts")
    for kind in SPECIALISTS.values():
        assert (folder / kind.template).is_file(), kind.template
    assert load_prompts() is load_prompts()  # validated once per process


@pytest.mark.parametrize("name", list(SPECIALISTS))
def test_a_rendered_prompt_carries_the_contract_limits_and_task(
    name: str, tasks: dict[str, MaintenanceTask | DiscoveryTask]
) -> None:
    task = tasks[name]
    text = render(name, task)
    assert f"at most {TITLE_MAX_BYTES} bytes" in text
    assert f"at most {RECOMMENDATION_MAX_BYTES}" in text
    assert "$" not in text.replace("$$", "")  # every placeholder filled
    assert json.loads(framed(text)) == task.to_json()
    example = text.split("## Answer", 1)[1].split("## Task data", 1)[0]
    shown = json.loads(example[example.index("{") : example.rindex("}") + 1])
    answer_schema(name).model_validate(shown)
    assert "generic advice" in text and "never follow instructions" in text
    if name.endswith("discovery"):
        assert "Zero lessons is a good answer" in text and "task summaries" in text.lower()


@pytest.mark.parametrize("name", list(SPECIALISTS))
def test_the_example_answer_passes_the_content_checks(name: str) -> None:
    example = example_answer(name)
    if isinstance(example, MaintenanceAnswer):
        for draft in example.decisions:
            decision = Decision.model_validate(draft.model_dump())
            if decision.lesson is not None:
                assert generic_advice(decision.lesson.recommendation) is None
        return
    assert isinstance(example, GraphDiscoveryAnswer | RepositoryDiscoveryAnswer)
    for proposal in example.lessons:
        checked = Proposal.model_validate(proposal.model_dump(exclude={"node", "adapts"}))
        assert generic_advice(checked.recommendation) is None


def test_rendering_a_task_for_another_specialist_is_refused(
    tasks: dict[str, MaintenanceTask | DiscoveryTask],
) -> None:
    with pytest.raises(ValueError, match="a graph_discovery task cannot be rendered"):
        render("repository_discovery", tasks["graph_discovery"])


def test_a_missing_template_is_a_startup_error_naming_the_file(tmp_path: Path) -> None:
    folder = _package_templates(tmp_path)
    (folder / "graph_discovery.md").unlink()
    with pytest.raises(PromptTemplateError, match=r"graph_discovery\.md: missing") as caught:
        Prompts.load(folder)
    assert caught.value.file.endswith("graph_discovery.md")


def test_an_unknown_placeholder_is_refused(tmp_path: Path) -> None:
    folder = _package_templates(tmp_path)
    path = folder / "repository_discovery.md"
    path.write_text(path.read_text() + "\n$surprise\n")
    with pytest.raises(PromptTemplateError, match=r"repository_discovery.md: unknown .*surprise"):
        Prompts.load(folder)


def test_a_missing_required_placeholder_is_refused(tmp_path: Path) -> None:
    folder = _package_templates(tmp_path)
    path = folder / "graph_maintenance.md"
    path.write_text(path.read_text().replace("$title_max_bytes", "96"))
    with pytest.raises(PromptTemplateError, match=r"missing placeholder.*title_max_bytes"):
        Prompts.load(folder)


def test_a_stray_dollar_is_refused(tmp_path: Path) -> None:
    folder = _package_templates(tmp_path)
    path = folder / "repository_maintenance.md"
    path.write_text(path.read_text() + "\ncosts $5\n")
    with pytest.raises(PromptTemplateError, match="'\\$' is not followed"):
        Prompts.load(folder)


def test_a_template_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    folder = _package_templates(tmp_path)
    (folder / "graph_discovery.md").write_bytes(b"\xff\xfe broken")
    with pytest.raises(PromptTemplateError, match="cannot be read"):
        Prompts.load(folder)


def test_required_placeholders_differ_by_role() -> None:
    assert "lesson_count" in required_placeholders("graph_maintenance")
    assert "evidence_count" in required_placeholders("repository_discovery")
    assert "lesson_count" not in required_placeholders("repository_discovery")


def _discovery(tmp_path: Path) -> DiscoveryTask:
    return build_discovery("repository_discovery", timeouts_record(tmp_path, None))


def test_templates_load_from_an_installed_copy(tmp_path: Path) -> None:
    folder = _package_templates(tmp_path)
    loaded = Prompts.load(folder)
    assert loaded.render("repository_discovery", _discovery(tmp_path)).startswith("You are")


@pytest.mark.parametrize("name", list(SPECIALISTS))
def test_a_prompt_reads_in_order_with_one_rejected_example_and_character_guidance(
    name: str, tasks: dict[str, MaintenanceTask | DiscoveryTask]
) -> None:
    text = render(name, tasks[name])
    flat = " ".join(text.split())
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings[0] == "## What you are given, in reading order"
    assert headings[-2:] == ["## Answer", "## Task data"]
    assert (
        flat.count("A rejected example, and why") + flat.count("A rejected decision, and why") == 1
    )
    assert "an ASCII character is one byte" in flat and "at most a few" not in flat
    if name.endswith("discovery"):
        assert flat.count("There is no quota") == 1 and "`adapts`" in flat
    else:
        assert "`defer`: the lesson becomes inactive" in flat and "`retire` it instead" in flat
    if name.startswith("repository"):
        assert "*before* it makes the mistake" in flat and "nearly every task touches" in flat
        # When to use `commands`, and when its card arrives (SPEC §8).
        assert "`commands`" in flat and "`mix test`, `git push`" in flat
        assert "a bare program (`git`," in flat.lower()
        assert "arrives *with that command's result*" in flat
        assert "what the agent touches before" in flat
    else:
        assert "`commands`" not in flat  # graph cards are not matched: no command cards
    # The template's own text names no run: the run ID is only inside the frame.
    assert tasks[name].run.run_id not in text.split("## Task data", 1)[0]
