"""Maintenance of a stale lesson is shown a diff: the publish records a bounded, screened
excerpt of each cited range inside the citation, and the maintenance task gets a unified
diff from it to the lines now (docs/staleness.md). Both backends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from checkout_support import git_checkout
from conftest import AUTHOR, NAMESPACE, Backend
from test_postmortem_cli import RUN
from ui_support import publish, read

from active_memory.checkout import Checkout
from active_memory.checkout.staleness import EXCERPT_BYTES, excerpt_of, fingerprint
from active_memory.lessons import (
    Associations,
    Card,
    Citation,
    CreateLesson,
    Evidence,
    Lesson,
    RepositoryScope,
)
from active_memory.orchestrator.publish import fingerprinted
from active_memory.runlog.record import load_run_record
from active_memory.specialists.tasks import (
    build_repository_maintenance,
    rendered_size,
    with_changed_code,
)

SECRET = 'API_TOKEN = "Zq8xR2mK9vLp3TnW7yBc"\n'
CONFIG = "# settings\n" + SECRET + "timeout = 30\nretries = 3\n"
LONG = "".join(f"value_{n:03d} = {'x' * 30}\n" for n in range(1, 201))  # ~8 KB


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    return git_checkout(
        tmp_path / "repo", {"src/config.py": CONFIG, "src/long.py": LONG}, NAMESPACE
    )


def _lesson(title: str, *citations: Citation) -> CreateLesson:
    return CreateLesson(
        scope=RepositoryScope(repository=NAMESPACE),
        card=Card(
            title=title,
            recommendation=f"Keep {title} in mind.",
            associations=Associations(folders=["src"]),
        ),
        evidence=Evidence(run_ids=["run-1"], citations=list(citations)),
        author=AUTHOR,
    )


def _task(location: str, root: Path, ids: list[str], max_bytes: int | None = None) -> dict:  # type: ignore[type-arg]
    lessons = [read(location, lesson_id) for lesson_id in ids]
    assert all(isinstance(x, Lesson) for x in lessons)
    repo = Checkout(root)
    plain = build_repository_maintenance(load_run_record(RUN), lessons, checkout=repo)  # type: ignore[arg-type]
    task = with_changed_code(plain, repo, max_bytes)
    if max_bytes is not None:
        assert rendered_size(task) <= max_bytes
    data: dict = task.to_json()  # type: ignore[type-arg]
    assert "excerpt" not in json.dumps(data)  # recorded text is shown only as a diff
    return data


def test_the_publish_records_a_screened_excerpt_and_maintenance_sees_the_diff(
    backend: Backend, checkout: Path
) -> None:
    publish(backend.location, fingerprinted([
        _lesson("config", Citation(path="src/config.py", lines=(1, 4))),
    ], Checkout(checkout)))  # fmt: skip
    lesson = read(backend.location, "L-1")
    assert isinstance(lesson, Lesson)
    excerpt = lesson.evidence.citations[0].excerpt
    assert excerpt is not None and "Zq8xR2mK9vLp3TnW7yBc" not in excerpt
    assert "[REDACTED:" in excerpt and excerpt.endswith("retries = 3\n")

    (checkout / "src" / "config.py").write_text(CONFIG.replace("timeout = 30", "timeout = 5"))
    view = _task(backend.location, checkout, ["L-1"])["lessons"][0]["cited_code_changed"][0]
    assert view["why"] == "lines changed" and "now" not in view and "note" not in view
    changed = [line for line in view["diff"] if line[:1] in "+-"]
    # Only the changed line: the masked credential, masked alike on both sides, is not.
    assert changed == ["--- recorded", "+++ now", "-timeout = 30", "+timeout = 5"]
    assert not any("Zq8xR2mK9vLp3TnW7yBc" in line for line in view["diff"])


def test_a_lesson_published_before_excerpts_gets_the_lines_now_and_says_so(
    backend: Backend, checkout: Path
) -> None:
    [cited] = fingerprint(Checkout(checkout), [Citation(path="src/long.py", lines=(2, 3))])
    older = cited.model_copy(update={"excerpt": None})  # as stored before this change
    publish(backend.location, [_lesson("old", older)])
    (checkout / "src" / "long.py").write_text(LONG.replace("value_002", "value_two"))
    view = _task(backend.location, checkout, ["L-1"])["lessons"][0]["cited_code_changed"][0]
    assert view["note"] == "recorded text unknown" and "diff" not in view
    assert view["now"][0].startswith("value_two = ")


def test_excerpts_are_bounded_and_a_cut_diff_is_marked(backend: Backend, checkout: Path) -> None:
    publish(backend.location, fingerprinted([
        _lesson("long range", Citation(path="src/long.py", lines=(1, 200))),
        _lesson("long file", Citation(path="src/long.py")),
        _lesson("gone", Citation(path="src/config.py", lines=(3, 4))),
    ], Checkout(checkout)))  # fmt: skip
    first, whole, gone = (read(backend.location, f"L-{n}") for n in (1, 2, 3))
    assert isinstance(first, Lesson) and isinstance(whole, Lesson) and isinstance(gone, Lesson)
    excerpt = first.evidence.citations[0].excerpt
    assert excerpt is not None and len(excerpt.encode()) <= EXCERPT_BYTES
    assert excerpt.endswith("\n") and excerpt.startswith("value_001 = ")
    # A whole file over the bound keeps no excerpt (its start would pass for all of it).
    assert whole.evidence.citations[0].sha256 is not None
    assert whole.evidence.citations[0].excerpt is None

    (checkout / "src" / "long.py").write_text(LONG.replace("x" * 30, "y" * 30))
    (checkout / "src" / "config.py").unlink()
    lessons = _task(backend.location, checkout, ["L-1", "L-2", "L-3"])["lessons"]
    cut = lessons[0]["cited_code_changed"][0]
    assert cut["note"] == "diff cut" and len(cut["diff"]) == 40
    assert lessons[1]["cited_code_changed"][0]["note"] == "recorded text unknown"
    gone_view = lessons[2]["cited_code_changed"][0]
    assert gone_view["why"] == "file gone"
    assert gone_view["diff"][2:] == ["@@ -3,2 +0,0 @@", "-timeout = 30", "-retries = 3"]


def test_the_changed_code_fits_the_tasks_byte_bound(backend: Backend, checkout: Path) -> None:
    publish(backend.location, fingerprinted([
        _lesson(f"range {n}", Citation(path="src/long.py", lines=(n * 20 + 1, n * 20 + 20)))
        for n in range(3)
    ], Checkout(checkout)))  # fmt: skip
    (checkout / "src" / "long.py").write_text(LONG.replace("x" * 30, "z" * 30))
    ids = ["L-1", "L-2", "L-3"]
    full = _task(backend.location, checkout, ids)
    lessons = [read(backend.location, lesson_id) for lesson_id in ids]
    plain = build_repository_maintenance(load_run_record(RUN), lessons, checkout=Checkout(checkout))  # type: ignore[arg-type]
    repo = Checkout(checkout)
    whole = rendered_size(with_changed_code(plain, repo))
    bound = (rendered_size(plain) + whole) // 2  # room for part of the diffs
    small = _task(backend.location, checkout, ids, max_bytes=bound)
    views = [lesson["cited_code_changed"][0] for lesson in small["lessons"]]
    assert all(view["note"] == "diff cut" for view in views)
    assert sum(len(v["diff"]) for v in views) < sum(
        len(lesson["cited_code_changed"][0]["diff"]) for lesson in full["lessons"]
    )


def test_an_excerpt_is_never_kept_half_masked_or_over_one_line() -> None:
    assert excerpt_of(b"x" * (EXCERPT_BYTES + 1) + b"\n", whole_file=False) is None
    assert excerpt_of(b"a\n" + b"b" * EXCERPT_BYTES + b"\n", whole_file=False) == "a\n"
    key = b"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq\n-----END RSA PRIVATE KEY-----\n"
    found = excerpt_of(key, whole_file=True)
    assert found is None or ("MIIEowIBAAKCAQEA7bq" not in found and found.count("\n") == 3)


def test_the_lesson_page_shows_the_diff_when_the_text_was_recorded(
    backend: Backend, checkout: Path
) -> None:
    from starlette.testclient import TestClient
    from ui_support import TOKEN, login

    from active_memory.ui.app import create_app
    from active_memory.ui.auth import Gate

    [cited] = fingerprint(Checkout(checkout), [Citation(path="src/long.py", lines=(2, 3))])
    fresh = _lesson("config <b>", Citation(path="src/config.py", lines=(3, 4)))
    older = _lesson("old", cited.model_copy(update={"excerpt": None}))
    publish(backend.location, [*fingerprinted([fresh], Checkout(checkout)), older])
    (checkout / "src" / "config.py").write_text(CONFIG.replace("timeout = 30", "timeout = <5>"))
    (checkout / "src" / "long.py").write_text(LONG.replace("value_002", "value_two"))
    app = create_app(backend.location, Gate(TOKEN), checkouts=[checkout])
    with TestClient(app, base_url="http://127.0.0.1", follow_redirects=False) as client:
        login(client)
        page = client.get("/lessons/L-1").text
        assert 'id="stale-diff-1"' in page
        # The card as an agent receives it now: with its stale line.
        assert "&lt;active-memory-stale&gt;cited code changed since this lesson was" in page
        assert "src/config.py:3-4&lt;/active-memory-stale&gt;" in page
        # Word by word, escaped like every field.
        assert '<div class="del">timeout = <del>30</del></div>' in page
        assert '<div class="add">timeout = <ins>&lt;5&gt;</ins></div>' in page
        api = client.get("/api/lessons/L-1").json()
        assert api["stale"][0]["diff"][-2:] == ["+timeout = <5>", " retries = 3"]
        old = client.get("/lessons/L-2").text
        assert 'id="stale"' in old and 'id="stale-diff' not in old
        assert "src/long.py:2-3&lt;/active-memory-stale&gt;" in old
