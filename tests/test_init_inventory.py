"""init's inventory of zeroshot ledgers and its ignore-list parsing."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest
from init_support import head, make_repository
from run_builder import RunBuilder, software_change
from specialist_builders import git
from test_import_zeroshot import _finished_events, _ledger, _started

from active_memory.errors import UsageError
from active_memory.init.ignore import graph_keys, parse_list, repository_aliases
from active_memory.init.inventory import candidate_roots, ledgers, take_inventory

ZEROSHOT_REMOTE = "https://github.com/open-engine/zeroshot.git"


def _rust_ledger(state: Path) -> Path:
    folder = state / "runs" / "run-1"
    folder.mkdir(parents=True)
    running = [{"kind": "run_started"}, _started("run-2", 1)]
    return _ledger(
        folder, {"run-1": ("finished", _finished_events("run-1")), "run-2": ("running", running)}
    )


def test_ledgers_are_found_under_the_zeroshot_rust_state_dir_from_xdg(tmp_path: Path) -> None:
    file = _rust_ledger(tmp_path / "xdg" / "zeroshot-rust")
    environ = {"HOME": str(tmp_path / "home"), "XDG_STATE_HOME": str(tmp_path / "xdg")}
    assert ledgers(environ) == [file]


def test_ledger_runs_are_excluded_with_reasons_not_dropped(tmp_path: Path) -> None:
    _rust_ledger(tmp_path / "rust")
    environ = {"HOME": str(tmp_path / "home"), "ZEROSHOT_RUST_STATE_DIR": str(tmp_path / "rust")}
    inventory = take_inventory(None, (), (), environ)
    assert inventory.selected == ()
    kinds = {(x.run_id, x.kind) for x in inventory.excluded}
    # zeroshot's ledger records no workspace; without a --checkout nothing can hold it
    assert kinds == {("run-1", "missing_checkout"), ("run-2", "unfinished")}


def test_ignore_values_split_on_commas_and_spaces_and_repeat() -> None:
    assert parse_list(["a,b", "c d", "a", " , "]) == ("a", "b", "c", "d")
    assert parse_list(None) == ()


def test_repository_aliases_cover_folder_path_names_and_namespace() -> None:
    record = RunBuilder(software_change()).record()
    assert record.repository is not None
    checkout = record.repository.checkout
    assert checkout is not None
    aliases = repository_aliases(record)
    assert {"repo:github.com/acme/api", "acme/api", "api", checkout} <= aliases
    assert Path(checkout).name in aliases
    assert "API" not in aliases  # exact and case-sensitive


def test_graph_keys_are_the_name_the_root_name_and_the_hash() -> None:
    record = RunBuilder(software_change()).record()
    assert record.graph is not None and record.graph.ir is not None
    assert graph_keys(record) == {"test", record.graph.ir.root.name}


def ledger_run(state: Path, run_id: str, repository: str, revision: str) -> Path:
    """A zeroshot-rust ledger holding one finished run whose resolved source (the
    `ResolvedSource` {repository, branch, revision} zeroshot stores in `admitted` and
    `snapshot`) names `repository` at `revision`."""
    folder = state / "runs" / run_id
    folder.mkdir(parents=True)
    file = _ledger(folder, {run_id: ("finished", _finished_events(run_id))})
    source = {"repository": repository, "branch": "main", "revision": revision}
    connection = sqlite3.connect(file)
    (text,) = connection.execute("SELECT stored_json FROM v2_runs WHERE run_id = ?", (run_id,))
    stored = json.loads(text[0])
    stored["admitted"]["source"] = source
    stored["snapshot"]["source"] = source
    connection.execute(
        "UPDATE v2_runs SET stored_json = ? WHERE run_id = ?", (json.dumps(stored), run_id)
    )
    connection.commit()
    connection.close()
    return file


def _environ(tmp_path: Path) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home"), "ZEROSHOT_RUST_STATE_DIR": str(tmp_path / "rust")}


def _clone(source: Path, target: Path, remote: str) -> Path:
    subprocess.run(["git", "clone", "-q", str(source), str(target)], check=True)
    git(target, "remote", "set-url", "origin", remote)
    return target


def test_a_ledger_run_is_selected_in_the_named_checkout_with_its_remote_and_revision(
    tmp_path: Path,
) -> None:
    repos = tmp_path / "repos"
    zeroshot = make_repository(repos, "zeroshot", ZEROSHOT_REMOTE)
    other = make_repository(repos, "other", "git@github.com:acme/other.git")
    ledger_run(tmp_path / "rust", "run-z1", "open-engine/zeroshot", head(zeroshot))
    roots = candidate_roots([other, zeroshot / "api"])
    inventory = take_inventory(None, (), (), _environ(tmp_path), roots)
    assert inventory.excluded == ()
    (chosen,) = inventory.selected
    assert chosen.record.run_id == "run-z1"
    assert chosen.checkout == zeroshot.resolve()
    assert chosen.to_json()["repository"] == "repo:github.com/open-engine/zeroshot"


def test_a_named_checkout_without_the_recorded_revision_is_not_chosen(tmp_path: Path) -> None:
    zeroshot = make_repository(tmp_path / "repos", "zeroshot", ZEROSHOT_REMOTE)
    ledger_run(tmp_path / "rust", "run-z1", "open-engine/zeroshot", "f" * 40)
    inventory = take_inventory(None, (), (), _environ(tmp_path), candidate_roots([zeroshot]))
    assert inventory.selected == ()
    (excluded,) = inventory.excluded
    assert excluded.kind == "missing_checkout"
    assert "ffffffffffff" in excluded.reason and "--checkout" in excluded.reason


def test_a_named_checkout_with_the_revision_but_another_remote_is_not_chosen(
    tmp_path: Path,
) -> None:
    fork = make_repository(tmp_path / "repos", "fork", "https://github.com/someone/zeroshot.git")
    ledger_run(tmp_path / "rust", "run-z1", "open-engine/zeroshot", head(fork))
    inventory = take_inventory(None, (), (), _environ(tmp_path), candidate_roots([fork]))
    assert inventory.selected == ()
    assert [x.kind for x in inventory.excluded] == ["missing_checkout"]


def test_two_named_checkouts_that_both_prove_the_run_exclude_it_as_ambiguous(
    tmp_path: Path,
) -> None:
    first = make_repository(tmp_path / "repos", "zeroshot", ZEROSHOT_REMOTE)
    second = _clone(first, tmp_path / "repos" / "zeroshot-2", ZEROSHOT_REMOTE)
    ledger_run(tmp_path / "rust", "run-z1", "open-engine/zeroshot", head(first))
    roots = candidate_roots([first, second])
    inventory = take_inventory(None, (), (), _environ(tmp_path), roots)
    assert inventory.selected == ()
    (excluded,) = inventory.excluded
    assert excluded.kind == "ambiguous_checkout"
    assert str(first.resolve()) in excluded.reason and str(second.resolve()) in excluded.reason


def test_checkout_candidates_are_distinct_working_tree_tops(tmp_path: Path) -> None:
    root = make_repository(tmp_path / "repos", "zeroshot", ZEROSHOT_REMOTE)
    assert candidate_roots([root / "api", root, root]) == (str(root.resolve()),)
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(UsageError, match=r"--checkout .*not a git working tree"):
        candidate_roots([plain])
