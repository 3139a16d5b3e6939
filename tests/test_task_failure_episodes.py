"""Tasks that show the cost (issue 25, item 3): repository discovery cites repeated tool
failures (SPEC §4 item 4) and sees each qualifying episode whole (the calls with command,
cwd and time, the errors with counts, what resolved it and when, the files edited before
it, the final texts of the executions it ran in); maintenance sees the run's failures and
timeouts concerning each lesson's files and families, and what came after the lesson was
delivered; everything within the prompt's bound, also with 256 failures."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
from run_builder import RunBuilder, error, ok, software_change
from specialist_builders import graph_lesson, with_graph_hash

from active_memory.evidence import scan
from active_memory.evidence.model import evidence_id
from active_memory.lessons import Associations, Evidence, Lesson, RepositoryScope
from active_memory.runlog.record import RunRecord, parse_run_record
from active_memory.specialists.tasks import (
    TaskLimits,
    build_discovery,
    build_graph_maintenance,
    build_repository_maintenance,
    rendered_size,
)
from active_memory.specialists.tasks.gather_failures import lesson_families

NAMESPACE = "repo:github.com/acme/shop"
IGNORED = "The following paths are ignored by one of your .gitignore files: priv/static/assets"
UPSTREAM = "fatal: The current branch feature-7 has no upstream branch."


def at(minute: int, second: int = 0) -> str:
    return f"2026-12-01T10:{minute:02d}:{second:02d}Z"


def failure(
    minute: int, family: str, error: str, command: str = "", **fields: Any
) -> dict[str, Any]:
    return {
        "node": "worker",
        "execution": "ex-1",
        "tool": "Bash",
        "at": at(minute),
        "family": family,
        "command": command or family,
        "cwd": "",
        "exit_code": 1,
        "error": error,
        **fields,
    }


def record(failures: list[dict[str, Any]], **extra: Any) -> RunRecord:
    data: dict[str, Any] = {
        "schema": "active-memory/run@1",
        "run_id": "run-episodes",
        "outcome": "succeeded",
        "source": {"branch": "feature-7"},
        "repository": {"namespace": NAMESPACE},
        "tool_failures": failures,
    }
    data.update(extra)
    return parse_run_record(data)


def git_add_session(**extra: Any) -> RunRecord:
    """`git add` of an ignored folder twice (once from `assets/`), resolved by `-f`, with
    an edit in between, and the turn's final text."""
    resolved = {
        "at": at(7),
        "command": "git add -f priv/static/assets/app.css",
        "family": "git add",
    }
    return record(
        [
            failure(1, "git add", IGNORED, "git add priv/static/assets/app.css"),
            failure(2, "git add", IGNORED, "git add priv/static/assets/app.css"),
            failure(4, "git add", IGNORED, "git add ../priv/static/assets/app.css", cwd="assets"),
            failure(
                5,
                "git add",
                IGNORED,
                "git add priv/static/assets/app.css",
                execution="ex-2",
                resolved_by=resolved,
            ),
        ],
        completions={"ex-1": "Staged everything but the CSS.", "ex-2": "Committed with -f."},
        receipts=[
            {"node": "worker", "tool": "Edit", "at": at(3), "paths": [".gitignore"]},
            {"node": "worker", "tool": "Read", "at": at(3, 30), "paths": ["mix.exs"]},
            {"node": "worker", "tool": "Write", "at": at(7, 30), "paths": ["late.ex"]},
        ],
        **extra,
    )


# --- discovery ------------------------------------------------------------------------------


def test_repository_discovery_cites_repeated_tool_failures_and_graph_discovery_does_not() -> None:
    run = git_add_session()
    task = build_discovery("repository_discovery", run)
    (item,) = task.evidence
    assert item.kind == "tool_failures" and item.id.startswith("ev-tf-")
    assert item.family == "git add"
    assert build_discovery("graph_discovery", run).evidence == ()


def test_a_discovery_task_shows_the_episode_whole() -> None:
    task = build_discovery("repository_discovery", git_add_session())
    (item,) = task.to_json()["evidence"]
    (group,) = item["failures"]
    assert (group["error"], group["count"], group["exit_codes"]) == (IGNORED, 4, [1])
    # The calls, the same call once with its count and last time; the cwd of each.
    assert group["calls"] == [
        {
            "at": "2026-12-01T10:01:00Z",
            "command": "git add priv/static/assets/app.css",
            "cwd": "",
            "exit_code": 1,
            "count": 2,
            "last_at": "2026-12-01T10:02:00Z",
            "execution": "ex-1",
        },
        {
            "at": "2026-12-01T10:04:00Z",
            "command": "git add ../priv/static/assets/app.css",
            "cwd": "assets",
            "exit_code": 1,
            "execution": "ex-1",
        },
        {
            "at": "2026-12-01T10:05:00Z",
            "command": "git add priv/static/assets/app.css",
            "cwd": "",
            "exit_code": 1,
            "execution": "ex-2",
        },
    ]
    assert "times" not in group and "commands" not in group  # the calls hold them
    assert item["resolution"]["command"] == "git add -f priv/static/assets/app.css"
    assert item["seconds_to_resolution"] == 6 * 60.0
    # What was edited before it was resolved (not what was only read, nor what came after).
    assert item["edited_before_resolution"] == [".gitignore"]
    # The final texts of the executions its calls ran in.
    assert [(c["execution"], c["text"]) for c in item["completions"]] == [
        ("ex-1", "Staged everything but the CSS."),
        ("ex-2", "Committed with -f."),
    ]


def test_an_episode_adds_to_the_scanners_item_only_what_it_has() -> None:
    task = build_discovery("repository_discovery", git_add_session())
    (scanned,) = scan(git_add_session()).evidence
    view = task.to_json()["evidence"][0]
    assert set(view) - set(scanned.model_dump(mode="json")) == {
        "edited_before_resolution",
        "receipts_omitted",
        "completions",
    }
    for name in ("groups_omitted", "not_counted_omitted", "calls_omitted", "evidence_omitted"):
        assert name not in json.dumps(task.to_json())


def test_the_files_edited_before_the_resolution_are_among_the_failures_files() -> None:
    task = build_discovery("repository_discovery", git_add_session())
    assert ".gitignore" in [f.path for f in task.files]


# --- the bound, with 256 failures ---------------------------------------------------------


def many_failures(count: int) -> RunRecord:
    """`count` failures: 64 families, each failing the same way again and again from
    the same command (so collapsed), plus a distinct command for each failure."""
    failures = []
    for n in range(count):
        family = f"make target-{n % 64}"
        command = f"make target-{n % 64}" if n % 2 else f"make target-{n % 64} V={n} " + "x" * 200
        failures.append(
            failure(
                n % 60,
                family,
                f"make: *** [target-{n % 64}] Error 2 " + "y" * 300,
                command,
                execution=f"ex-{n % 3}",
            )
        )
    return record(failures, completions={f"ex-{n}": "z" * 3000 for n in range(3)})


@pytest.mark.parametrize("bound", [8_000, 16_000, 30_000])
def test_the_bound_holds_with_256_failures(bound: int) -> None:
    run = many_failures(256)
    assert len(run.tool_failures) == 256 and len(scan(run).evidence) == 64
    full = build_discovery("repository_discovery", run)
    task = build_discovery("repository_discovery", run, max_bytes=bound)
    assert rendered_size(task) <= bound < rendered_size(full)
    # Chosen within the bound: some episodes whole or in part, the rest counted.
    assert task.evidence, "no episode fits"
    assert task.evidence_omitted + len(task.evidence) == 64
    assert task.evidence_omitted > full.evidence_omitted
    for item in task.evidence:
        for group in item.failures:
            shown = sum(c.count for c in group.calls)
            assert shown <= group.count
            if group.calls_omitted == 0:
                assert shown == group.count
            # Deduplicated: the same call is one entry.
            keys = [(c.command, c.cwd, c.execution) for c in group.calls]
            assert len(keys) == len(set(keys))


def test_without_a_bound_the_failures_of_a_task_stay_within_their_own_total() -> None:
    limits = TaskLimits(failures_total_bytes=6_000)
    small = build_discovery("repository_discovery", many_failures(256), limits=limits)
    whole = build_discovery("repository_discovery", many_failures(256))
    assert rendered_size(small) < rendered_size(whole)
    assert small.evidence_omitted > 0
    assert json.loads(small.model_dump_json())["evidence_omitted"] == small.evidence_omitted


# --- maintenance ------------------------------------------------------------------------------


def lesson(
    lesson_id: str = "L-1",
    *,
    files: tuple[str, ...] = (),
    folders: tuple[str, ...] = (),
    evidence: Evidence | None = None,
) -> Lesson:
    return Lesson(
        id=lesson_id,
        revision=1,
        scope=RepositoryScope(repository=NAMESPACE),
        title=f"Lesson {lesson_id}",
        recommendation="Run `git add -f priv/static/assets/app.css` to stage the built CSS.",
        associations=Associations(files=list(files), folders=list(folders)),
        evidence=evidence or Evidence(),
    )


def maintenance_record(**extra: Any) -> RunRecord:
    """`git add` of the ignored folder, `git push` without an upstream (in `assets/` once),
    and `mix test` from `test/`; L-1 delivered at 10:03."""
    return record(
        [
            failure(1, "git add", IGNORED, "git add priv/static/assets/app.css"),
            failure(2, "git push", UPSTREAM, "git push", exit_code=128),
            failure(4, "git add", IGNORED, "git add priv/static/assets/app.css"),
            failure(5, "mix test", "1 test, 1 failure", "mix test", cwd="test/live"),
            failure(6, "git push", UPSTREAM, "git push", cwd="assets", exit_code=128),
        ],
        deliveries=[{"session": "s-1", "lesson": "L-1", "revision": 1, "at": at(3)}],
        **extra,
    )


def test_maintenance_sees_the_failures_on_a_lessons_files_and_which_came_after_delivery() -> None:
    by_file = lesson("L-1", folders=("priv/static",))
    by_cwd = lesson("L-2", folders=("test",))
    unrelated = lesson("L-3", files=("lib/other.ex",))
    task = build_repository_maintenance(
        maintenance_record(), [by_file, by_cwd, unrelated], checkout=None
    )
    failures = {f.id: f for f in task.failures}
    lessons = {x.id: x for x in task.lessons}
    (add,) = [failures[i] for i in lessons["L-1"].run_failures]
    assert (add.family, add.error, add.count) == ("git add", IGNORED, 2)
    assert [c.at for c in add.calls] == ["2026-12-01T10:01:00Z"] and add.calls[0].count == 2
    # One of the two came after L-1 was delivered at 10:03: it did not prevent it.
    assert lessons["L-1"].failed_after_delivery == (add.id,)
    (test,) = [failures[i] for i in lessons["L-2"].run_failures]
    assert test.family == "mix test" and test.calls[0].cwd == "test/live"
    assert lessons["L-2"].failed_after_delivery == ()  # never delivered
    assert lessons["L-3"].run_failures == ()
    assert "git push" not in {f.family for f in task.failures}  # no lesson is about it
    data = task.to_json()
    assert list(data)[:4] == ["specialist", "run", "evidence", "failures"]
    assert "run_failures" not in data["lessons"][2]


def test_a_lesson_written_against_a_failure_family_sees_that_family_fail_again() -> None:
    earlier = "run-earlier"
    written = lesson(
        "L-1",
        files=("lib/app.ex",),
        evidence=Evidence(
            run_ids=[earlier],
            evidence_ids=[evidence_id(earlier, "tool_failures", family="git push")],
        ),
    )
    task = build_repository_maintenance(maintenance_record(), [written], checkout=None)
    (push,) = task.failures
    assert (push.family, push.count, push.exit_codes) == ("git push", 2, (128,))
    assert [c.cwd for c in push.calls] == ["", "assets"]
    assert task.lessons[0].run_failures == (push.id,)
    assert task.lessons[0].failed_after_delivery == (push.id,)
    assert lesson_families(written, "run-episodes", {"git push", "git add"}) == {"git push"}


def test_a_commands_association_names_the_families_a_lesson_is_about() -> None:
    # `associations.commands` (SPEC §5) is matched when lessons have it; a stand-in here.
    with_commands = lesson("L-1").model_copy(
        update={"associations": SimpleNamespace(commands=["mix test"], files=[], folders=[])}
    )
    assert lesson_families(with_commands, "run-x", {"mix test", "git push"}) == {"mix test"}
    assert lesson_families(lesson("L-2"), "run-x", {"mix test"}) == set()


def test_maintenance_without_failures_reads_as_before() -> None:
    task = build_repository_maintenance(
        record([]), [lesson("L-1", files=("lib/a.ex",))], checkout=None
    )
    data = task.to_json()
    assert "failures" not in data and "failures_omitted" not in data
    assert "run_failures" not in data["lessons"][0]


def test_maintenance_failures_stay_within_the_bound() -> None:
    run = many_failures(256)
    # A lesson written against every family's repeated failures in an earlier run.
    families = [f"make target-{n}" for n in range(64)]
    ids = [evidence_id("run-0", "tool_failures", family=f) for f in families]
    about_all = lesson("L-1", evidence=Evidence(run_ids=["run-0"], evidence_ids=ids))
    full = build_repository_maintenance(run, [about_all], checkout=None)
    assert len(full.failures) + full.failures_omitted == 64
    bound = 12_000
    task = build_repository_maintenance(run, [about_all], checkout=None, max_bytes=bound)
    assert rendered_size(task) <= bound
    assert task.failures and task.failures_omitted > 0
    shown = {f.id for f in task.failures}
    assert set(task.lessons[0].run_failures) == shown


def test_a_timeout_whose_execution_touched_a_lessons_files_concerns_it() -> None:
    run = RunBuilder(software_change())
    first = run.visit("worker", error("timeout"))
    run.visit("worker", error("timeout"), attempt=2)
    run.visit("worker", ok(), attempt=3)
    run.completions = {first: "timed out"}
    run.receipt("Bash", ["Makefile"], 2.5 / 60)  # during the first visit (seconds 2 to 3)
    data = with_graph_hash(run.build())
    data["repository"]["namespace"] = NAMESPACE
    delivered = data["events"][0]["at"]
    data["deliveries"] = [{"session": "s-1", "lesson": "L-1", "revision": 1, "at": delivered}]
    timed_out = parse_run_record(data)
    makefile = lesson("L-1", files=("Makefile",))
    task = build_repository_maintenance(
        timed_out, [makefile], checkout=None, evidence=scan(timed_out)
    )
    (item,) = [i for i in task.evidence if i.kind == "timeout_crash"]
    assert item.id in task.lessons[0].run_evidence
    assert item.id in task.lessons[0].failed_after_delivery
    other = build_repository_maintenance(
        timed_out, [lesson("L-1", files=("README.md",))], checkout=None, evidence=scan(timed_out)
    )
    assert not [i for i in other.evidence if i.kind == "timeout_crash"]


def test_graph_maintenance_sees_the_timeouts_after_its_lesson_was_delivered() -> None:
    run = RunBuilder(software_change())
    run.visit("worker", error("timeout"))
    run.visit("worker", error("timeout"), attempt=2)
    data = with_graph_hash(run.build())
    graph = data["graph"]["hash"]
    data["deliveries"] = [
        {"session": "s-1", "lesson": "G-1", "revision": 1, "at": data["events"][0]["at"]}
    ]
    timed_out = parse_run_record(data)
    task = build_graph_maintenance(
        timed_out, [graph_lesson("G-1", graph=graph)], evidence=scan(timed_out)
    )
    (item,) = [i for i in task.evidence if i.kind == "timeout_crash"]
    assert task.lessons[0].failed_after_delivery == (item.id,)
