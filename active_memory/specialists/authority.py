"""What maintenance checks lessons against: current files of the checkout, authored nodes.

`read_files` reads the files repository lessons cite or associate, bounded per file and in
total, and says for each whether it is current, missing, truncated or left out.
`node_authority` gives a graph node's authored instructions, output contract and
procedure (where it sits in the graph). Both return pydantic models that serialise
deterministically, because they are part of a specialist's task and its digest.
"""

from __future__ import annotations

import codecs
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, JsonValue

from active_memory.checkout import Checkout, CitationVerdict
from active_memory.runlog.graph import Graph, GraphIndex, StepNode, VerifierNode

_BINARY_SNIFF_BYTES = 8 * 1024
# What one numbered line costs in the indented task JSON beyond its escaped text: the
# indentation of a file's content list, the comma and the newline.
_LINE_OVERHEAD = 12
# Below this many rendered bytes a file is listed as omitted rather than shown as a stub.
_MIN_SHOWN_BYTES = 256


@dataclass(frozen=True, slots=True)
class TaskLimits:
    """Size bounds of what a task carries (UTF-8 bytes of text)."""

    file_bytes: int = 16 * 1024
    """Bytes of one file's text read for a task; the rest is cut and the cut marked."""
    files_total_bytes: int = 64 * 1024
    """Rendered bytes (numbered lines as JSON) of all file contents of one task; files past
    it are `omitted` (listed with their state, no content, the reason said)."""
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
    listing_per_folder: int = 60
    """Entries of one folder's `git ls-files` excerpt; the rest counted."""
    listing_folders_max: int = 12
    """Folders listed per task (those of the most relevant files first)."""
    scope_lessons_max: int = 100
    """Active lessons of its scope shown to discovery (title, ID, associations)."""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class FileAuthority(_Model):
    """One file of the checkout: its state and (bounded) content, with line numbers.

    `status` is the citation checker's verdict (`tracked`, `untracked`, `missing`,
    `ignored`, ...; `no_checkout` when there is no checkout to read); only a `current`
    file has content, one string per line, `"N: text"`. `truncated`: the content stops
    before the end of the file, and its last entry says where and how much is left out;
    `omitted`: current but not shown, because the task's bound was spent (`reason` says
    so); `binary`: not text.
    """

    path: str
    status: str
    current: bool
    reason: str
    target: str | None = None
    size: int | None = None
    content: tuple[str, ...] | None = None
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


def _json_cost(text: str) -> int:
    """Bytes `text` takes as one entry of an indented JSON list (quotes, escapes, indent)."""
    return len(json.dumps(text, ensure_ascii=False).encode("utf-8")) + _LINE_OVERHEAD


def numbered_lines(data: bytes, *, final: bool, budget: int) -> tuple[list[str], int, bool]:
    """`data` (a file's first bytes) as `"N: text"` lines within `budget` rendered bytes.

    Returns the lines, how many bytes of `data` they show, and whether anything of the
    file is left out. A file cut inside a line loses that partial line, unless it is the
    first: a one-line file too long for the bound is cut at a character boundary.
    """
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    # Not final: an incomplete character at the cut is held back, not mangled.
    text = decoder.decode(data, final=final)
    raw = text.split("\n")
    if raw and raw[-1] == "" and (final or len(raw) > 1):
        raw.pop()  # the newline that ends the last line starts no new one
    partial_last = not final and not text.endswith("\n")
    lines: list[str] = []
    shown = 0
    used = 0
    for number, line in enumerate(raw, start=1):
        if partial_last and number == len(raw) and number > 1:
            break
        entry = f"{number}: {line}"
        cost = _json_cost(entry)
        if used + cost > budget:
            if number == 1:  # cut the first line itself rather than show nothing
                room = max(0, budget - _LINE_OVERHEAD - 16)
                kept, _ = cut_utf8(line, room // 2)  # escapes may double a character
                lines.append(f"1: {kept}")
                shown = len(kept.encode("utf-8"))
            break
        lines.append(entry)
        used += cost
        newline = number < len(raw) or text.endswith("\n")
        shown += len(line.encode("utf-8")) + (1 if newline else 0)
    shown = min(shown, len(data))
    return lines, shown, not final or shown < len(data)


def read_files(
    checkout: Checkout | None,
    paths: Iterable[str],
    limits: TaskLimits,
    *,
    budget: int | None = None,
    verdicts: Mapping[str, CitationVerdict] | None = None,
) -> tuple[FileAuthority, ...]:
    """Each distinct path's verdict and numbered content, in the given order of first
    appearance (the most relevant first), within `limits` and `budget` (rendered bytes
    for all contents; `files_total_bytes` when None). `verdicts`: the checkout's verdicts
    of these paths when the caller has them (they cost git calls)."""
    wanted = list(dict.fromkeys(paths))
    if not wanted:
        return ()
    if checkout is None:
        return tuple(
            FileAuthority(path=p, status="no_checkout", current=False, reason="no checkout to read")
            for p in wanted
        )
    if verdicts is None:
        verdicts = checkout.check_paths(wanted)
    left = limits.files_total_bytes if budget is None else min(budget, limits.files_total_bytes)
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
            with open(full, "rb") as handle:
                data = handle.read(max(limits.file_bytes, _BINARY_SNIFF_BYTES))
        except OSError as exc:
            reason = f"{path} cannot be read: {exc.strerror or exc}"
            found.append(FileAuthority(**{**base, "current": False, "reason": reason}))
            continue
        if b"\0" in data[:_BINARY_SNIFF_BYTES]:
            found.append(FileAuthority(**base, size=size, binary=True))
            continue
        allowed = left  # rendered bytes; the file's own bound is on the bytes read
        if allowed < _MIN_SHOWN_BYTES:
            reason = f"{base['reason']}; not shown: this task's size bound is spent"
            found.append(FileAuthority(**{**base, "reason": reason}, size=size, omitted=True))
            continue
        data = data[: limits.file_bytes]
        lines, shown, cut = numbered_lines(data, final=size <= len(data), budget=allowed)
        if cut:
            lines.append(f"[cut: {size - shown} more bytes of this {size}-byte file are not shown]")
        left -= sum(_json_cost(line) for line in lines)
        found.append(FileAuthority(**base, size=size, content=tuple(lines), truncated=cut))
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
