"""init's inventory of zeroshot ledgers and its ignore-list parsing."""

from __future__ import annotations

from pathlib import Path

from run_builder import RunBuilder, software_change
from test_import_zeroshot import _finished_events, _ledger, _started

from active_memory.init.ignore import graph_keys, parse_list, repository_aliases
from active_memory.init.inventory import ledgers, take_inventory


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
    # zeroshot's ledger records no workspace, so its finished run cannot be checked out
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
