"""Canonical compact JSON of a compiled graph and its graph hash (SPEC §3).

The rules follow zeroshot's `canonical.rs` (crate `openengine-cluster-protocol`):

- objects: keys sorted by their UTF-8 bytes; compact (`,` and `:` with no spaces);
- strings: only `"`, `\\` and control characters are escaped (`\\b \\f \\n \\r \\t` short,
  other controls `\\u00xx` in lowercase hex); everything else is written as UTF-8;
- numbers: integers only (the range of a 64-bit signed or unsigned integer); a float is
  an error, because the IR algebra has none;
- normalisation before writing, node by node: `step`/`verifier` input and write bindings
  and `succeed` bindings sorted by their canonical bytes; `promotedStatePaths` of every
  group sorted and de-duplicated; `par` branches sorted by node name; guards inside
  `choice` branches, `loop.until` and a `first` join normalised: `all`/`any` operands
  normalised, flattened into a parent of the same kind, sorted and de-duplicated,
  `k_of_n` selectors sorted (multiplicity kept), `not` normalised inside; `seq`
  children, `choice` branch order and everything else keep their order.

Public names: `canonical_bytes(value)`, `canonical_graph_bytes(graph)`,
`graph_hash(graph)`, `CanonicalError`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from active_memory.errors import UsageError
from active_memory.runlog.graph import Graph

_INT_MIN = -(2**63)
_INT_MAX = 2**64 - 1


class CanonicalError(UsageError):
    """The value cannot be written canonically (a float, a lone surrogate, a bad shape)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path or '(graph)'}: {message}")
        self.path = path
        self.detail = message


def canonical_bytes(value: Any) -> bytes:
    """Canonical compact JSON of a decoded JSON value (no graph normalisation)."""
    out: list[str] = []
    _write(value, out, "")
    try:
        return "".join(out).encode("utf-8")
    except UnicodeEncodeError:
        raise CanonicalError("", "a string holds a lone surrogate (not valid UTF-8)") from None


def canonical_graph_bytes(graph: Graph | dict[str, Any]) -> bytes:
    """Canonical bytes of a compiled graph (or graph spec) after normalisation."""
    data = graph.to_json() if isinstance(graph, Graph) else graph
    if not isinstance(data, dict):
        raise CanonicalError("", "a graph is a JSON object")
    normalized = dict(data)
    if "root" in normalized:
        normalized["root"] = _node(normalized["root"], "root")
    return canonical_bytes(normalized)


def graph_hash(graph: Graph | dict[str, Any]) -> str:
    """The graph hash: lowercase hex SHA-256 of `canonical_graph_bytes(graph)`."""
    return hashlib.sha256(canonical_graph_bytes(graph)).hexdigest()


# --- writing -------------------------------------------------------------------------


def _write(value: Any, out: list[str], path: str) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        if not _INT_MIN <= value <= _INT_MAX:
            raise CanonicalError(path, f"integer {value} is outside the 64-bit range")
        out.append(str(value))
    elif isinstance(value, float):
        raise CanonicalError(path, "floating-point numbers are not allowed in a graph")
    elif isinstance(value, str):
        # With ensure_ascii off, json escapes exactly what serde_json escapes.
        out.append(json.dumps(value, ensure_ascii=False))
    elif isinstance(value, list | tuple):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _write(item, out, f"{path}[{index}]")
        out.append("]")
    elif isinstance(value, dict):
        out.append("{")
        keys = sorted(value, key=_key_bytes)
        for index, key in enumerate(keys):
            if index:
                out.append(",")
            out.append(json.dumps(key, ensure_ascii=False))
            out.append(":")
            _write(value[key], out, f"{path}.{key}" if path else key)
        out.append("}")
    else:
        raise CanonicalError(path, f"not a JSON value: {type(value).__name__}")


def _key_bytes(key: Any) -> bytes:
    if not isinstance(key, str):
        raise CanonicalError("", f"object key {key!r} is not a string")
    return key.encode("utf-8", "surrogatepass")


# --- normalisation -------------------------------------------------------------------


def _sorted(values: Any, path: str, *, dedupe: bool = False) -> Any:
    if not isinstance(values, list):
        return values
    keyed = sorted(((canonical_bytes(v), v) for v in values), key=lambda pair: pair[0])
    if dedupe:
        unique: dict[bytes, Any] = {}
        for key, value in keyed:
            unique.setdefault(key, value)
        return list(unique.values())
    return [value for _, value in keyed]


def _guard(guard: Any, path: str) -> Any:
    if not isinstance(guard, dict):
        return guard
    kind = guard.get("kind")
    result = dict(guard)
    if kind == "k_of_n":
        result["values"] = _sorted(guard.get("values"), f"{path}.values")
    elif kind == "not":
        result["guard"] = _guard(guard.get("guard"), f"{path}.guard")
    elif kind in ("all", "any") and isinstance(guard.get("guards"), list):
        flat: list[Any] = []
        for index, inner in enumerate(guard["guards"]):
            normalized = _guard(inner, f"{path}.guards[{index}]")
            if isinstance(normalized, dict) and normalized.get("kind") == kind:
                flat.extend(normalized.get("guards") or [])
            else:
                flat.append(normalized)
        result["guards"] = _sorted(flat, f"{path}.guards", dedupe=True)
    return result


def _promoted(result: dict[str, Any], path: str) -> None:
    if "promotedStatePaths" in result:
        result["promotedStatePaths"] = _sorted(
            result["promotedStatePaths"], f"{path}.promotedStatePaths", dedupe=True
        )


def _node(node: Any, path: str) -> Any:
    if not isinstance(node, dict):
        return node
    result = dict(node)
    handler = _NODE_RULES.get(str(node.get("kind")))
    if handler is not None:
        handler(result, path)
    return result


def _executable(result: dict[str, Any], path: str) -> None:
    for field in ("inputBindings", "writeBindings"):
        if field in result:
            result[field] = _sorted(result[field], f"{path}.{field}")


def _succeed(result: dict[str, Any], path: str) -> None:
    if "bindings" in result:
        result["bindings"] = _sorted(result["bindings"], f"{path}.bindings")


def _seq(result: dict[str, Any], path: str) -> None:
    children = result.get("children")
    if isinstance(children, list):
        result["children"] = [
            _node(child, f"{path}.children[{i}]") for i, child in enumerate(children)
        ]
    _promoted(result, path)


def _choice(result: dict[str, Any], path: str) -> None:
    branches = result.get("branches")
    if isinstance(branches, list):
        normalized = []
        for index, branch in enumerate(branches):
            where = f"{path}.branches[{index}]"
            if isinstance(branch, dict):
                branch = dict(branch)
                if "when" in branch:
                    branch["when"] = _guard(branch["when"], f"{where}.when")
                if "node" in branch:
                    branch["node"] = _node(branch["node"], f"{where}.node")
            normalized.append(branch)
        result["branches"] = normalized
    if result.get("otherwise") is not None:
        result["otherwise"] = _node(result["otherwise"], f"{path}.otherwise")
    _promoted(result, path)


def _par(result: dict[str, Any], path: str) -> None:
    branches = result.get("branches")
    if isinstance(branches, list):
        normalized = [_node(b, f"{path}.branches[{i}]") for i, b in enumerate(branches)]
        result["branches"] = sorted(normalized, key=_branch_name)
    _promoted(result, path)
    join = result.get("join")
    if isinstance(join, dict) and join.get("kind") == "first" and "when" in join:
        result["join"] = {**join, "when": _guard(join["when"], f"{path}.join.when")}


def _branch_name(branch: Any) -> bytes:
    name = branch.get("name") if isinstance(branch, dict) else None
    return name.encode("utf-8", "surrogatepass") if isinstance(name, str) else b""


def _loop(result: dict[str, Any], path: str) -> None:
    if "body" in result:
        result["body"] = _node(result["body"], f"{path}.body")
    if result.get("until") is not None:
        result["until"] = _guard(result["until"], f"{path}.until")
    _promoted(result, path)


def _map(result: dict[str, Any], path: str) -> None:
    if "body" in result:
        result["body"] = _node(result["body"], f"{path}.body")
    _promoted(result, path)


_NODE_RULES: dict[str, Callable[[dict[str, Any], str], None]] = {
    "step": _executable,
    "verifier": _executable,
    "succeed": _succeed,
    "seq": _seq,
    "choice": _choice,
    "par": _par,
    "loop": _loop,
    "map": _map,
}
