"""What maintenance checks lessons against: current files of the checkout, authored nodes.

`read_files` reads the files repository lessons cite or associate, bounded per file and in
total, and says for each whether it is current, missing, truncated or left out.
`node_authority` gives a graph node's authored instructions, output contract and
procedure (where it sits in the graph). Both return pydantic models that serialise
deterministically, because they are part of a specialist's task and its digest.
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, JsonValue

from active_memory.checkout import Checkout
from active_memory.runlog.graph import Graph, GraphIndex, StepNode, VerifierNode

_BINARY_SNIFF_BYTES = 8 * 1024


@dataclass(frozen=True, slots=True)
class TaskLimits:
    """Size bounds of what a task carries (UTF-8 bytes of text)."""

    file_bytes: int = 16 * 1024
    """Content of one file; the rest is cut and the file marked `truncated`."""
    files_total_bytes: int = 64 * 1024
    """Content of all files of one task; files past it are `omitted` (listed, no content)."""
    completion_bytes: int = 4 * 1024
    """One agent completion text."""
    completions_total_bytes: int = 32 * 1024
    """All completion texts of one task."""
    instructions_bytes: int = 8 * 1024
    """One node's authored instructions."""
    others_max: int = 200
    """Living lessons outside the batch listed as possible `canonical` targets."""
    receipts_max: int = 64
    """Receipts shown per evidence item (the first and the latest half); the rest counted."""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class FileAuthority(_Model):
    """One cited or associated file: its state in the checkout and (bounded) content.

    `status` is the citation checker's verdict (`tracked`, `untracked`, `missing`,
    `ignored`, ...; `no_checkout` when there is no checkout to read); only a `current`
    file has content. `truncated`: content cut at `TaskLimits.file_bytes`; `omitted`:
    current but left out because the task's total budget was spent; `binary`: not text.
    """

    path: str
    status: str
    current: bool
    reason: str
    target: str | None = None
    size: int | None = None
    content: str | None = None
    truncated: bool = False
    omitted: bool = False
    binary: bool = False


class FolderAuthority(_Model):
    """One associated folder and whether it exists in the checkout."""

    path: str
    exists: bool


class NodeAuthority(_Model):
    """A graph node as authored: what graph lessons are checked against.

    `procedure` lists the enclosing groups from the root down (`"seq run"`, `"loop
    review_loop"`, ...): where in the run's procedure the node works. `found` is False
    when the graph is not available or has no such node (`reason` says which).
    """

    graph_hash: str
    node: str
    found: bool
    reason: str = ""
    kind: str | None = None
    worker: str | None = None
    instructions: str | None = None
    instructions_truncated: bool = False
    output: JsonValue = None
    signals: dict[str, list[str]] = {}
    procedure: tuple[str, ...] = ()
    attempts: int | None = None
    timeout_ms: int | None = None


def cut_utf8(text: str, limit: int) -> tuple[str, bool]:
    """`text` cut to at most `limit` UTF-8 bytes at a character boundary, and whether it was."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text, False
    return data[:limit].decode("utf-8", errors="ignore"), True


def read_files(
    checkout: Checkout | None, paths: Iterable[str], limits: TaskLimits
) -> tuple[FileAuthority, ...]:
    """Each distinct path's verdict and content, in sorted order, within `limits`."""
    wanted = sorted(set(paths))
    if not wanted:
        return ()
    if checkout is None:
        return tuple(
            FileAuthority(path=p, status="no_checkout", current=False, reason="no checkout to read")
            for p in wanted
        )
    verdicts = checkout.check_paths(wanted)
    budget = limits.files_total_bytes
    found: list[FileAuthority] = []
    for path in wanted:
        verdict = verdicts[path]
        base: dict[str, Any] = {
            "path": path,
            "status": str(verdict.status),
            "current": verdict.current,
            "reason": verdict.reason,
            "target": verdict.target,
        }
        if verdict.file is None:
            found.append(FileAuthority(**base))
            continue
        full = checkout.root / verdict.file
        try:
            size = os.stat(full).st_size
            allowed = max(0, min(limits.file_bytes, budget))
            with open(full, "rb") as handle:
                data = handle.read(max(allowed, _BINARY_SNIFF_BYTES))
        except OSError as exc:
            reason = f"{path} cannot be read: {exc.strerror or exc}"
            found.append(FileAuthority(**{**base, "current": False, "reason": reason}))
            continue
        if b"\0" in data[:_BINARY_SNIFF_BYTES]:
            found.append(FileAuthority(**base, size=size, binary=True))
            continue
        if budget <= 0:
            found.append(FileAuthority(**base, size=size, omitted=True))
            continue
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        # Not final: an incomplete character at the cut is held back, not mangled.
        content = decoder.decode(data[:allowed], final=size <= allowed)
        used = len(content.encode("utf-8"))
        budget -= used
        found.append(FileAuthority(**base, size=size, content=content, truncated=size > allowed))
    return tuple(found)


def folders_of(checkout: Checkout | None, folders: Iterable[str]) -> tuple[FolderAuthority, ...]:
    """Whether each associated folder exists in the checkout (sorted, distinct)."""
    wanted = sorted(set(folders))
    if checkout is None:
        return tuple(FolderAuthority(path=f, exists=False) for f in wanted)
    return tuple(FolderAuthority(path=f, exists=(checkout.root / f).is_dir()) for f in wanted)


def node_authority(
    graphs: Mapping[str, Graph], graph_hash: str, node: str, limits: TaskLimits
) -> NodeAuthority:
    """The authored node `node` of the graph with `graph_hash`, or why it is not known."""
    graph = graphs.get(graph_hash)
    if graph is None:
        return NodeAuthority(
            graph_hash=graph_hash, node=node, found=False, reason="the graph is not available"
        )
    index = GraphIndex(graph)
    found = index.get(node)
    if found is None:
        return NodeAuthority(
            graph_hash=graph_hash, node=node, found=False, reason="the graph has no such node"
        )
    procedure = tuple(f"{a.kind} {a.name}" for a in reversed(index.ancestors(node)))
    if not isinstance(found, StepNode | VerifierNode):
        return NodeAuthority(
            graph_hash=graph_hash, node=node, found=True, kind=found.kind, procedure=procedure
        )
    instructions, cut = (None, False)
    if found.instructions is not None:
        instructions, cut = cut_utf8(found.instructions, limits.instructions_bytes)
    extra = found.model_extra or {}
    return NodeAuthority(
        graph_hash=graph_hash,
        node=node,
        found=True,
        kind=found.kind,
        worker=found.worker,
        instructions=instructions,
        instructions_truncated=cut,
        output=extra.get("output"),
        signals=dict(found.signals) if isinstance(found, VerifierNode) else {},
        procedure=procedure,
        attempts=found.attempts,
        timeout_ms=found.timeout_ms,
    )
