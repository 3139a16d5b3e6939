"""The package's import layers (docs/architecture.md): every part has a layer, imports go
down, nothing imports in a circle; and the checker itself finds each kind of breach."""

from __future__ import annotations

from pathlib import Path

import pytest
from layers_support import ROOT_PART, Report, check, imports_of

import active_memory

PACKAGE = Path(active_memory.__file__).resolve().parent

# The layers of DESIGN.md ("Layers, bottom to top"), by first-level part of the package;
# the parts it does not name are marked, their layer decided in docs/architecture.md.
LAYERS: dict[str, int] = {
    # 1. vocabulary and small helpers
    ROOT_PART: 1,  # not named: `active_memory/__init__.py`, the version only
    "lessons": 1,  # a package: limits, fields, associations, scopes, citations, cards, …
    "errors": 1,
    "validation": 1,
    "private": 1,
    "exclusion": 1,
    "atomic_files": 1,
    "processes": 1,
    "credentials": 1,  # the credential screen
    "credential_gate": 1,  # the credential screen's lean rules (its masking function)
    "credential_rules": 1,  # not named: the screen's precompiled table (generated)
    "credential_formats": 1,  # the screen's provider formats, as regex sources
    "file_lock": 1,  # not named: the one file lock
    "file_names": 1,  # not named: file names for keys
    "cited_text": 1,  # not named: where a cited text is now (staleness's one rule)
    "shell": 1,  # not named: the shell tokenizer
    "command_family": 1,  # not named: command families (lessons validates, recall matches)
    "natural_order": 1,  # not named: IDs in natural order (L-2 before L-10)
    "session_budget": 1,  # not named: SPEC §2 budgetBytes, one rule for every reader
    "install_source": 1,  # not named: the pip command that adds an extra to this install
    # 2.
    "store": 2,
    "reader": 2,
    # 3.
    "settings": 3,
    "worker_settings": 3,  # not named: the [worker] table of the settings, the worker's lane
    "worker_state": 3,  # not named: this machine's worker files (lock, status, spend)
    # 4.
    "recall": 4,  # signals → path_signals, terms; shell_signals (lazily); types
    "checkout": 4,
    "known_checkouts": 4,  # not named: each repository's checkout on this machine
    # 5.
    "runlog": 5,  # importers/session → session_endings, _receipts, _timeline, _record
    "node_instructions": 5,
    "hooks": 5,
    "mcp_server": 5,
    "mcp_models": 5,
    "mcp_search": 5,
    "exports": 5,
    # 6.
    "evidence": 6,
    "config": 6,  # a package: fields, models, parse, source_node, files
    "skills": 6,
    "harness_plugins": 6,  # not named: the harnesses' plugin files (hooks + skills)
    # 7. to 10.
    "quality": 7,
    "specialists": 8,
    "prompts": 9,
    "orchestrator": 10,
    # 11.
    "worker": 11,
    "init": 11,
    "ui": 11,
    # 12.
    "commands": 12,
    "cli": 12,
}

# --- the package itself -------------------------------------------------------------


@pytest.fixture(scope="module")
def report() -> Report:
    return check(PACKAGE, LAYERS)


@pytest.fixture(scope="module")
def edges() -> set[tuple[str, str]]:
    return {(item.source, item.target) for item in imports_of(PACKAGE)}


def test_every_part_of_the_package_has_a_layer(report: Report) -> None:
    assert report.unmapped == [], "give each new part a layer here and in the note"


def test_no_module_imports_from_a_higher_layer(report: Report) -> None:
    assert report.upward == []


def test_no_modules_or_packages_import_each_other_in_a_circle(report: Report) -> None:
    assert report.circles == []


def test_the_graph_sees_function_level_and_type_checking_imports(
    edges: set[tuple[str, str]],
) -> None:
    # inside a function (settings.py reads the state folder lazily)
    assert ("active_memory.settings", "active_memory.store.location") in edges
    # under `if TYPE_CHECKING:` (store/__init__.py names its lazy exports)
    assert ("active_memory.store", "active_memory.store.models") in edges


# --- the checker, on synthetic packages ---------------------------------------------


def _package(root: Path, files: dict[str, str]) -> Path:
    package = root / "pkg"
    for name, text in {"__init__.py": "", **files}.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for folder in [p for p in package.rglob("*") if p.is_dir()]:
        (folder / "__init__.py").touch()
    return package


TWO_LAYERS = {ROOT_PART: 1, "low": 1, "high": 2}


def test_a_clean_package_has_no_problem(tmp_path: Path) -> None:
    package = _package(
        tmp_path,
        {"low.py": "X = 1\n", "high.py": "from pkg.low import X\nfrom . import low\n"},
    )
    assert check(package, TWO_LAYERS).problems() == []


def test_a_circle_through_a_function_level_import_is_reported_by_name(tmp_path: Path) -> None:
    package = _package(
        tmp_path,
        {
            "low.py": "def f():\n    from pkg import high\n    return high\n",
            "high.py": "import pkg.low\n",
        },
    )
    report = check(package, {**TWO_LAYERS, "high": 1})
    assert report.circles == ["circle: pkg.high -> pkg.low -> pkg.high"]
    assert report.upward == []


def test_an_upward_import_is_reported_with_module_line_and_layers(tmp_path: Path) -> None:
    package = _package(
        tmp_path,
        {"low.py": '"""Doc."""\n\nfrom pkg.high import Y\n', "high.py": "Y = 2\n"},
    )
    report = check(package, TWO_LAYERS)
    assert report.upward == ["upward: pkg.low:3 (layer 1) imports pkg.high (layer 2)"]
    assert report.circles == []


def test_a_type_checking_import_counts(tmp_path: Path) -> None:
    package = _package(
        tmp_path,
        {
            "low.py": "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from pkg.high import Y\n",
            "high.py": "Y = 2\n",
        },
    )
    assert [line.split(" (")[0] for line in check(package, TWO_LAYERS).upward] == [
        "upward: pkg.low:3"
    ]


def test_a_circle_between_packages_without_a_module_circle_is_reported(tmp_path: Path) -> None:
    # one.py -> b.two and b.three -> a.four: no module imports itself back, yet a and b
    # depend on each other.
    package = _package(
        tmp_path,
        {
            "a/one.py": "from pkg.b import two\n",
            "a/four.py": "",
            "b/two.py": "",
            "b/three.py": "import importlib\nimportlib.import_module('pkg.a.four')\n",
        },
    )
    report = check(package, {ROOT_PART: 1, "a": 1, "b": 1})
    assert report.circles == ["circle between the parts of pkg: a -> b -> a"]


def test_a_relative_import_resolves_to_its_module(tmp_path: Path) -> None:
    package = _package(
        tmp_path,
        {"sub/x.py": "from ..high import Y\nfrom .y import Z\n", "sub/y.py": "Z = 1\n",
         "high.py": "Y = 2\n"},
    )  # fmt: skip
    edges = {(item.source, item.target) for item in imports_of(package)}
    assert edges == {("pkg.sub.x", "pkg.high"), ("pkg.sub.x", "pkg.sub.y")}


def test_a_part_without_a_layer_fails(tmp_path: Path) -> None:
    package = _package(tmp_path, {"low.py": "", "newcomer/mod.py": ""})
    assert check(package, TWO_LAYERS).unmapped == ["unmapped: pkg.newcomer has no layer"]


def test_an_allowed_edge_is_left_out_and_only_that_one(tmp_path: Path) -> None:
    package = _package(
        tmp_path,
        {"low.py": "import pkg.high\nimport pkg.other\n", "high.py": "", "other.py": ""},
    )
    report = check(package, {**TWO_LAYERS, "other": 2}, allowed={("pkg.low", "pkg.high")})
    assert report.upward == ["upward: pkg.low:2 (layer 1) imports pkg.other (layer 2)"]


@pytest.mark.parametrize("statement", ["import os", "from json import dumps", "import other.pkg"])
def test_imports_from_outside_the_package_are_not_edges(tmp_path: Path, statement: str) -> None:
    package = _package(tmp_path, {"low.py": statement + "\n"})
    assert imports_of(package) == []
