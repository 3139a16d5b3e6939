"""A run record from a Claude Code session transcript (`~/.claude/projects/*/SESSION.jsonl`).

Entries read (one JSON object per line; others are skipped silently):

- `user`: a prompt (`message.content` a string or text blocks) opens a turn; text
  `[Request interrupted by user…]` ends it as interrupted; `tool_result` blocks
  (`tool_use_id`, `is_error`, `content`) settle tool calls.
- `assistant`: `message.content` blocks `text` and `tool_use` {`id`, `name`, `input`};
  `message.model`; `isApiErrorMessage: true` (with `error` and the error text) ends the
  turn on an API error.
- every entry: `cwd`, `sessionId`, `timestamp`, `gitBranch`, `isSidechain`, `isMeta`.

Sub-agent (`isSidechain`) entries add receipts but never open or end a turn; meta
entries (`isMeta`) are skipped. A line that is not JSON, not an object, or a `user` /
`assistant` entry without a `message` object is reported and skipped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from active_memory.runlog.importers.common import ImportResult, Skipped
from active_memory.runlog.importers.jsonl import read_jsonl, repository_of
from active_memory.runlog.importers.session import (
    SessionRun,
    cd_targets,
    classify_error,
    glob_prefix,
)

_INTERRUPTED = "[Request interrupted by user"
_PATH_KEYS = ("file_path", "notebook_path", "path", "filePath", "file", "directory")


def import_transcript(path: str | Path) -> ImportResult:
    """One run record for the transcript; malformed lines are reported in `skipped`."""
    source = str(path)
    result = ImportResult()
    entries = list(read_jsonl(path, result.skipped))
    session_id = next(
        (e["sessionId"] for _, e in entries if isinstance(e.get("sessionId"), str)),
        Path(path).stem,
    )
    run = SessionRun(harness="claude", run_id=f"claude-{session_id}")
    cwd = next((e["cwd"] for _, e in entries if isinstance(e.get("cwd"), str)), None)
    if cwd:
        run.cwd = cwd
        run.root, run.remote = repository_of(cwd)
    calls: dict[str, str] = {}
    for line, entry in entries:
        kind = entry.get("type")
        if kind not in ("user", "assistant") or entry.get("isMeta") is True:
            continue
        message = entry.get("message")
        if not isinstance(message, dict):
            result.skipped.append(Skipped(f"{kind} entry without a message object", line=line))
            continue
        at = entry.get("timestamp") if isinstance(entry.get("timestamp"), str) else None
        if isinstance(entry.get("gitBranch"), str) and entry["gitBranch"]:
            run.branch = entry["gitBranch"]
        run.seen(at)
        base = entry.get("cwd") if isinstance(entry.get("cwd"), str) else None
        sidechain = entry.get("isSidechain") is True
        if kind == "assistant":
            _assistant(run, entry, message, at, base, calls, sidechain)
        else:
            _user(run, message, at, calls, sidechain)
    if run.turns == 0:
        result.skipped.append(Skipped("no user turn in the transcript", run_id=run.run_id))
        return result
    result.runs.append(run.build(source, []))
    return result


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [block for block in content if isinstance(block, dict)]
    return []


def _text(blocks: list[dict[str, Any]]) -> str:
    return "\n".join(
        b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str)
    )


def _user(
    run: SessionRun,
    message: dict[str, Any],
    at: str | None,
    calls: dict[str, str],
    sidechain: bool,
) -> None:
    blocks = _blocks(message)
    for block in blocks:
        if block.get("type") == "tool_result":
            _tool_result(run, block, at, calls)
    if sidechain:
        return
    text = _text(blocks)
    if text.lstrip().startswith(_INTERRUPTED):
        run.ended("interrupted", at, "interrupted by the user")
    elif text.strip():
        run.open_turn(at, text)


def _tool_result(
    run: SessionRun, block: dict[str, Any], at: str | None, calls: dict[str, str]
) -> None:
    tool = calls.pop(str(block.get("tool_use_id")), "tool")
    if block.get("is_error") is not True:
        run.tool_succeeded(at)
        return
    content = block.get("content")
    if isinstance(content, list):
        content = _text([c for c in content if isinstance(c, dict)])
    detail = content.strip().splitlines()[0] if isinstance(content, str) and content.strip() else ""
    timed_out = "timed out" in detail.lower() or "timeout" in detail.lower()
    run.tool_failed(tool, at, timed_out=timed_out, detail=detail[:200])


def _assistant(
    run: SessionRun,
    entry: dict[str, Any],
    message: dict[str, Any],
    at: str | None,
    base: str | None,
    calls: dict[str, str],
    sidechain: bool,
) -> None:
    blocks = _blocks(message)
    model = message.get("model")
    if isinstance(model, str) and model and not model.startswith("<"):
        run.model = model  # `<synthetic>` marks Claude Code's own error rows
    if entry.get("isApiErrorMessage") is True:
        if not sidechain:
            text = _text(blocks)
            flag = entry.get("error") if isinstance(entry.get("error"), str) else None
            run.ended(classify_error(text, flag), at, (text or flag or "API error")[:200])
        return
    if not sidechain:
        run.said(_text(blocks), at)
    for block in blocks:
        if block.get("type") != "tool_use" or not isinstance(block.get("name"), str):
            continue
        name = block["name"]
        calls[str(block.get("id"))] = name
        tool_input = block.get("input")
        paths = _paths(name, tool_input) if isinstance(tool_input, dict) else []
        run.tool_call(name, at, paths, base)


def _paths(tool: str, tool_input: dict[str, Any]) -> list[str]:
    paths = [tool_input[k] for k in _PATH_KEYS if isinstance(tool_input.get(k), str)]
    listed = tool_input.get("paths")
    if isinstance(listed, list):
        paths += [p for p in listed if isinstance(p, str)]
    pattern = tool_input.get("pattern")
    # Glob's pattern is a path pattern; Grep's is a regex and names no path.
    if tool == "Glob" and isinstance(pattern, str):
        prefix = glob_prefix(pattern)
        if prefix:
            paths.append(prefix)
    command = tool_input.get("command")
    if isinstance(command, str):
        paths += cd_targets(command)
    return paths
