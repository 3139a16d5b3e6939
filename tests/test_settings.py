"""One settings module (SPEC §2 "Settings outside a run"): order, sources, invalid files."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from recall_support import claude_payload, hook_env, make_checkout, run_hook

from active_memory.cli import main
from active_memory.settings import SettingsError, effective_settings, read_settings_file


@pytest.fixture
def place(tmp_path: Path) -> dict[str, Any]:
    checkout = make_checkout(tmp_path / "api")
    state = tmp_path / "state"
    env = hook_env(state, tmp_path / "lessons.sqlite3")
    user = state / "active-memory" / "settings.toml"
    user.parent.mkdir(parents=True)
    return {
        "checkout": checkout,
        "env": env,
        "user": user,
        "repo": checkout / ".active-memory.toml",
    }


def _effective(place: dict[str, Any], **kwargs: Any) -> dict[str, tuple[Any, str]]:
    settings = effective_settings(str(place["checkout"]), place["env"], **kwargs)
    return {name: (item.value, item.source) for name, item in settings.values.items()}


def test_defaults_apply_without_any_file(place: dict[str, Any]) -> None:
    assert _effective(place) == {
        "enabled": (True, "default"),
        "repository": (True, "default"),
        "graph": (True, "default"),
        "budgetBytes": (2048, "default"),
        "review": ("automatic", "default"),
    }


def test_review_comes_from_the_run_only_when_it_says_else_from_the_files(
    place: dict[str, Any],
) -> None:
    place["repo"].write_text('review = "manual"\n', encoding="utf-8")
    assert _effective(place)["review"] == ("manual", str(place["repo"]))
    silent = {"activeMemory": {"budgetBytes": 100}}
    assert _effective(place, runtime=silent)["review"] == ("manual", str(place["repo"]))
    says = {"activeMemory": {"review": "automatic"}}
    assert _effective(place, runtime=says)["review"] == ("automatic", "runtime")
    place["repo"].write_text('review = "sometimes"\n', encoding="utf-8")
    with pytest.raises(SettingsError, match='review: must be "manual" or "automatic"'):
        _effective(place)


def test_each_key_comes_from_the_first_layer_that_sets_it(place: dict[str, Any]) -> None:
    place["user"].write_text("budgetBytes = 900\ngraph = false\n", encoding="utf-8")
    place["repo"].write_text("budgetBytes = 4096\n", encoding="utf-8")
    values = _effective(place)
    assert values["budgetBytes"] == (4096, str(place["repo"]))
    assert values["graph"] == (False, str(place["user"]))
    assert values["repository"] == (True, "default")
    # The run's settings come first.
    place["env"]["ACTIVE_MEMORY_BUDGET_BYTES"] = "300"
    assert _effective(place)["budgetBytes"] == (300, "runtime (ACTIVE_MEMORY_*)")
    runtime = {"activeMemory": {"budgetBytes": 100, "graph": True}}
    values = _effective(place, runtime=runtime)
    assert values["budgetBytes"] == (100, "runtime")
    assert values["graph"] == (True, "runtime")


def test_enabled_false_turns_both_scopes_off(place: dict[str, Any]) -> None:
    place["repo"].write_text("enabled = false\n", encoding="utf-8")
    settings = effective_settings(str(place["checkout"]), place["env"])
    assert settings.scopes == frozenset()
    place["env"]["ACTIVE_MEMORY_SCOPES"] = "graph"  # a run that asks for graph lessons
    settings = effective_settings(str(place["checkout"]), place["env"])
    assert settings.scopes == frozenset({"graph"})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("budgetBytes = 0\n", "budgetBytes: must be an integer 1..16384, found 0"),
        ("budgetBytes = true\n", "budgetBytes: must be an integer 1..16384"),
        ('enabled = "no"\n', "enabled: must be a boolean (true or false), found 'no'"),
        ("budget = 3\n", "budget: unknown setting; allowed: enabled, repository, graph"),
        ("enabled = \n", "not valid TOML"),
    ],
)
def test_an_invalid_file_names_the_file_key_and_range(
    place: dict[str, Any], text: str, message: str
) -> None:
    place["repo"].write_text(text, encoding="utf-8")
    with pytest.raises(SettingsError) as caught:
        effective_settings(str(place["checkout"]), place["env"])
    assert str(caught.value).startswith(str(place["repo"]))
    assert message in str(caught.value)


def test_a_parsed_file_is_cached_until_it_changes(place: dict[str, Any], tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    place["repo"].write_text("budgetBytes = 10\n", encoding="utf-8")
    assert read_settings_file(str(place["repo"]), str(cache)) == {"budgetBytes": 10}
    assert len(list(cache.iterdir())) == 1
    # A changed file (other size and time) is read again, not served from the cache.
    place["repo"].write_text("budgetBytes = 1000\n", encoding="utf-8")
    os.utime(place["repo"], ns=(1, 1))
    assert read_settings_file(str(place["repo"]), str(cache)) == {"budgetBytes": 1000}


def test_settings_command_shows_values_and_sources(
    place: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    place["repo"].write_text("repository = false\n", encoding="utf-8")
    for key in [k for k in os.environ if k.startswith("ACTIVE_MEMORY_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("ZEROSHOT_STATE_DIR", place["env"]["ZEROSHOT_STATE_DIR"])
    assert main(["settings", "--cwd", str(place["checkout"]), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["settings"]["repository"] == {"value": False, "source": str(place["repo"])}
    assert document["scopes"] == ["graph"]
    assert document["root"] == str(place["checkout"])


def test_settings_command_exits_2_on_an_invalid_file(
    place: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    place["user"].write_text("budgetBytes = 99999\n", encoding="utf-8")
    monkeypatch.setenv("ZEROSHOT_STATE_DIR", place["env"]["ZEROSHOT_STATE_DIR"])
    assert main(["settings", "--cwd", str(place["checkout"])]) == 2
    error = capsys.readouterr().err
    assert f"{place['user']}: budgetBytes: must be an integer 1..16384" in error


def test_settings_command_reads_a_runtime_json(
    place: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setenv("ZEROSHOT_STATE_DIR", place["env"]["ZEROSHOT_STATE_DIR"])
    monkeypatch.delenv("ACTIVE_MEMORY_BUDGET_BYTES", raising=False)
    plan = json.loads((Path(__file__).parent.parent / "config.example.json").read_text())
    plan["activeMemory"] = {"budgetBytes": 512}
    config = tmp_path / "plan.json"
    config.write_text(json.dumps(plan), encoding="utf-8")
    cwd = str(place["checkout"])
    assert main(["settings", "--cwd", cwd, "--config", str(config), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["settings"]["budgetBytes"] == {"value": 512, "source": "runtime"}
    plan["activeMemory"] = {"budgetBytes": 0}
    config.write_text(json.dumps(plan), encoding="utf-8")
    assert main(["settings", "--cwd", cwd, "--config", str(config)]) == 2


def test_a_repository_file_reaches_the_hook(place: dict[str, Any]) -> None:
    (place["checkout"] / "src").mkdir()
    payload = claude_payload(
        "Read", {"file_path": "src/a.py"}, session="s-1", cwd=place["checkout"]
    )
    place["repo"].write_text("repository = false\n", encoding="utf-8")
    done = run_hook("claude", json.dumps(payload), place["env"])
    assert done.returncode == 0 and done.stdout == b""
    recall = Path(place["env"]["ZEROSHOT_STATE_DIR"]) / "active-memory" / "recall"
    assert not (recall / "runs").exists()  # repository scope off: no receipt either


def test_a_broken_file_disables_recall_in_the_hook_and_logs(place: dict[str, Any]) -> None:
    payload = claude_payload("Read", {"file_path": "a.py"}, session="s-1", cwd=place["checkout"])
    place["repo"].write_text("budgetBytes = -1\n", encoding="utf-8")
    done = run_hook("claude", json.dumps(payload), place["env"])
    assert done.returncode == 0 and done.stdout == b""
    recall = Path(place["env"]["ZEROSHOT_STATE_DIR"]) / "active-memory" / "recall"
    log = (recall / "hook.log").read_text(encoding="utf-8")
    assert "SettingsError" in log and "budgetBytes: must be an integer 1..16384" in log
    assert not (recall / "runs").exists()


_PROBE = """
import io, sys
sys.stdin = io.TextIOWrapper(io.BytesIO(sys.argv[1].encode()))
from active_memory.hooks.command import main
main(["claude"])
sys.stderr.write(" ".join(sorted(sys.modules)))
"""


def test_a_warm_hook_reads_the_settings_file_from_its_cache(place: dict[str, Any]) -> None:
    import subprocess
    import sys

    place["repo"].write_text("budgetBytes = 4096\n", encoding="utf-8")
    payload = claude_payload("Read", {"file_path": "a.py"}, session="s-1", cwd=place["checkout"])
    run_hook("claude", json.dumps(payload), place["env"])  # parses and caches the file
    probe = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(payload)],
        capture_output=True, text=True, env=place["env"], check=True,
        cwd=str(Path(__file__).resolve().parent.parent),
    )  # fmt: skip
    modules = set(probe.stderr.split())
    assert "active_memory.settings" in modules
    assert not {"tomllib", "re", "json", "typing", "pathlib"} & modules
