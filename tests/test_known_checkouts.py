"""This machine's checkout per repository namespace (known_checkouts.py): what is
recorded, what is trusted when read, and where it is learnt (a session import)."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from checkout_support import git_checkout

from active_memory.cli import main
from active_memory.known_checkouts import (
    MAX_PER_NAMESPACE,
    REGISTRY_FILE,
    KnownCheckouts,
    registry_path,
    remember,
    remember_folder,
)

API = "repo:github.com/acme/api"
WEB = "repo:github.com/acme/web"
REAL_SESSION = Path(__file__).parent / "fixtures" / "sessions" / "claude-2.1.332-real"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"ZEROSHOT_STATE_DIR": str(tmp_path / "state")}


def _checkout(root: Path, namespace: str) -> Path:
    return git_checkout(root, {"README.md": "x\n"}, namespace)


def test_a_checkout_is_remembered_under_its_namespace_and_found_again(
    tmp_path: Path, env: dict[str, str]
) -> None:
    api = _checkout(tmp_path / "api", API)
    (api / "src").mkdir()
    assert remember(API, api / "src", "session", env)  # a subfolder names its checkout
    assert KnownCheckouts(env=env).root(API) == api
    assert KnownCheckouts(env=env).root(WEB) is None
    path = registry_path(env)
    assert path == tmp_path / "state" / "active-memory" / REGISTRY_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    document = json.loads(path.read_text())
    assert document["schema"] == "active-memory/checkouts@1"
    assert [c["path"] for c in document["repositories"][API]] == [str(api)]
    assert document["repositories"][API][0]["source"] == "session"


def test_a_folder_of_another_repository_is_not_recorded_under_a_namespace(
    tmp_path: Path, env: dict[str, str]
) -> None:
    web = _checkout(tmp_path / "web", WEB)
    assert not remember(API, web, "import", env)
    assert not remember(API, tmp_path / "nowhere", "import", env)
    assert not registry_path(env).exists()
    assert remember_folder(web, "ui", env) == WEB
    assert KnownCheckouts(env=env).root(WEB) == web


def test_the_newest_checkout_wins_and_a_gone_or_recloned_one_is_skipped(
    tmp_path: Path, env: dict[str, str]
) -> None:
    old = _checkout(tmp_path / "old", API)
    new = _checkout(tmp_path / "new", API)
    remember(API, old, "session", env)
    remember(API, new, "session", env)
    assert KnownCheckouts(env=env).root(API) == new
    shutil.rmtree(new)  # deleted: the older one is used
    assert KnownCheckouts(env=env).root(API) == old
    shutil.rmtree(old / ".git")  # re-made as another repository: never judged against
    _checkout(old, WEB)
    assert KnownCheckouts(env=env).root(API) is None


def test_each_namespace_keeps_its_newest_checkouts_only(
    tmp_path: Path, env: dict[str, str]
) -> None:
    roots = [_checkout(tmp_path / f"api-{n}", API) for n in range(MAX_PER_NAMESPACE + 2)]
    for root in roots:
        remember(API, root, "session", env)
    kept = KnownCheckouts(env=env).recorded()[API]
    assert [Path(c.path) for c in kept] == roots[::-1][:MAX_PER_NAMESPACE]


def test_a_given_checkout_comes_before_the_recorded_ones(
    tmp_path: Path, env: dict[str, str]
) -> None:
    recorded = _checkout(tmp_path / "recorded", API)
    given = _checkout(tmp_path / "given", API)
    remember(API, recorded, "session", env)
    known = KnownCheckouts([given], env)
    assert known.root(API) == given and known.given == {API: given}
    assert known.namespaces() == [API]


def test_a_damaged_registry_reads_as_empty_and_is_set_aside_at_the_next_write(
    tmp_path: Path, env: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    path = registry_path(env)
    path.parent.mkdir(parents=True)
    path.write_text('{"schema": "active-memory/checkouts@1", "repositories": {"x": 1}')
    assert KnownCheckouts(env=env).root(API) is None
    assert "damaged" in caplog.text
    api = _checkout(tmp_path / "api", API)
    assert remember(API, api, "session", env)
    assert KnownCheckouts(env=env).root(API) == api
    assert path.with_name(REGISTRY_FILE + ".damaged").read_text().startswith('{"schema"')


def test_a_real_session_import_teaches_this_machine_its_checkout(
    tmp_path: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Claude Code 2.1.332's own transcript, its working folder moved to a checkout here.
    api = _checkout(tmp_path / "demo", API)
    (transcript,) = REAL_SESSION.glob("*.jsonl")
    moved = tmp_path / transcript.name
    moved.write_text(transcript.read_text().replace('"/home/dev/demo', f'"{api}'))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    assert main(["import", "claude", str(moved), "--out", str(tmp_path / "runs")]) == 0
    assert KnownCheckouts(env=env).root(API) == api
    seen = KnownCheckouts(env=env).recorded()[API][0]
    assert seen.source == "import" and os.path.isabs(seen.path)
