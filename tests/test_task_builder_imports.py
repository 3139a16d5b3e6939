"""The task builder reads one way (issue 25, item 8): `specialists/` (layer 8 of the
package's layers) never reaches `orchestrator/` (layer 10) or any part above it, not even
through a function-level import, and inside `specialists/tasks/` each step imports only
the steps before it: gather → choose → render, with the builders on top."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import active_memory

PACKAGE = Path(active_memory.__file__).parent
ABOVE_SPECIALISTS = ("prompts", "orchestrator", "worker", "init", "ui", "commands", "cli")
"""The first-level parts above `specialists/` (layers 9-12)."""


def module_name(path: Path) -> str:
    parts = ["active_memory", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in PACKAGE.rglob("*.py")}


def imports_of(name: str) -> set[str]:
    """The package's modules that `name` imports, anywhere in its text (a function-level
    import counts: it runs as soon as the function does), with their parent packages."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    named: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            named.add(node.module)
            named.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            named.update(alias.name for alias in node.names)
    found: set[str] = set()
    for module in named:
        parts = module.split(".")
        found.update(
            ".".join(parts[:n]) for n in range(2, len(parts) + 1) if ".".join(parts[:n]) in MODULES
        )
    return found


def reachable(start: Iterable[str]) -> dict[str, str | None]:
    """Every module reachable from `start`, with the module that first imported it."""
    via: dict[str, str | None] = {}
    stack: list[tuple[str, str | None]] = [(name, None) for name in start]
    while stack:
        name, parent = stack.pop()
        if name in via:
            continue
        via[name] = parent
        stack.extend((found, name) for found in sorted(imports_of(name)))
    return via


def chain(via: dict[str, str | None], name: str) -> str:
    steps = [name]
    while (parent := via[steps[-1]]) is not None:
        steps.append(parent)
    return " <- ".join(steps)


def part_of(name: str) -> str:
    return name.split(".")[1] if "." in name else ""


def test_the_import_graph_of_specialists_never_reaches_the_orchestrator_or_above() -> None:
    start = [m for m in MODULES if m.startswith("active_memory.specialists")]
    assert "active_memory.specialists.tasks.build" in start
    via = reachable(start)
    upward = sorted(m for m in via if part_of(m) in ABOVE_SPECIALISTS)
    assert upward == [], "\n".join(chain(via, m) for m in upward)


def test_the_graph_walk_sees_a_function_level_import() -> None:
    # The walk itself must be able to fail: the orchestrator's runners import the task
    # builder, and `with_changed_code` imports the staleness module inside its body.
    assert "active_memory.specialists.tasks" in reachable(["active_memory.orchestrator.runners"])
    changed = imports_of("active_memory.specialists.tasks.changed_code")
    assert "active_memory.checkout.staleness" in changed


STEPS = {
    "bound": set(),
    "model_failures": set(),
    "model": {"bound", "model_failures"},
    "render": {"bound", "model"},
    "gather_run": {"bound", "model"},
    "gather_lessons": {"bound", "model"},
    "gather_files": {"bound", "model", "gather_run"},
    "gather_failures": {"model_failures", "gather_run", "gather_lessons"},
    "gather_command_files": set(),
    "gather_failure_context": {
        "gather_run",
        "gather_files",
        "gather_failures",
        "gather_command_files",
    },
    "manifest": {"gather_run"},
    "choose": {
        "bound",
        "model",
        "model_failures",
        "render",
        "gather_run",
        "gather_files",
        "gather_failures",
    },
    "changed_code": {"model", "render"},
    "build": {
        "bound",
        "model",
        "render",
        "gather_run",
        "gather_lessons",
        "gather_files",
        "gather_failures",
        "gather_failure_context",
        "choose",
    },
}
"""What each module of `specialists/tasks/` may import of its siblings."""


def test_each_step_of_the_task_builder_imports_only_the_steps_before_it() -> None:
    prefix = "active_memory.specialists.tasks."
    modules = {m.removeprefix(prefix) for m in MODULES if m.startswith(prefix)}
    assert modules == set(STEPS)
    for step, allowed in STEPS.items():
        siblings = {
            m.removeprefix(prefix) for m in imports_of(prefix + step) if m.startswith(prefix)
        }
        assert siblings <= allowed, f"{step} imports {sorted(siblings - allowed)}"


def test_no_module_of_the_task_builder_is_over_500_lines() -> None:
    for path in (PACKAGE / "specialists" / "tasks").glob("*.py"):
        assert len(path.read_text(encoding="utf-8").splitlines()) <= 500, path.name


def test_the_old_back_and_forth_modules_are_gone() -> None:
    for gone in ("views", "choosing", "authority"):
        assert not (PACKAGE / "specialists" / f"{gone}.py").exists()
    assert not (PACKAGE / "orchestrator" / "batching.py").exists()


def test_the_bound_of_a_task_lives_in_the_task_builder() -> None:
    from active_memory.orchestrator import DEFAULT_BATCH_BYTES, PostmortemLimits
    from active_memory.specialists import tasks

    for name in ("cut_by_serialized_size", "lesson_bytes", "TaskLimits", "rendered_size"):
        assert getattr(tasks, name).__module__.startswith("active_memory.specialists.tasks.")
    assert PostmortemLimits().batch_bytes == DEFAULT_BATCH_BYTES == tasks.DEFAULT_BATCH_BYTES
    # `init` builds the same tasks as a postmortem without asking the orchestrator.
    init = imports_of("active_memory.init.maintenance")
    assert not any(part_of(m) == "orchestrator" for m in init), sorted(init)
