"""What a Codex tool output says about the call: failed, timed out, and the error line.

The output shapes in use (0.x to 0.171):

- `shell` (early): a JSON string `{"output": …, "metadata": {"exit_code": N, …}}`;
- `shell` / `shell_command` (freeform): `Exit code: N`, `Wall time: …`, `Output:` then
  the output;
- `exec_command` / `write_stdin` (unified exec): header lines `Command: …` (as long as
  the command is), `Chunk ID: …`, `Wall time: …`, `Process exited with code N` (or
  `Process running with session ID N`), `Original token count: …`, then `Output:`;
- MCP and other tools: a JSON string with `success: false` or `isError: true`, or a
  payload `{content, success}`.

The exit code is looked for on its own header line, wherever it stands, however long the
lines before it. The detail of a failure quotes the error from the output (a line that
names an error, else the output's last line), never the command.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from active_memory.runlog.importers.session import error_line

_RUNNING = re.compile(r"^Process running with session ID (\S+)\s*$", re.M)
_REFUSED_TEXT = (
    # What Codex returns, instead of a result, when a tool call itself failed.
    "failed to ",
    "apply_patch verification failed",
    "patch rejected",
    "error: ",
    "Error: ",
    "unsupported call",
    "unknown tool",
)
_DECLINED = (
    "aborted by user",
    "rejected by user",
    "exec command rejected",
    "patch rejected by user",
)
"""A person's "no" (an approval declined) or an interruption: not a failure."""
_EXIT_LINE = re.compile(r"^(?:Process exited with code|Exit code:)\s*(-?\d+)\s*$", re.I | re.M)
_TIMED_OUT = re.compile(r"\btimed out\b", re.I)
_HEADER_KEYS = (
    "command:",
    "chunk id:",
    "wall time:",
    "process exited with code",
    "process running with session id",
    "original token count:",
    "exit code:",
    "total output lines:",
)


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """What one tool output shows: failed, timed out, the quoted line, and the rest."""

    failed: bool
    timed_out: bool
    detail: str
    exit_code: int | None = None
    body: str = ""
    """The program's output (after the header lines)."""
    running: str | None = None
    """The unified-exec session still running (`Process running with session ID N`)."""
    declined: bool = False
    """A person's "no" or an interruption: neither a failure nor a success."""


def output_status(output: Any) -> tuple[bool, bool, str]:
    """(failed, timed out, error line) of one tool output, as far as it shows."""
    read = read_output(output)
    return read.failed, read.timed_out, read.detail


def read_output(output: Any) -> ToolOutput:
    """Everything one tool output shows about its call."""
    text = ""
    exit_code: int | None = None
    success: bool | None = None
    if isinstance(output, str):
        text = output
        decoded = _json(output) if output.lstrip().startswith("{") else None
        if isinstance(decoded, dict):
            output = decoded
    if isinstance(output, dict):
        inner = output.get("output", output.get("content"))
        if isinstance(inner, str):
            text = inner
        elif isinstance(inner, list):
            text = "\n".join(
                str(item.get("text")) for item in inner if isinstance(item, dict) and "text" in item
            )
        metadata = output.get("metadata")
        if isinstance(metadata, dict) and isinstance(metadata.get("exit_code"), int):
            exit_code = metadata["exit_code"]
        if isinstance(output.get("success"), bool):
            success = output["success"]
        if output.get("isError") is True or output.get("is_error") is True:
            success = False
    header, body = split_output(text)
    if exit_code is None and (match := _EXIT_LINE.search(header)):
        exit_code = int(match.group(1))
    running = _RUNNING.search(header)
    stripped = body.lstrip()
    if exit_code is None and success is None and not header:
        if stripped.startswith(_DECLINED):
            return ToolOutput(False, False, "", body=body, declined=True)
        if stripped.startswith(_REFUSED_TEXT):
            success = False  # the tool refused the call (a missing file, a bad patch)
    timed_out = exit_code == 124 or bool(
        _TIMED_OUT.search(body[:2000] or header[:500]) and exit_code != 0
    )
    failed = success is False or (exit_code is not None and exit_code != 0)
    if not (failed or timed_out):
        # The error line is looked for only when there is one.
        return ToolOutput(False, False, "", exit_code, body, running.group(1) if running else None)
    detail = error_line(body)
    if exit_code not in (None, 0):
        detail = f"exit code {exit_code}" + (f": {detail}" if detail else "")
    return ToolOutput(failed, timed_out, detail[:200], exit_code, body)


def split_output(text: str) -> tuple[str, str]:
    """(header, body): the lines before an `Output:` line, and the output after it.

    Without an `Output:` line the header is the run of header lines the text starts with.
    """
    marker = re.search(r"^Output:[ \t]*\r?$\n?", text, re.M)
    if marker is not None:
        return text[: marker.start()], text[marker.end() :]
    # No `Output:` line: the header is the run of header lines the text starts with.
    lines = text.splitlines(keepends=True)
    count = 0
    while count < len(lines) and lines[count].strip().lower().startswith(_HEADER_KEYS):
        count += 1
    return "".join(lines[:count]), "".join(lines[count:])


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or past Python's digit limit
        return None
