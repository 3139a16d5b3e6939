"""Signals from a tool call: the paths, identifiers, terms and command families that recall
matches on (SPEC §8). `extract_signals` is the entry; each rule has its module:

| module | rule |
|---|---|
| `signals.py` | which keys of a tool's input are read, in SPEC §8's order |
| `path_signals.py` | a path text → root-relative paths (`file:line`, globs, patches) |
| `shell_signals.py` | a shell command's words (`cd`, `git -C`, searchers, redirections) |
| `shell_paths.py` | which bare shell arguments are paths |
| `terms.py` | identifiers in a pattern, terms of a name |
| `types.py` | `Signals` and the bounds on what one call contributes |

Read in SPEC §8's order: native path fields first (Claude Code `file_path`,
`notebook_path`, `path`; OpenCode `filePath`; Codex `apply_patch` headers), then shell
commands (wrappers stripped; `cd folder && …` moves the base of later arguments; which
arguments are paths is shell_paths.py's rule: a command's verbs, flags, URLs, ranges and
bare words that name nothing are not), then identifiers in search patterns and queries.
Identifiers and path names are split (snake_case, camelCase, PascalCase, kebab-case) into
lowercase terms for keyword groups. A shell command's families (command_family.py:
every working command of its chain, wrappers such as `cd … &&` and `timeout N` stripped)
match `commands` associations. A relative path is resolved against the tool's working
directory; when that names nothing in the workspace but the same text from the workspace
root does, the root's reading is the file (an agent in `repo/src` reading `src/a.py`
means `repo/src/a.py`), and both readings are tried for folder matches. `file::test`,
`file:line` and `file:line:col` name the file. Paths are kept only inside the workspace
root, root-relative with `/`.

Nothing is read or run; the only file-system calls are an existence check (`lstat`) of
the two readings of a relative path, made only when the working directory is not the
root, of a bare shell word (at most `MAX_LOOKUPS` per call), and a `realpath` when a path
seems to lie outside the root. A path need not exist to be a signal, but a bare shell word
must (`git push origin main` names no file called `origin`).
"""

from __future__ import annotations

from active_memory.recall.path_signals import PATCH_TOOLS, PathReader
from active_memory.recall.path_signals import split_location as split_location
from active_memory.recall.terms import identifiers_in as identifiers_in
from active_memory.recall.terms import split_terms as split_terms
from active_memory.recall.types import MAX_COMMANDS as MAX_COMMANDS
from active_memory.recall.types import MAX_IDENTIFIERS as MAX_IDENTIFIERS
from active_memory.recall.types import MAX_LOOKUPS as MAX_LOOKUPS
from active_memory.recall.types import MAX_PATHS as MAX_PATHS
from active_memory.recall.types import MAX_TERMS as MAX_TERMS
from active_memory.recall.types import MAX_TEXT as MAX_TEXT
from active_memory.recall.types import Signals as Signals

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from active_memory.recall.types import ToolCall

PATH_KEYS = (
    "file_path",
    "notebook_path",
    "filePath",
    "notebookPath",
    "path",
    "paths",
    "file",
    "files",
    "filename",
    "directory",
    "dir_path",
)
COMMAND_KEYS = ("command", "cmd", "script")
PATCH_KEYS = ("patch", "patchText", "patch_text", "input")
PATTERN_KEYS = ("pattern", "regex", "query", "q", "search", "glob", "include")
WORKDIR_KEYS = ("workdir", "cwd", "working_directory")

GLOB_TOOLS = frozenset({"glob", "find_files", "list_files"})


def extract_signals(call: ToolCall, root: str) -> Signals:
    """The signals of `call` inside the workspace `root` (an absolute folder)."""
    reader = PathReader(root, call.cwd or root)
    tool_input: Any = call.tool_input
    if not isinstance(tool_input, dict):
        return reader.signals
    tool = call.tool.lower()
    for key in PATH_KEYS:
        if key in tool_input:
            for value in _strings(tool_input[key]):
                reader.path(value, reader.base)
    # A search tool's `path` is the folder its glob or pattern is relative to.
    search_base = tool_input.get("path")
    pattern_base = (
        reader.resolve(search_base, reader.base) if isinstance(search_base, str) else reader.base
    )
    for key in PATCH_KEYS:
        patch = tool_input.get(key)
        if isinstance(patch, str) and (tool in PATCH_TOOLS or "*** Begin Patch" in patch):
            reader.patch(patch, reader.base)
    workdir = next((v for k in WORKDIR_KEYS if isinstance(v := tool_input.get(k), str)), None)
    base = reader.resolve(workdir, reader.base) if workdir else reader.base
    for key in COMMAND_KEYS:
        command = tool_input.get(key)
        if isinstance(command, str):
            if tool in PATCH_TOOLS:
                reader.patch(command, base)
            else:
                _command(reader, command, base)
        elif isinstance(command, list) and all(isinstance(v, str) for v in command):
            _command(reader, list(command), base)
    for key in PATTERN_KEYS:
        for value in _strings(tool_input.get(key)):
            if key in ("glob", "include") or tool in GLOB_TOOLS:
                reader.glob(value, pattern_base)
            else:
                reader.pattern(value)
    return reader.signals


def _command(reader: PathReader, command: str | list[str], base: str) -> None:
    """A command line or argument vector: its words (shell_signals.py), then its families."""
    # Imported here, by a call that runs a command: a file tool's hook process loads
    # neither the shell reading nor the shell tokenizer.
    from active_memory.recall.shell_signals import read_argv, read_shell

    if isinstance(command, str):
        read_shell(reader, command, base)
    else:
        read_argv(reader, command, base)
    reader.signals.add_commands(_families(command))


def _families(command: str | list[str]) -> list[str]:
    """The command families of a command line or argument vector (command_family.py)."""
    # Imported here, by a call that runs a command: a file tool's hook process does not
    # load the family rules (about 0.4 ms of a start-up; bench/README.md).
    from active_memory.command_family import argv_families, chain_families

    return chain_families(command) if isinstance(command, str) else argv_families(command)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []
