"""What each specialist is given: bounded, deterministic tasks built from real records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from run_builder import RunBuilder, software_change
from specialist_builders import (
    NAMESPACE,
    checkout,
    git,
    graph_lesson,
    make_repo,
    rejections_record,
    repo_lesson,
    timeouts_record,
    with_graph_hash,
    write_record,
)

from active_memory.checkout import Checkout
from active_memory.evidence import scan
from active_memory.lessons import GraphScope, Lesson
from active_memory.runlog.record import RunRecord
from active_memory.specialists.kinds import SPECIALISTS, kind_of
from active_memory.specialists.tasks import (
    MANIFESTS,
    FileAuthority,
    MaintenanceTask,
    TaskLimits,
    build_discovery,
    build_graph_maintenance,
    build_repository_maintenance,
    canonical_json,
    manifest,
)
from active_memory.specialists.tasks.gather_run import run_essentials


def own(task: MaintenanceTask) -> list[FileAuthority]:
    """The files a task shows for its lessons, without the root's build files after them."""
    return [f for f in task.files if f.path not in MANIFESTS]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path)


@pytest.fixture
def record(tmp_path: Path, repo: Path) -> RunRecord:
    return timeouts_record(tmp_path, repo)


def _graph_hash(record: RunRecord) -> str:
    assert record.graph is not None and record.graph.hash is not None
    return record.graph.hash


# --- kinds ------------------------------------------------------------------------------


def test_the_four_specialists_and_what_they_may_cite() -> None:
    assert list(SPECIALISTS) == [
        "graph_maintenance",
        "repository_maintenance",
        "graph_discovery",
        "repository_discovery",
    ]
    assert kind_of("graph_discovery").evidence_kinds == {"timeout_crash", "rejected_rounds"}
    assert kind_of("repository_discovery").evidence_kinds == {
        "timeout_crash",
        "rejected_rounds",
        "exploration",
        "tool_failures",
    }
    assert kind_of("repository_maintenance").evidence_kinds == frozenset()
    assert kind_of("graph_maintenance").template == "graph_maintenance.md"
    with pytest.raises(ValueError, match="no specialist 'postmortem'"):
        kind_of("postmortem")


# --- repository maintenance ----------------------------------------------------------------


def test_repository_maintenance_reads_the_files_its_lessons_name(
    record: RunRecord, repo: Path
) -> None:
    lesson = repo_lesson(
        files=("api/schema.json", "gone.py", "link.js"),
        folders=("src", "docs"),
        cites=("Makefile",),
    )
    task = build_repository_maintenance(record, [lesson], checkout=checkout(repo))
    files = {f.path: f for f in task.files}
    # The lesson's associations first, then its citations: the most relevant first.
    assert list(files) == ["api/schema.json", "gone.py", "link.js", "Makefile"]
    assert files["api/schema.json"].current and files["api/schema.json"].content == (
        '1: {"openapi": "3.1.0"}',
    )
    makefile = files["Makefile"].content
    assert makefile is not None and any("api-client" in line for line in makefile)
    assert files["gone.py"].status == "missing" and files["gone.py"].content is None
    assert not files["link.js"].current and "ignored" in files["link.js"].reason
    assert [(f.path, f.exists) for f in task.folders] == [("docs", False), ("src", True)]


def test_a_symlink_to_a_tracked_file_shows_the_target_content(
    record: RunRecord, repo: Path
) -> None:
    (repo / "schema-link.json").symlink_to("api/schema.json")
    git(repo, "add", "schema-link.json")
    task = build_repository_maintenance(
        record, [repo_lesson(files=("schema-link.json",))], checkout=checkout(repo)
    )
    [file] = own(task)
    assert file.current and file.target == "api/schema.json" and file.content is not None
    assert "openapi" in file.content[0]


def test_file_content_is_cut_per_file_at_a_character_boundary(
    record: RunRecord, repo: Path
) -> None:
    (repo / "big.txt").write_text("é" * 100)  # 200 bytes, one line
    limits = TaskLimits(file_bytes=51)
    task = build_repository_maintenance(
        record, [repo_lesson(files=("big.txt",))], checkout=checkout(repo), limits=limits
    )
    [file] = own(task)
    assert file.truncated and file.size == 200
    # 50 bytes: the 51st byte would split a character; the cut is said in the content.
    assert file.content == (
        "1: " + "é" * 25,
        "[cut: 150 more bytes of this 200-byte file are not shown]",
    )


def test_files_larger_than_their_share_share_the_budget_equally(
    record: RunRecord, repo: Path
) -> None:
    # Issue 25 (item 4) changed this: the third file used to be omitted because the
    # first two, in order, took the whole budget; now each gets an equal share.
    for name in ("a.txt", "b.txt", "c.txt"):
        (repo / name).write_text("".join(f"line {n}\n" for n in range(40)))  # 310 bytes
    limits = TaskLimits(file_bytes=200, files_total_bytes=900)
    task = build_repository_maintenance(
        record,
        [repo_lesson(files=("a.txt", "b.txt", "c.txt"))],
        checkout=checkout(repo),
        limits=limits,
    )
    a, b, c = own(task)
    for f in (a, b, c):
        assert f.truncated and f.content is not None and not f.omitted
        assert f.content[:2] == ("1: line 0", "2: line 1") and f.content[-1].startswith("[cut: ")
    counts = [len(f.content or ()) for f in (a, b, c)]
    assert max(counts) - min(counts) <= 1  # what a line leaves of one share goes to the next
    shown = [line for f in (a, b, c) for line in f.content or ()]
    assert sum(len(json.dumps(line, ensure_ascii=False)) + 1 for line in shown) <= 900


def test_files_past_the_total_budget_are_listed_without_content(
    record: RunRecord, repo: Path
) -> None:
    # Shares too small to show anything: the files are served in their order instead,
    # each as much as is left; the ones after are listed without content.
    names = [f"{letter}.txt" for letter in "abcde"]
    for name in names:
        (repo / name).write_text("".join(f"line {n}\n" for n in range(40)))  # 310 bytes
    limits = TaskLimits(file_bytes=400, files_total_bytes=800)
    task = build_repository_maintenance(
        record, [repo_lesson(files=tuple(names))], checkout=checkout(repo), limits=limits
    )
    a, b, c, d, e = own(task)
    assert a.content is not None and not a.truncated  # 800 // 5 < 256: in order instead
    assert b.truncated and b.content is not None and b.content[-1].startswith("[cut: ")
    for f in (c, d, e):  # listed, current, without content, and the reason says why
        assert f.omitted and f.content is None and f.current and "size bound" in f.reason
    shown = [line for f in (a, b) for line in f.content or ()]
    assert sum(len(json.dumps(line, ensure_ascii=False)) + 1 for line in shown) <= 800


def test_a_binary_file_is_marked_and_not_shown(record: RunRecord, repo: Path) -> None:
    (repo / "logo.png").write_bytes(b"\x89PNG\0\0\0binary")
    task = build_repository_maintenance(
        record, [repo_lesson(files=("logo.png",))], checkout=checkout(repo)
    )
    [file] = own(task)
    assert file.binary and file.content is None and file.current


def test_without_a_checkout_no_file_is_current(record: RunRecord) -> None:
    task = build_repository_maintenance(record, [repo_lesson()], checkout=None)
    [file] = own(task)
    assert file.status == "no_checkout" and not file.current and file.content is None


def test_maintenance_refuses_a_lesson_of_the_other_scope(record: RunRecord) -> None:
    foreign = graph_lesson(graph=_graph_hash(record))
    with pytest.raises(ValueError, match="it is a graph lesson"):
        build_repository_maintenance(record, [foreign], checkout=None)
    with pytest.raises(ValueError, match="it is a repository lesson"):
        build_graph_maintenance(record, [repo_lesson()])


def test_others_lists_living_lessons_of_the_scope_outside_the_batch(record: RunRecord) -> None:
    living = [
        repo_lesson("L-1"),
        repo_lesson("L-5"),
        graph_lesson("G-1", graph=_graph_hash(record)),
    ]
    task = build_repository_maintenance(record, [repo_lesson("L-1")], checkout=None, living=living)
    assert [o.id for o in task.others] == ["L-5"]


def test_deliveries_are_attached_to_their_lesson(tmp_path: Path, repo: Path) -> None:
    deliveries = [
        {"session": "s-2", "lesson": "L-1", "revision": 1, "at": "2026-11-29T10:05:00Z"},
        {"session": "s-1", "lesson": "L-1", "revision": 1},
        {"session": "s-1", "lesson": "L-9", "revision": 3},
    ]
    record = timeouts_record(tmp_path, repo, deliveries=deliveries)
    task = build_repository_maintenance(record, [repo_lesson("L-1")], checkout=None)
    [lesson] = task.lessons
    assert [(d.session, d.revision) for d in lesson.deliveries] == [("s-1", 1), ("s-2", 1)]


# --- manifest ------------------------------------------------------------------------------


def test_maintenance_abstains_without_delivery_evidence(tmp_path: Path, repo: Path) -> None:
    data_record = timeouts_record(tmp_path, repo)
    data = data_record.model_dump(mode="json", by_alias=True, exclude={"deliveries"})
    absent = RunRecord.model_validate(data)
    assert absent.deliveries is None
    assert manifest("repository_maintenance", absent, [repo_lesson()]) is None
    assert manifest("repository_maintenance", data_record, [repo_lesson()]) == []


def test_the_manifest_holds_the_delivered_lessons_of_the_scope(tmp_path: Path, repo: Path) -> None:
    graph_hash = timeouts_record(tmp_path, repo).graph.hash  # type: ignore[union-attr]
    assert graph_hash is not None
    deliveries = [
        {"session": "s", "lesson": lesson_id, "revision": 1}
        for lesson_id in ("L-1", "L-2", "G-1", "G-2", "G-3", "G-4")
    ]
    record = timeouts_record(tmp_path, repo, deliveries=deliveries)
    lessons: list[Lesson] = [
        repo_lesson("L-2"),
        repo_lesson("L-1"),
        repo_lesson("L-3"),  # not delivered
        repo_lesson("L-4", namespace="repo:github.com/acme/web"),
        graph_lesson("G-1", graph=graph_hash),
        graph_lesson("G-2", graph=graph_hash, node="acceptance"),  # did not execute
        graph_lesson("G-3", graph="f" * 64),  # another graph
        Lesson(
            id="G-4",
            revision=1,
            scope=GraphScope(graph_hash=graph_hash, node="worker", repository="repo:other"),
            title="Qualified elsewhere",
            recommendation="Run `make lint`.",
        ),
    ]
    repository = manifest("repository_maintenance", record, lessons)
    graph = manifest("graph_maintenance", record, lessons)
    assert [x.id for x in repository or []] == ["L-1", "L-2"]
    assert [x.id for x in graph or []] == ["G-1"]


# --- graph maintenance ---------------------------------------------------------------------


def test_graph_maintenance_gets_the_authored_node(tmp_path: Path, repo: Path) -> None:
    record = rejections_record(tmp_path, repo)
    graph_hash = _graph_hash(record)
    task = build_graph_maintenance(
        record,
        [
            graph_lesson("G-1", graph=graph_hash, node="review_repair"),
            graph_lesson("G-2", graph=graph_hash, node="acceptance"),
            graph_lesson("G-3", graph=graph_hash, node="no_such_node"),
            graph_lesson("G-4", graph="e" * 64),
        ],
    )
    nodes = {(n.graph_hash, n.node): n for n in task.nodes}
    repair = nodes[(graph_hash, "review_repair")]
    assert repair.found and repair.kind == "step" and repair.instructions
    assert repair.output == {"kind": "null"}
    assert repair.procedure[-1].startswith("choice ")
    assert "loop review_loop" in repair.procedure
    acceptance = nodes[(graph_hash, "acceptance")]
    assert acceptance.kind == "verifier" and acceptance.signals["verdict"] == [
        "accepted",
        "rejected",
    ]
    assert nodes[(graph_hash, "no_such_node")].reason == "the graph has no such node"
    assert nodes[("e" * 64, "worker")].reason == "the graph is not available"


def test_long_instructions_are_cut(tmp_path: Path, repo: Path) -> None:
    record = rejections_record(tmp_path, repo)
    task = build_graph_maintenance(
        record,
        [graph_lesson(graph=_graph_hash(record))],
        limits=TaskLimits(instructions_bytes=10),
    )
    [node] = task.nodes
    assert node.instructions_truncated and node.instructions == "Make the r"


# --- discovery -----------------------------------------------------------------------------


def test_graph_discovery_gets_only_repeated_failure_evidence(record: RunRecord) -> None:
    graph = build_discovery("graph_discovery", record)
    repository = build_discovery("repository_discovery", record)
    assert [e.kind for e in graph.evidence] == ["timeout_crash"]
    assert [e.kind for e in repository.evidence] == ["timeout_crash", "exploration"]


def test_only_repository_discovery_shows_code_even_without_files(
    record: RunRecord, repo: Path
) -> None:
    # The root listing is shown to a repository task that has no file to show; a graph
    # task gets no code view at all.
    checkout = Checkout(repo)
    graph = build_discovery("graph_discovery", record, checkout=checkout)
    assert graph.files == () and graph.listing == ()
    repository = build_discovery("repository_discovery", record, checkout=checkout)
    assert "" in {listing.folder for listing in repository.listing}


def test_discovery_gets_rejected_rounds_and_their_completions(tmp_path: Path, repo: Path) -> None:
    record = rejections_record(tmp_path, repo)
    task = build_discovery("graph_discovery", record)
    assert [e.kind for e in task.evidence] == ["rejected_rounds"]
    assert {c.execution for c in task.completions} == set(record.completions)
    assert {n.node for n in task.nodes} == {"worker", "review_repair"}


def test_discovery_completions_are_bounded(tmp_path: Path, repo: Path) -> None:
    record = timeouts_record(tmp_path, repo, completions={"ex-1": "a" * 100, "ex-2": "b" * 100})
    task = build_discovery(
        "repository_discovery",
        record,
        limits=TaskLimits(completion_bytes=60, completions_total_bytes=80),
    )
    first, second = task.completions
    assert (first.text, first.truncated) == ("a" * 60, True)
    assert (second.text, second.truncated) == ("b" * 20, True)


def test_run_essentials(record: RunRecord) -> None:
    essentials = run_essentials(record, TaskLimits())
    assert essentials.run_id == "run-1" and essentials.repository == NAMESPACE
    assert essentials.executed_nodes == ("worker",)
    assert essentials.graph_hash == _graph_hash(record)


# --- determinism ---------------------------------------------------------------------------


def test_a_task_serialises_canonically_and_digests_stably(tmp_path: Path, repo: Path) -> None:
    first = build_repository_maintenance(
        timeouts_record(tmp_path, repo), [repo_lesson("L-2"), repo_lesson("L-1")],
        checkout=checkout(repo),
    )  # fmt: skip
    again = build_repository_maintenance(
        timeouts_record(tmp_path, repo), [repo_lesson("L-1"), repo_lesson("L-2")],
        checkout=checkout(repo),
    )  # fmt: skip
    assert first.canonical_json() == again.canonical_json()
    assert first.digest() == again.digest() and len(first.digest()) == 64
    decoded = json.loads(first.canonical_json())
    assert first.canonical_json() == json.dumps(
        decoded, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    (repo / "api" / "schema.json").write_text('{"openapi": "3.2.0"}\n')
    changed = build_repository_maintenance(
        timeouts_record(tmp_path, repo), [repo_lesson("L-1"), repo_lesson("L-2")],
        checkout=checkout(repo),
    )  # fmt: skip
    assert changed.digest() != first.digest()


def test_discovery_digest_does_not_depend_on_the_checkout_location(
    tmp_path: Path,
) -> None:
    one = make_repo(tmp_path / "one")
    two = make_repo(tmp_path / "two")
    a = build_discovery("repository_discovery", timeouts_record(tmp_path / "one", one))
    b = build_discovery("repository_discovery", timeouts_record(tmp_path / "two", two))
    assert a.digest() == b.digest()
    assert str(one) not in a.canonical_json()


def test_task_digest_is_the_provider_input_digest(record: RunRecord) -> None:
    base = pytest.importorskip("active_memory.specialists.providers.base")
    task = build_discovery("repository_discovery", record)
    assert base.input_digest(task.to_json()) == task.digest()


def test_canonical_json_keeps_unicode_and_sorts_keys() -> None:
    assert canonical_json({"b": "é", "a": [1, {"d": 1, "c": 2}]}) == (
        '{"a":[1,{"c":2,"d":1}],"b":"é"}'
    )
    with pytest.raises(ValueError):
        canonical_json({"x": float("nan")})


def test_exploration_receipts_are_bounded_first_and_latest(tmp_path: Path, repo: Path) -> None:
    run = RunBuilder(software_change())
    for minute in range(10):
        run.receipt("Read", [f"src/file_{minute}.py"], minute)
    data = with_graph_hash(run.build())
    data["repository"]["checkout"] = str(repo)
    record = write_record(tmp_path, data)
    task = build_discovery("repository_discovery", record, limits=TaskLimits(receipts_max=4))
    [item] = task.evidence
    assert [r.paths[0] for r in item.receipts] == [
        "src/file_0.py",
        "src/file_1.py",
        "src/file_8.py",
        "src/file_9.py",
    ]
    assert item.receipts_omitted == 6 and item.count == 10


def test_the_root_build_files_follow_the_lessons_files(record: RunRecord, repo: Path) -> None:
    task = build_repository_maintenance(
        record, [repo_lesson(files=("api/schema.json",))], checkout=checkout(repo)
    )
    assert [f.path for f in task.files] == ["api/schema.json", "Makefile"]
    assert [x.folder for x in task.listing] == ["", "api"]
    root = next(x for x in task.listing if x.folder == "")
    assert "Makefile" in root.entries and "notes.md" in root.entries  # untracked, not ignored
    assert not any(e.startswith("build") for e in root.entries)  # ignored: never listed


def test_maintenance_sees_the_evidence_and_texts_that_concern_each_lesson(
    tmp_path: Path, repo: Path
) -> None:
    record = timeouts_record(
        tmp_path, repo, completions=None, exploration=True
    )  # worker timeouts ("gave up reading the schema"), exploration of api/ and src/
    scanned = scan(record)
    graph = build_graph_maintenance(
        record, [graph_lesson("G-1", graph=_graph_hash(record))], evidence=scanned
    )
    [timeouts] = [i for i in graph.evidence if i.kind == "timeout_crash"]
    # Every item naming the lesson's node: its timeouts, and its exploration.
    assert set(graph.lessons[0].run_evidence) == {i.id for i in graph.evidence}
    assert timeouts.id in graph.lessons[0].run_evidence
    assert {c.text for c in timeouts.completions} == {"gave up reading the schema", "timed out"}
    touched = repo_lesson("L-1", files=("api/schema.json",))
    untouched = repo_lesson("L-2", files=("docs/guide.md",))
    task = build_repository_maintenance(
        record, [touched, untouched], checkout=checkout(repo), evidence=scanned
    )
    by_id = task.supplied()
    assert by_id["L-1"].run_evidence and by_id["L-2"].run_evidence == ()
    shown = {i.id for i in task.evidence}
    assert set(by_id["L-1"].run_evidence) <= shown
    # Without the run's evidence the task says nothing about the run: no guessing.
    assert build_repository_maintenance(record, [touched], checkout=checkout(repo)).evidence == ()
