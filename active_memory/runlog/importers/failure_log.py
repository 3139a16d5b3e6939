"""The failed tool calls of one session, as the session importers read them (SPEC §3).

`FailureLog` follows each call from its request (`called`) to its result (`failed`,
`succeeded`, or `abandoned` when the person said no or the call never ran) and builds
the run record's `tool_failures`:

- `command`: a shell call's command line (Codex's `["bash", "-lc", SCRIPT]` is the
  script), a file tool's root-relative path, any other tool's arguments as compact JSON;
  `family` from command_family.py (for a chain, the command its output shows
  failed: error_lines.py `failing_family`); `error` from error_lines.py (a call that
  timed out says `timed out` first); `cwd` root-relative (`""` is the root); `paths` the
  workspace paths the call names, read the way the hook reads them (recall/signals.py;
  a shell argument by recall/shell_paths.py's rule).
- `resolved_by`: the first later call that succeeded in the same family, or of the same
  kind (shell or file tool) on one of the failure's paths if that call can change them
  (not a read-only tool or command): a `Write` after a failed `Edit` of the file, `cd
  assets && node build.js` after a failed `node assets/build.js`;
  its `edited` says whether files were edited in between (a file tool's write, a patch,
  `sed -i`, output redirected into a file), which tells a red-green cycle.
- Bounds: the first `FAILURES_KEPT_FIRST` and the latest failures are kept as the log
  streams (memory stays bounded), the rest counted; only kept failures get resolved.
- Screened: `command` and `error` go through the credential screen before they are
  stored (privacy.py `screen_credentials`); `<private>` passages are masked with the
  rest of the record when it is built.
"""

from __future__ import annotations

import json
import posixpath
import shlex
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from active_memory.command_family import (
    BOOKKEEPING,
    FILE_TOOLS,
    FILTERS,
    MAX_COMMAND_CHARS,
    READ_ONLY_TOOLS,
    SHELL_TOOLS,
    argv_family,
    chain_families,
    family_program,
    file_family,
    shell_family,
)
from active_memory.recall.signals import extract_signals
from active_memory.recall.types import ToolCall
from active_memory.runlog.importers.error_lines import failing_family, informative_error
from active_memory.runlog.importers.privacy import screen_credentials
from active_memory.runlog.receipts import relative_path
from active_memory.runlog.tool_failures import (
    FAILURES_KEPT_FIRST,
    MAX_COMMAND_BYTES,
    MAX_FAILURE_PATHS,
    MAX_TOOL_FAILURES,
    cut_bytes,
)
from active_memory.shell import Word, tokenize

READ_ONLY_PROGRAMS = frozenset(
    {"ls", "tree", "find", "stat", "file", "du", "df", "which", "pwd", "env", "printenv"}
    | FILTERS
    | BOOKKEEPING
)
"""Commands that only look: their success never resolves a failure on the same paths."""
READ_ONLY_FAMILIES = frozenset(
    {"git status", "git diff", "git log", "git show", "git blame", "git branch", "git remote"}
)
_PATH_KEYS = ("file_path", "path", "notebook_path", "filePath", "absolute_path", "file")
_PATCH_HEADERS = ("*** Add File:", "*** Update File:", "*** Delete File:", "*** Move to:")
NO_MATCH_PROGRAMS = frozenset(
    {"grep", "egrep", "fgrep", "rg", "ag", "ack", "diff", "cmp", "test", "["}
)
"""Programs whose exit code 1 answers a question (no match, files differ, false): not a
failure (as Claude Code itself reads them)."""
_PENDING_MAX = 4096
"""Calls awaiting a result at most (a log that never settles them cannot grow memory)."""


@dataclass(slots=True)
class _Call:
    tool: str
    at: str | None
    node: str
    execution: str
    command: str
    family: str
    chain: list[str]
    cwd: str | None
    paths: list[str]
    changes: bool
    """Whether a success of this call can resolve a failure on the same paths."""
    edits: bool = False
    """Whether the call edits files (a file tool's write, a patch, `sed -i`, `> file`)."""
    kind: str = "other"
    """`shell`, `file` or `other`: only a call of the failure's kind resolves it by path."""


@dataclass(slots=True)
class _Failure:
    entry: dict[str, Any]
    family: str
    paths: frozenset[str]
    kind: str
    edits: int
    """How many edits had succeeded when the call failed."""


@dataclass(slots=True)
class FailureLog:
    """Failed calls of one session, bounded, with what resolved each."""

    harness: str
    root: str | None = None
    _pending: dict[str, _Call] = field(default_factory=dict)
    _first: list[_Failure] = field(default_factory=list)
    _latest: deque[_Failure] = field(
        default_factory=lambda: deque(maxlen=MAX_TOOL_FAILURES - FAILURES_KEPT_FIRST)
    )
    dropped: int = 0
    _edits: int = 0

    def called(
        self,
        call_id: str,
        tool: str,
        tool_input: Any,
        *,
        at: str | None,
        node: str,
        execution: str,
        base: str | None,
    ) -> None:
        """A tool call was made; its result comes later under the same `call_id`."""
        arguments = tool_input if isinstance(tool_input, dict) else {}
        if len(self._pending) >= _PENDING_MAX:
            self._pending.pop(next(iter(self._pending)))
        self._pending[call_id] = self._describe(tool, arguments, at, node, execution, base)

    def failed(
        self,
        call_id: str,
        at: str | None,
        *,
        output: str,
        exit_code: int | None = None,
        timed_out: bool = False,
        tool: str = "tool",
    ) -> None:
        """The call's result says it failed (an error result, an exit code, a refusal)."""
        call = self._pending.get(call_id)
        if call is not None and exit_code == 1 and _answers(call.family):
            self.succeeded(call_id, at)
            return
        self._pending.pop(call_id, None)
        if call is None:
            call = _Call(tool, at, "worker", "", "", tool, [], None, [], changes=False)
        family = failing_family(call.chain, output) if len(call.chain) > 1 else call.family
        error = informative_error(output, family or call.family)
        if (timed_out or exit_code == 124) and "timed out" not in error.lower():
            error = f"timed out; {error}" if error else "timed out"
        entry: dict[str, Any] = {
            "node": call.node,
            "execution": call.execution,
            "tool": call.tool,
            "command": screen_credentials(call.command),
            "family": family or call.family,
            "error": screen_credentials(error),
            "paths": call.paths,
        }
        if at or call.at:
            entry["at"] = at or call.at
        if call.cwd is not None:
            entry["cwd"] = call.cwd
        if exit_code is not None:
            entry["exit_code"] = exit_code
        failure = _Failure(entry, entry["family"], frozenset(call.paths), call.kind, self._edits)
        if len(self._first) < FAILURES_KEPT_FIRST:
            self._first.append(failure)
            return
        if len(self._latest) == self._latest.maxlen:
            self.dropped += 1
        self._latest.append(failure)

    def succeeded(self, call_id: str, at: str | None) -> None:
        """The call succeeded: it resolves the kept failures of its family or paths."""
        call = self._pending.pop(call_id, None)
        if call is None:
            return
        resolution: dict[str, Any] | None = None
        for failure in (*self._first, *self._latest):
            if "resolved_by" in failure.entry:
                continue
            same_paths = (
                call.changes and call.kind == failure.kind and bool(failure.paths & set(call.paths))
            )
            if failure.family != call.family and not same_paths:
                continue
            if resolution is None:
                resolution = {"command": screen_credentials(call.command), "family": call.family}
                if at or call.at:
                    resolution["at"] = at or call.at
            # `edited`: files were edited between the failure and what resolved it (the
            # scanner tells a red-green cycle by it).
            failure.entry["resolved_by"] = {**resolution, "edited": self._edits > failure.edits}
        if call.edits:
            self._edits += 1

    def abandoned(self, call_id: str) -> None:
        """The call has no outcome of its own (a person's "no", an interruption, a call
        cancelled because another failed): neither a failure nor a success."""
        self._pending.pop(call_id, None)

    def pending(self, call_id: str) -> bool:
        """Whether `call_id` still awaits its result."""
        return call_id in self._pending

    def entries(self) -> list[dict[str, Any]]:
        """The kept failures in recorded order (the record's `tool_failures`)."""
        return [failure.entry for failure in (*self._first, *self._latest)]

    # --- describing a call -----------------------------------------------------------

    def _describe(
        self,
        tool: str,
        arguments: dict[str, Any],
        at: str | None,
        node: str,
        execution: str,
        base: str | None,
    ) -> _Call:
        cwd = self._relative_folder(base)
        paths = self._paths(tool, arguments, base)
        command_text = _command_of(arguments) if tool in SHELL_TOOLS else None
        if command_text is not None:
            text, argv = command_text
            family = (argv_family(argv) if argv else shell_family(text)) or tool
            chain = chain_families(text) if not argv else [family]
            program = family_program(family)
            changes = program not in READ_ONLY_PROGRAMS and family not in READ_ONLY_FAMILIES
            shown = cut_bytes(text, MAX_COMMAND_BYTES)
            return _Call(tool, at, node, execution, shown, family, chain, cwd, paths, changes,
                         edits=edits_files(text), kind="shell")  # fmt: skip
        if tool in FILE_TOOLS or _named_path(arguments):
            target = paths[0] if paths else (_named_path(arguments) or "")
            writes = tool not in READ_ONLY_TOOLS
            return _Call(tool, at, node, execution, cut_bytes(target, MAX_COMMAND_BYTES),
                         file_family(tool, paths[0] if paths else None), [], cwd, paths,
                         writes, edits=writes, kind="file")  # fmt: skip
        shown = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"), default=str)
        return _Call(tool, at, node, execution, cut_bytes(shown, MAX_COMMAND_BYTES), tool, [],
                     cwd, paths, changes=False)  # fmt: skip

    def _paths(self, tool: str, arguments: dict[str, Any], base: str | None) -> list[str]:
        root = self.root
        if not root or not root.startswith("/"):
            return []
        # The hook's reading (recall/signals.py, shell_paths.py: a bare shell word is a
        # path only when it names something), so a failure's paths and the receipts agree.
        call = ToolCall(self.harness, tool, arguments, cwd=base or root)
        return list(extract_signals(call, root).paths)[:MAX_FAILURE_PATHS]

    def _relative_folder(self, base: str | None) -> str | None:
        if not base or not self.root:
            return None
        if posixpath.normpath(base) == posixpath.normpath(self.root):
            return ""
        return relative_path(base, self.root)


_IN_PLACE = frozenset({"-i", "--in-place", "-pi", "-i.bak"})


def edits_files(command: str) -> bool:
    """Whether a command line edits files: a patch (`apply_patch`, `*** Begin Patch`,
    `patch`, `git apply`), an in-place edit (`sed -i`, `perl -pi`), or output redirected
    into a file other than `/dev/…`."""
    if "*** Begin Patch" in command:
        return True
    tokens = tokenize(command[:MAX_COMMAND_CHARS])
    for position, token in enumerate(tokens):
        following = tokens[position + 1] if position + 1 < len(tokens) else ""
        if not isinstance(token, Word):
            if token in (">", ">>", ">|", "&>") and not str(following).startswith("/dev/"):
                return True
            continue
        name = posixpath.basename(str(token))
        if name in ("apply_patch", "applypatch", "patch") or (
            name == "git" and following == "apply"
        ):
            return True
        if name in ("sed", "perl") and any(
            t in _IN_PLACE for t in tokens[position + 1 : position + 4]
        ):
            return True
    return False


def _answers(family: str) -> bool:
    program = family_program(family)
    return program in NO_MATCH_PROGRAMS or family == "git grep"


def _command_of(arguments: dict[str, Any]) -> tuple[str, list[str] | None] | None:
    """(the command line shown, the argument vector when one was given)."""
    for key in ("command", "cmd", "script"):
        value = arguments.get(key)
        if isinstance(value, str):
            return value, None
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            if (
                len(value) >= 3
                and value[1] in ("-lc", "-c")
                and posixpath.basename(value[0]) in ("bash", "sh", "zsh")
            ):
                return value[2], None
            return shlex.join(value), list(value)
    return None


def _named_path(arguments: dict[str, Any]) -> str | None:
    for key in _PATH_KEYS:
        value = arguments.get(key)
        if isinstance(value, str) and value:
            return value
    patch = arguments.get("input") or arguments.get("patch")
    if isinstance(patch, str):
        for line in patch.splitlines():
            if line.startswith(_PATCH_HEADERS):
                return line.partition(":")[2].strip()
    return None
