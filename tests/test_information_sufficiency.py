"""Information sufficiency: for each scenario of `tests/fixtures/scenarios/` (a recorded
run, its repository, and the lessons a careful engineer would write from it), every path,
identifier and command of each expected lesson is in the task its specialist receives.
`bench/information_bench.py` prints the fraction over all scenarios."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from scenario_support import asked, build_run, coverage, load, names


def test_there_are_at_least_eight_scenarios_each_with_a_lesson() -> None:
    found = names()
    assert len(found) >= 8
    for name in found:
        expected = load(name).spec["expected"]
        assert expected and all(x["specialist"] for x in expected)


@pytest.mark.parametrize("name", names())
def test_the_recorded_run_is_the_one_its_description_builds(name: str) -> None:
    scenario = load(name)
    assert json.loads(json.dumps(build_run(scenario.spec))) == scenario.run


@pytest.mark.parametrize("name", names())
def test_every_backticked_name_of_an_expected_lesson_is_listed(name: str) -> None:
    """The lists checked are complete: each code span of the expected recommendation is one
    of its paths, identifiers or commands (or a part of one)."""
    for lesson in load(name).spec["expected"]:
        listed = [*lesson["paths"], *lesson["identifiers"], *lesson["commands"]]
        for span in re.findall(r"`([^`]+)`", lesson["recommendation"]):
            bare = span.split("(")[0].split(".load")[0].strip("'")
            assert any(bare in value or value in bare for value in listed), (name, span)


@pytest.mark.asyncio
@pytest.mark.parametrize("name", names())
async def test_the_task_holds_every_path_identifier_and_command_of_the_lesson(
    name: str, tmp_path: Path
) -> None:
    scenario = load(name)
    prompts = await asked(scenario, tmp_path)
    for lesson in scenario.spec["expected"]:
        specialist = lesson["specialist"]
        assert specialist in prompts, f"{specialist} was not asked in {name}"
        found, missing = coverage(lesson, prompts[specialist])
        assert missing == [], f"{name}: {specialist}'s task lacks {missing}"
        assert found
