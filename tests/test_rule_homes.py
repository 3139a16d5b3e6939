"""The newcomer exercise as a test (issue 31): docs/architecture.md names, for each rule
of SPEC §2 to §8, the one module that holds it. Each named module must exist and define
each named constant or function itself: a name it only re-exports does not count."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parent.parent / "docs" / "architecture.md"
_ROW = re.compile(r"^\|\s*§[^|]*\|[^|]*\|\s*`([\w.]+)`\s*\|([^|]*)\|\s*$")


def rule_homes() -> list[tuple[str, str]]:
    """(module, name) for every name of the table between its markers."""
    text = DOC.read_text("utf-8")
    start, end = text.index("<!-- rule-homes:start -->"), text.index("<!-- rule-homes:end -->")
    pairs: list[tuple[str, str]] = []
    for line in text[start:end].splitlines():
        found = _ROW.match(line)
        if found:
            pairs.extend((found[1], name) for name in re.findall(r"`(\w+)`", found[2]))
    return pairs


def defined_names(module: str) -> set[str]:
    """Names a module's own source binds at its top level (assignments, defs, classes)."""
    source = Path(importlib.import_module(module).__file__ or "").read_text("utf-8")
    names: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def test_the_table_covers_every_section_of_the_contract_it_promises() -> None:
    homes = rule_homes()
    assert len(homes) >= 40
    sections = set(re.findall(r"^\|\s*§(\d)", DOC.read_text("utf-8"), re.MULTILINE))
    assert {"2", "3", "4", "5", "6", "7", "8"} <= sections


@pytest.mark.parametrize(("module", "name"), rule_homes())
def test_each_rule_is_defined_in_the_module_the_docs_name(module: str, name: str) -> None:
    assert name in defined_names(module), f"{module} does not define {name} (docs/architecture.md)"
