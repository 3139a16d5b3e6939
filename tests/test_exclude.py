"""`exclude` path globs: the setting, its precedence, and recall (hook and server)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from recall_support import (
    claude_payload,
    hook_env,
    make_checkout,
    publish,
    repository_lesson,
    run_hook,
)

from active_memory.cli import main
from active_memory.exclusion import is_excluded, pattern_problem
from active_memory.recall.engine import answer_hook
from active_memory.recall.records import read_receipts
from active_memory.settings import SettingsError, effective_settings


@pytest.mark.parametrize(
    ("pattern", "path", "excluded"),
    [
        ("secrets", "secrets/key.pem", True),
        ("secrets", "src/secrets/key.pem", True),  # a name at any depth
        ("secrets/", "src/secrets/a.txt", True),
        ("secrets", "src/secretsauce.py", False),
        ("*.pem", "deploy/tls/server.pem", True),
        ("*.pem", "deploy/tls/server.pem.txt", False),
        ("src/vendor", "src/vendor/lib/x.py", True),
        ("src/vendor", "lib/src/vendor/x.py", False),  # a / anchors at the root
        ("/notes.md", "notes.md", True),
        ("/notes.md", "docs/notes.md", False),
        ("docs/**/draft.md", "docs/draft.md", True),
        ("docs/**/draft.md", "docs/a/b/draft.md", True),
        ("docs/**/draft.md", "docs/a/b/final.md", False),
        ("**/fixtures/private", "tests/x/fixtures/private/a.json", True),
        ("data/*.csv", "data/a.csv", True),
        ("data/*.csv", "data/sub/a.csv", False),
        ("log?.txt", "log1.txt", True),
        ("log[0-9].txt", "logx.txt", False),
        ("a+b(c).py", "a+b(c).py", True),  # regex characters are literal
    ],
)
def test_globs_read_like_gitignore(pattern: str, path: str, excluded: bool) -> None:
    assert is_excluded(path, (pattern,)) is excluded
    assert is_excluded("./" + path, (pattern,)) is excluded


@pytest.mark.parametrize(
    ("pattern", "problem"),
    [
        ("!secrets", "negation"),
        ("../other", "inside the checkout"),
        ("src\\x", "backslashes"),
        ("", "non-empty"),
        ("**", "whole checkout"),
        ("/", "whole checkout"),
    ],
)
def test_unsafe_patterns_are_refused(pattern: str, problem: str) -> None:
    assert problem in (pattern_problem(pattern) or "")


@pytest.fixture
def place(tmp_path: Path) -> dict[str, Any]:
    checkout = make_checkout(tmp_path / "api")
    (checkout / "src").mkdir()
    (checkout / "secrets").mkdir()
    state = tmp_path / "state"
    env = hook_env(state, tmp_path / "lessons.sqlite3")
    user = state / "active-memory" / "settings.toml"
    user.parent.mkdir(parents=True)
    return {
        "checkout": checkout,
        "env": env,
        "user": user,
        "repo": checkout / ".active-memory.toml",
        "recall": state / "active-memory" / "recall",
        "store": tmp_path / "lessons.sqlite3",
    }


def test_exclude_adds_up_across_layers_and_names_each_source(place: dict[str, Any]) -> None:
    place["repo"].write_text('exclude = ["secrets/", "*.pem"]\n', encoding="utf-8")
    place["user"].write_text('exclude = ["notes/", "*.pem"]\n', encoding="utf-8")
    settings = effective_settings(str(place["checkout"]), place["env"])
    assert settings.exclude == ("secrets/", "*.pem", "notes/")
    assert settings.values["exclude"].source == f"{place['repo']} + {place['user']}"
    # The run's settings decide scopes and budget; they cannot lift an exclusion.
    runtime = {"activeMemory": {"repository": True, "graph": True}}
    assert effective_settings(str(place["checkout"]), place["env"], runtime=runtime).exclude == (
        "secrets/",
        "*.pem",
        "notes/",
    )


def test_no_exclude_is_an_empty_default(place: dict[str, Any]) -> None:
    settings = effective_settings(str(place["checkout"]), place["env"])
    assert settings.exclude == ()
    assert settings.values["exclude"].source == "default"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('exclude = "secrets"\n', "exclude: must be a list"),
        ('exclude = ["!secrets"]\n', "exclude: must be a list"),
        ("exclude = [1]\n", "exclude: must be a list"),
    ],
)
def test_an_invalid_exclude_is_an_error_naming_the_key(
    place: dict[str, Any], text: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    place["repo"].write_text(text, encoding="utf-8")
    with pytest.raises(SettingsError, match=message):
        effective_settings(str(place["checkout"]), place["env"])
    assert main(["settings", "--cwd", str(place["checkout"])]) == 2
    assert "exclude: must be a list" in capsys.readouterr().err


def test_settings_command_shows_the_patterns(
    place: dict[str, Any], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in place["env"].items():
        monkeypatch.setenv(key, value)
    place["repo"].write_text('exclude = ["secrets/"]\n', encoding="utf-8")
    assert main(["settings", "--cwd", str(place["checkout"]), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["settings"]["exclude"] == {"value": ["secrets/"], "source": str(place["repo"])}


def _lessons(place: dict[str, Any]) -> None:
    publish(
        place["store"],
        [
            repository_lesson("Rotate keys via the vault", folders=["secrets"]),
            repository_lesson("Keep handlers small", files=["src/app.py"]),
        ],
    )


def test_the_hook_gives_no_signal_receipt_or_card_for_an_excluded_path(
    place: dict[str, Any],
) -> None:
    _lessons(place)
    place["repo"].write_text('exclude = ["secrets/"]\n', encoding="utf-8")
    excluded = claude_payload(
        "Read", {"file_path": "secrets/prod.env"}, session="s-1", cwd=place["checkout"]
    )
    done = run_hook("claude", json.dumps(excluded), place["env"])
    assert done.returncode == 0 and done.stdout == b""
    assert read_receipts(str(place["recall"]), "session:s-1") == []
    kept = claude_payload("Read", {"file_path": "src/app.py"}, session="s-1", cwd=place["checkout"])
    done = run_hook("claude", json.dumps(kept), place["env"])
    assert b"Keep handlers small" in done.stdout
    receipts = read_receipts(str(place["recall"]), "session:s-1")
    assert [r["paths"] for r in receipts] == [["src/app.py"]]


def test_the_server_path_drops_excluded_paths_from_a_mixed_call(place: dict[str, Any]) -> None:
    # The recall server answers through answer_hook with its environment: same rule.
    _lessons(place)
    place["user"].write_text('exclude = ["secrets"]\n', encoding="utf-8")
    payload = claude_payload(
        "Bash",
        {"command": "cat secrets/prod.env src/app.py"},
        session="s-2",
        cwd=place["checkout"],
    )
    answer = answer_hook("claude", payload, place["env"])
    text = json.dumps(answer)
    assert "Keep handlers small" in text and "Rotate keys" not in text
    receipts = read_receipts(str(place["recall"]), "session:s-2")
    assert [r["paths"] for r in receipts] == [["src/app.py"]]
    assert "secrets" not in json.dumps(receipts)


def test_without_exclude_the_same_call_is_recalled(place: dict[str, Any]) -> None:
    # The control: the excluded folder's lesson does match when nothing excludes it.
    _lessons(place)
    payload = claude_payload(
        "Read", {"file_path": "secrets/prod.env"}, session="s-3", cwd=place["checkout"]
    )
    answer = answer_hook("claude", payload, place["env"])
    assert "Rotate keys via the vault" in json.dumps(answer)
