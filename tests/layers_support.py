"""The import graph of a package, and the two rules it must keep (docs/architecture.md).

Every `import` and `from … import` anywhere in a module counts: at the top, inside a
function (a lazy import is still a dependency), and under `if TYPE_CHECKING:` (a type is
a dependency too, and a circle of types is still a knot). So do
`importlib.import_module` calls whose module is a string literal, an f-string's literal
head, or a module-level string constant. A command line given to a subprocess is not an
import (the process boundary).

Rules: a module imports only its own layer or lower ones (`LAYERS`, by first-level part),
and nothing imports in a circle, neither modules nor the parts of any package (two
sub-packages that import each other are a circle even when no two modules are).
"""

from __future__ import annotations

import ast
from collections import defaultdict, deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

ROOT_PART = "__init__"
"""The part name of a package's own `__init__.py` (its first level has no other name)."""


@dataclass(frozen=True, order=True)
class Import:
    """One import: `source` imports `target` (both module names) at `line` of `source`."""

    source: str
    target: str
    line: int


@dataclass
class Report:
    """What a package breaks, each entry a line naming the modules involved."""

    unmapped: list[str] = field(default_factory=list)
    upward: list[str] = field(default_factory=list)
    circles: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        """Every problem, in order: unmapped parts, upward imports, circles."""
        return [*self.unmapped, *self.upward, *self.circles]


def modules_of(root: Path) -> dict[str, Path]:
    """Module name → file for the package at `root` (a folder with `__init__.py`)."""
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports_of(root: Path) -> list[Import]:
    """Every import between the modules of the package at `root`, sorted."""
    modules = modules_of(root)
    package = root.name
    found: set[Import] = set()
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        constants = _string_constants(tree)
        for node in ast.walk(tree):
            for target, line in _targets(node, here, constants):
                if target.split(".")[0] != package:
                    continue
                module = _resolve(target, modules)
                if module is not None and module != name:
                    found.add(Import(name, module, line))
    return sorted(found)


def _string_constants(tree: ast.Module) -> dict[str, str]:
    constants: dict[str, str] = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            constants[node.targets[0].id] = node.value.value
    return constants


def _targets(node: ast.AST, here: str, constants: Mapping[str, str]) -> Iterable[tuple[str, int]]:
    """The module names `node` imports (a name imported from a module is tried as a
    submodule first, then stands for its module)."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name, node.lineno
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            anchor = here
            for _ in range(node.level - 1):
                anchor = anchor.rpartition(".")[0]
            base = f"{anchor}.{base}" if base else anchor
        for alias in node.names:
            yield f"{base}.{alias.name}", node.lineno
    elif isinstance(node, ast.Call) and _is_import_module(node.func) and node.args:
        literal = _literal_head(node.args[0], constants)
        if literal:
            yield literal, node.lineno


def _is_import_module(func: ast.expr) -> bool:
    if isinstance(func, ast.Attribute):
        return func.attr == "import_module"
    return isinstance(func, ast.Name) and func.id in ("import_module", "__import__")


def _literal_head(argument: ast.expr, constants: Mapping[str, str]) -> str:
    if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
        return argument.value
    if isinstance(argument, ast.Name):
        return constants.get(argument.id, "")
    if isinstance(argument, ast.JoinedStr) and argument.values:
        first = argument.values[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return first.value.rstrip(".")  # `f"pkg.commands.{name}"`: the package
    return ""


def _resolve(target: str, modules: Mapping[str, Path]) -> str | None:
    """The deepest module of the package that `target` names (`pkg.mod.Name` → `pkg.mod`)."""
    name = target
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def part_of(module: str) -> str:
    """The first-level part a module belongs to (`pkg.store.sqlite` → `store`)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ROOT_PART


def check(
    root: Path,
    layers: Mapping[str, int],
    *,
    allowed: Iterable[tuple[str, str]] = (),
) -> Report:
    """The rules' violations in the package at `root`; `allowed` (source, target) pairs
    are left out of the graph."""
    modules = modules_of(root)
    skip = set(allowed)
    imports = [item for item in imports_of(root) if (item.source, item.target) not in skip]
    report = Report()
    parts = sorted({part_of(name) for name in modules})
    report.unmapped = [
        f"unmapped: {root.name}.{part} has no layer"
        if part != ROOT_PART
        else f"unmapped: {root.name} (its __init__.py) has no layer"
        for part in parts
        if part not in layers
    ]
    for item in imports:
        low, high = part_of(item.source), part_of(item.target)
        if low in layers and high in layers and layers[high] > layers[low]:
            report.upward.append(
                f"upward: {item.source}:{item.line} (layer {layers[low]}) imports "
                f"{item.target} (layer {layers[high]})"
            )
    report.circles = _module_circles(imports) + _part_circles(imports)
    return report


def _module_circles(imports: list[Import]) -> list[str]:
    graph: dict[str, set[str]] = defaultdict(set)
    for item in imports:
        graph[item.source].add(item.target)
    return [f"circle: {_shown(cycle, members)}" for cycle, members in _cycles(graph)]


def _shown(cycle: list[str], members: set[str]) -> str:
    path = " -> ".join(cycle)
    if len(members) > len(cycle) - 1:  # more modules are knotted than this one circle
        return f"{path} (knotted together: {', '.join(sorted(members))})"
    return path


def _part_circles(imports: list[Import]) -> list[str]:
    """Circles among the direct parts (modules and sub-packages) of each package."""
    graphs: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for item in imports:
        source, target = item.source.split("."), item.target.split(".")
        common = 0
        while common < min(len(source), len(target)) and source[common] == target[common]:
            common += 1
        if common >= len(source) - 1 and common >= len(target) - 1:
            continue  # two modules of one package: a module circle, if any, says it
        parent = ".".join(source[:common])
        # A package's own `__init__` is the part `__init__` of that package.
        here = source[common] if common < len(source) else ROOT_PART
        there = target[common] if common < len(target) else ROOT_PART
        if here != there:
            graphs[parent][here].add(there)
    return [
        f"circle between the parts of {parent}: {_shown(cycle, members)}"
        for parent in sorted(graphs)
        for cycle, members in _cycles(graphs[parent])
    ]


def _cycles(graph: Mapping[str, set[str]]) -> list[tuple[list[str], set[str]]]:
    """Per strongly connected set: one shortest circle through its smallest node, and
    the whole set."""
    found: list[tuple[list[str], set[str]]] = []
    for component in _components(graph):
        start = min(component)
        found.append((_shortest_circle(graph, component, start), component))
    return sorted(found, key=lambda item: item[0])


def _components(graph: Mapping[str, set[str]]) -> list[set[str]]:
    # Tarjan's algorithm, iterative (a deep package must not hit the recursion limit).
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []
    nodes = sorted(set(graph) | {t for targets in graph.values() for t in targets})
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph.get(successor, ())))))
                    advanced = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(component)
    return components


def _shortest_circle(graph: Mapping[str, set[str]], component: set[str], start: str) -> list[str]:
    previous: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for successor in sorted(graph.get(node, ())):
            if successor not in component:
                continue
            if successor == start:
                path = [node]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return [*reversed(path), start]
            if successor not in previous:
                previous[successor] = node
                queue.append(successor)
    raise AssertionError(f"{start} is in a strongly connected set but on no circle")
