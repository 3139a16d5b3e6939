"""`lessons audit` screens what a store already holds and never prints the secret."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from conftest import AUTHOR, NAMESPACE, card

from active_memory.cli import main
from active_memory.lessons import AdaptLesson, CreateLesson, Evidence, RepositoryScope
from active_memory.store import open_store, resolve_store_location

KEY = "AKIA" + "IOSFODNN7EXAMPLE"  # AWS's documented example key id
TOKEN = "xoxb" + "-2401234567-2398765432-Ab3De5Gh7Jk9Mn2Pq4St6Vw8"


def _seed(path: Path, *creates: CreateLesson, adapt: bool = False) -> None:
    async def main_() -> None:
        async with open_store(resolve_store_location(str(path)), create=True) as store:
            receipt = await store.publish(list(creates))
            if adapt:
                lesson_id, revision = receipt.created[0]
                clean = card("Regenerate the client, cleaned")
                await store.publish(
                    [AdaptLesson(id=lesson_id, base_revision=revision, card=clean, author=AUTHOR)]
                )

    anyio.run(main_, backend="asyncio")


def _create(title: str, recommendation: str, **evidence: object) -> CreateLesson:
    return CreateLesson(
        scope=RepositoryScope(repository=NAMESPACE),
        card=card(title, recommendation=recommendation),
        evidence=Evidence.model_validate(evidence),
        author=AUTHOR,
    )


def test_audit_of_a_clean_store_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "lessons.sqlite3"
    _seed(store, _create("Regenerate the client", "Run `make api-client` after edits."))
    assert main(["lessons", "audit", "--store", str(store), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"findings": []}
    assert main(["lessons", "audit", "--store", str(store)]) == 0
    assert "No credentials found" in capsys.readouterr().out


def test_audit_lists_each_stored_secret_masked_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # one line per row: the excerpt is not folded
    store = tmp_path / "lessons.sqlite3"
    _seed(
        store,
        _create("Regenerate the client", "Run `make api-client` after edits."),
        _create(
            "Deploy with the CI key",
            f"Export AWS_ACCESS_KEY_ID={KEY} before `make deploy`.",
            citations=[{"path": f"ops/{TOKEN}.env"}],
        ),
    )
    assert main(["lessons", "audit", "--store", str(store), "--json"]) == 1
    out = capsys.readouterr().out
    assert KEY not in out and TOKEN not in out
    findings = json.loads(out)["findings"]
    assert [(f["field"], f["kind"]) for f in findings] == [
        ("recommendation", "aws-access-key"),
        ("evidence.citations[0].path", "slack-token"),
    ]
    assert {f["lesson_id"] for f in findings} == {findings[0]["lesson_id"]}
    assert "[REDACTED:aws-access-key]" in findings[0]["excerpt"]

    assert main(["lessons", "audit", "--store", str(store)]) == 1
    table = capsys.readouterr().out
    assert KEY not in table and TOKEN not in table
    assert "[REDACTED:aws-access-key]" in table and "2 credentials stored" in table


def test_audit_finds_a_secret_left_in_an_earlier_revision(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "lessons.sqlite3"
    _seed(store, _create("Deploy with the CI key", f"Use {KEY} to deploy."), adapt=True)
    assert main(["lessons", "audit", "--store", str(store), "--json"]) == 1
    [finding] = json.loads(capsys.readouterr().out)["findings"]
    assert finding["field"] == "history[r1].card.recommendation"


def test_audit_of_a_missing_store_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["lessons", "audit", "--store", str(tmp_path / "none.sqlite3")]) == 2
    assert capsys.readouterr().err


def test_import_of_a_lesson_with_a_credential_imports_nothing_and_masks_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "lessons.sqlite3"
    leaking = {
        "id": "L-1",
        "revision": 1,
        "scope": {"kind": "repository", "repository": NAMESPACE},
        "title": "Deploy with the CI key",
        "recommendation": f"Export AWS_ACCESS_KEY_ID={KEY} before `make deploy`.",
        "associations": {"files": ["ops/deploy.sh"]},
    }
    source = tmp_path / "lessons.jsonl"
    source.write_text(json.dumps(leaking) + "\n", encoding="utf-8")
    assert main(["lessons", "import", str(source), "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert "line 1: recommendation: contains a credential (aws-access-key)" in err
    assert KEY not in err and "nothing was imported" in err
    assert not store.exists()


def test_revert_to_a_revision_holding_a_credential_is_refused_masked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "lessons.sqlite3"
    _seed(store, _create("Deploy with the CI key", f"Use {KEY} to deploy."), adapt=True)
    capsys.readouterr()
    assert main(["lessons", "list", "--store", str(store), "--json"]) == 0
    lesson_id = json.loads(capsys.readouterr().out)["lessons"][0]["id"]
    assert main(["lessons", "revert", lesson_id, "--to", "1", "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert "holds a credential; not reverted" in err and KEY not in err
    assert "[REDACTED:aws-access-key]" in err
    assert main(["lessons", "show", lesson_id, "--store", str(store), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["revision"] == 2
