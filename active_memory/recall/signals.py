"""Signals from a tool call: the paths, identifiers, terms and command families that recall
matches on.

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

import os

from active_memory.shell import REDIRECTIONS, simple_commands

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from active_memory.recall.types import ToolCall

MAX_PATHS = 64
MAX_IDENTIFIERS = 64
MAX_TERMS = 256
MAX_COMMANDS = 16
MAX_LOOKUPS = 16
MAX_TEXT = 64 * 1024
"""Bounds on what one call contributes, so a huge command costs no more than a big one
(`MAX_LOOKUPS`: bare shell words checked for existence, shell_paths.py)."""

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

PATCH_TOOLS = frozenset({"apply_patch", "applypatch", "patch", "apply-patch"})
GLOB_TOOLS = frozenset({"glob", "find_files", "list_files"})
SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "fish"})
SEARCHERS = frozenset({"rg", "grep", "egrep", "fgrep", "ag", "ack", "ripgrep", "git-grep"})
# Search flags whose next word is a value, not the pattern or a path.
SEARCH_VALUE_FLAGS = frozenset(
    {
        "-A", "-B", "-C", "-m", "-t", "-T", "-g", "-j", "-M", "-d", "-D", "-E",
        "--glob", "--iglob", "--type", "--type-not", "--max-count", "--context",
        "--after-context", "--before-context", "--threads", "--color", "--colors",
        "--sort", "--sortr", "--max-depth", "--include", "--exclude", "--exclude-dir",
        "--max-columns", "--encoding", "--engine", "--type-add",
    }
)  # fmt: skip
_PATCH_HEADERS = ("*** Add File:", "*** Update File:", "*** Delete File:", "*** Move to:")
_GLOB_CHARS = "*?[{"
_WORD_EXTRA = "_$"


class Signals:
    """What a tool call touched: root-relative `paths`, `identifiers`, lowercase `terms`,
    and the command `families` of a shell call (`commands`).

    `folders` are the other readings of a relative path (the working directory's and the
    workspace root's), matched against folder associations only: they are not the file
    the call touched, so neither a file match nor a receipt comes from them.
    """

    __slots__ = ("commands", "folders", "identifiers", "paths", "terms")

    def __init__(self) -> None:
        self.paths: dict[str, None] = {}  # ordered set
        self.folders: dict[str, None] = {}
        self.identifiers: dict[str, None] = {}
        self.terms: set[str] = set()
        self.commands: dict[str, None] = {}

    def __repr__(self) -> str:
        return (
            f"Signals(paths={list(self.paths)}, folders={list(self.folders)}, "
            f"identifiers={list(self.identifiers)}, terms={sorted(self.terms)}, "
            f"commands={list(self.commands)})"
        )

    def add_commands(self, families: Iterable[str]) -> None:
        """Record command families (at most `MAX_COMMANDS`)."""
        for family in families:
            if len(self.commands) >= MAX_COMMANDS:
                return
            self.commands[family] = None


def extract_signals(call: ToolCall, root: str) -> Signals:
    """The signals of `call` inside the workspace `root` (an absolute folder)."""
    reader = _Reader(root, call.cwd or root)
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
                reader.shell(command, base)
                reader.signals.add_commands(_families(command))
        elif isinstance(command, list) and all(isinstance(v, str) for v in command):
            reader.argv(list(command), base)
            reader.signals.add_commands(_families(list(command)))
    for key in PATTERN_KEYS:
        for value in _strings(tool_input.get(key)):
            if key in ("glob", "include") or tool in GLOB_TOOLS:
                reader.glob(value, pattern_base)
            else:
                reader.pattern(value)
    return reader.signals


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


class _Reader:
    """Accumulates signals; `base` is the folder relative paths are resolved against."""

    def __init__(self, root: str, cwd: str) -> None:
        self.root = os.path.normpath(root)
        self.real_root: str | None = None  # resolved on the first miss
        self.lookups = MAX_LOOKUPS  # bare shell words checked for existence, at most
        self.base = self.resolve(cwd, self.root)
        self.signals = Signals()

    # --- paths --------------------------------------------------------------------

    def resolve(self, path: str, base: str) -> str:
        if path.startswith("~"):
            path = os.path.expanduser(path)
        return os.path.normpath(os.path.join(base, path))

    def relative(self, absolute: str) -> str | None:
        found = _under(absolute, self.root)
        if found is None:
            # Only on a miss: the same folder reached through a symlink (macOS `/tmp` is
            # `/private/tmp`; a workspace given through a link).
            if self.real_root is None:
                self.real_root = os.path.realpath(self.root)
            real = os.path.realpath(absolute)
            if real != absolute or self.real_root != self.root:
                found = _under(real, self.real_root)
        return found

    def path(self, raw: str, base: str) -> None:
        text = raw.strip()
        if not text or "\x00" in text or "://" in text or text.startswith("-"):
            return
        text, detail = split_location(text)
        if detail:
            self.words(detail)  # `::test_checkout_total` names what the work is about
        if any(ch in text for ch in _GLOB_CHARS):
            self.glob(text, base)
            return
        relative, other = self.readings(text, base)
        if relative is None:
            return
        # Terms come from the root-relative path: the folders above the checkout say
        # nothing about the work.
        self.words(relative)
        if len(self.signals.paths) < MAX_PATHS:
            self.signals.paths[relative] = None
            if other is not None:
                self.signals.folders[other] = None

    def readings(self, text: str, base: str) -> tuple[str | None, str | None]:
        """The root-relative path `text` names from `base`, and the other reading, kept
        for folder matches only (None when there is none).

        The working directory's reading wins when it names something in the workspace;
        else the root's when that does; when neither exists (a file about to be
        written), the working directory's, with the root's kept for folders. Only a
        relative path read outside the root has two readings, so only then is anything
        looked up (one or two `lstat`s).
        """
        absolute = self.resolve(text, base)
        relative = self.relative(absolute)
        if base == self.root or text[0] == "~" or os.path.isabs(text):
            return relative, None
        from_root = self.resolve(text, self.root)
        rooted = self.relative(from_root)
        if rooted is None or rooted == relative:
            return relative, None
        if relative is not None and os.path.lexists(absolute):
            return relative, rooted if os.path.lexists(from_root) else None
        if os.path.lexists(from_root):
            return rooted, None
        return (relative, rooted) if relative is not None else (rooted, None)

    def glob(self, pattern: str, base: str) -> None:
        """A glob's literal leading folders are a folder signal; its words are terms."""
        self.pattern(pattern)
        parts = pattern.replace("\\", "/").split("/")
        literal: list[str] = []
        for part in parts[:-1]:
            if any(ch in part for ch in _GLOB_CHARS):
                break
            literal.append(part)
        if literal and len(self.signals.paths) < MAX_PATHS:
            folder = "/".join(literal) or "/"
            relative, other = self.readings(folder, base)
            if relative is not None:
                self.signals.paths[relative] = None
            if other is not None:
                self.signals.folders[other] = None

    def patch(self, text: str, base: str) -> None:
        """Every file an `apply_patch` envelope adds, updates, deletes or moves to."""
        for line in text.splitlines():
            if line.startswith(_PATCH_HEADERS):
                self.path(line.partition(":")[2].strip(), base)

    # --- shell --------------------------------------------------------------------

    def shell(self, text: str, base: str) -> None:
        if "*** Begin Patch" in text:
            self.patch(text, base)
        for words in simple_commands(text[:MAX_TEXT]):
            base = self.argv(words, base)

    def argv(self, words: list[str], base: str) -> str:
        """Read one simple command; return the base for the commands after it."""
        # Imported by a call that runs a command (see `_families`).
        from active_memory.command_family import unwrapped

        words = unwrapped(list(words))  # `timeout 60`, `env X=1`, `npx`, `python -m`…
        if not words:
            return base
        program = os.path.basename(words[0])
        args = self.redirections(words[1:], base)
        self.words(program)
        if "/" in words[0]:
            self.path(words[0], base)
        if program in ("cd", "pushd"):
            target = next((a for a in args if not a.startswith("-")), None)
            if target is None or target.startswith("$") or target == "~":
                return base
            self.path(target, base)
            return self.resolve(target, base)
        if program in SHELLS:
            for position, arg in enumerate(args[:-1]):
                if arg.startswith("-") and not arg.startswith("--") and "c" in arg:
                    self.shell(args[position + 1], base)
                    return base
        if program in PATCH_TOOLS:
            for arg in args:
                self.patch(arg, base)
            return base
        if program == "git":
            self.git(args, base)
            return base
        if program in SEARCHERS:
            self.search(args, base)
            return base
        from active_memory.recall.shell_paths import without_verbs

        family, rest = without_verbs(program, args)
        self.arguments(rest, base, family)
        return base

    def git(self, args: list[str], base: str) -> None:
        """`git [-C dir] SUBCOMMAND args…`: the subcommand is a verb, not a path."""
        verb = _first_positional(args)
        if verb is not None and verb > 0 and args[verb - 1] == "-C":
            self.path(args[verb], base)
            base = self.resolve(args[verb], base)
            args = args[verb + 1 :]
            verb = _first_positional(args)
        if verb is None:
            return
        subcommand, rest = args[verb], args[verb + 1 :]
        self.words(subcommand)
        if subcommand == "grep":
            self.search(rest, base)
        else:
            self.arguments(rest, base, f"git {subcommand}")

    def redirections(self, words: list[str], base: str) -> list[str]:
        """The arguments without redirections; a redirection's file is a path signal."""
        args: list[str] = []
        position = 0
        while position < len(words):
            word = words[position]
            following = words[position + 1] if position + 1 < len(words) else None
            if type(word) is str and word in REDIRECTIONS:  # an operator, not a quoted word
                if following is not None and not following.isdigit() and following != "-":
                    self.path(following, base)
                position += 2
                continue
            if word.isdigit() and following in REDIRECTIONS and type(following) is str:
                position += 1  # the descriptor number of `2>&1`
                continue
            args.append(word)
            position += 1
        return args

    def arguments(self, args: list[str], base: str, family: str) -> None:
        """A command's arguments after its verbs (`family`: `git add`, `ls`): paths by
        shell_paths' rule, the rest words; an option's `=` value is one when it has a `/`
        and passes the same rule (`--out=build/x.json`, not `--reason="fix a/b"`)."""
        from active_memory.recall.shell_paths import is_path_argument

        def exists(word: str) -> bool:
            if self.lookups <= 0:
                return False
            self.lookups -= 1
            if os.path.lexists(os.path.join(base, word)):
                return True
            return base != self.root and os.path.lexists(os.path.join(self.root, word))

        for arg in args:
            if arg.startswith("-"):
                _, equals, value = arg.partition("=")
                if equals and "/" in value and is_path_argument(value, family, exists):
                    self.path(value, base)
                continue
            if is_path_argument(split_location(arg)[0], family, exists):
                self.path(arg, base)
            else:
                self.words(arg)

    def search(self, args: list[str], base: str) -> None:
        pattern_given = False
        positional: list[str] = []
        skip_next = False
        only_positional = False
        for position, arg in enumerate(args):
            if skip_next:
                skip_next = False
                continue
            if only_positional or not arg.startswith("-") or arg == "-":
                positional.append(arg)
                continue
            if arg == "--":
                only_positional = True
            elif arg in ("-e", "--regexp") and position + 1 < len(args):
                self.pattern(args[position + 1])
                pattern_given = True
                skip_next = True
            elif arg.startswith("--regexp="):
                self.pattern(arg.partition("=")[2])
                pattern_given = True
            elif arg in ("-f", "--file") and position + 1 < len(args):
                self.path(args[position + 1], base)
                skip_next = True
            elif arg in SEARCH_VALUE_FLAGS:
                if arg in ("-g", "--glob", "--iglob", "--include") and position + 1 < len(args):
                    self.pattern(args[position + 1])
                skip_next = True
        if positional and not pattern_given:
            self.pattern(positional.pop(0))
        for arg in positional:
            self.path(arg, base)

    # --- identifiers and terms ----------------------------------------------------

    def pattern(self, text: str) -> None:
        """Identifiers in a regular expression, glob or query; their terms too."""
        for identifier in identifiers_in(text[:MAX_TEXT]):
            if len(self.signals.identifiers) < MAX_IDENTIFIERS:
                self.signals.identifiers[identifier] = None
            self.add_terms(split_terms(identifier))

    def words(self, text: str) -> None:
        self.add_terms(split_terms(text[:4096]))

    def add_terms(self, terms: Iterable[str]) -> None:
        found = self.signals.terms
        for term in terms:
            if len(found) >= MAX_TERMS:
                return
            found.add(term)


def _under(absolute: str, root: str) -> str | None:
    """`absolute` relative to `root` with `/` separators; None outside it or at it."""
    if absolute == root:
        return None
    prefix = root if root.endswith(os.sep) else root + os.sep
    if not absolute.startswith(prefix):
        return None
    relative = absolute[len(prefix) :]
    return relative.replace(os.sep, "/") if os.sep != "/" else relative


def split_location(text: str) -> tuple[str, str]:
    """A path with a location after it, read as the file: `(path, what follows)`.

    `tests/x.py::TestCart::test_total` (a pytest node ID), `src/a.py:12` and
    `src/a.py:12:5` (compiler and grep positions) name `tests/x.py` and `src/a.py`. A
    `::` counts only after something that looks like a file (a `/` or a dot in its last
    name), so `crate::module` stays a word.
    """
    head, separator, tail = text.partition("::")
    if separator and head and ("/" in head or "." in head.rpartition("/")[2]):
        return head, tail
    for _ in range(2):
        stem, colon, number = text.rpartition(":")
        if not colon or not stem or not number.isdigit():
            break
        text = stem
    return text, ""


def _first_positional(args: list[str]) -> int | None:
    return next((i for i, arg in enumerate(args) if not arg.startswith("-")), None)


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch in _WORD_EXTRA


def identifiers_in(text: str) -> list[str]:
    """Whole identifiers in a pattern: `\\bhandle_checkout\\(` → `handle_checkout`.

    Regex escapes are read first (`\\s`, `\\b`, `\\w` separate; `\\.` is a dot), so a
    class escape never glues onto a name. Dotted and `::` names are kept whole as well as
    in parts (`os.path.join` → `os.path.join`, `os`, `path`, `join`). One-character names
    are not identifiers.
    """
    cleaned: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\" and i + 1 < n:
            following = text[i + 1]
            cleaned.append(" " if following.isalnum() else following)
            i += 2
            continue
        cleaned.append(ch)
        i += 1
    plain = "".join(cleaned)
    found: dict[str, None] = {}
    i, n = 0, len(plain)
    while i < n:
        if not _is_word_char(plain[i]):
            i += 1
            continue
        start, parts, j = i, [], i
        while True:
            k = j
            while k < n and _is_word_char(plain[k]):
                k += 1
            parts.append(plain[j:k])
            if plain.startswith("::", k) and k + 2 < n and _is_word_char(plain[k + 2]):
                j = k + 2
            elif plain.startswith(".", k) and k + 1 < n and _is_word_char(plain[k + 1]):
                j = k + 1
            else:
                break
        for part in parts:
            if len(part) > 1 and not part[0].isdigit():
                found[part] = None
        if len(parts) > 1 and not plain[start].isdigit():
            found[plain[start:k]] = None
        i = k
    return list(found)


def split_terms(text: str) -> list[str]:
    """Lowercase terms of a name or path: `parseHTTPResponse_v2` → parse, http, response, v2.

    Whole tokens are kept too (`api-client` → `api-client`, `api`, `client`), since a
    keyword term may contain `_ . + -`.
    """
    terms: list[str] = []
    token: list[str] = []
    for ch in text + " ":
        if ch.isalnum() or ch in "_.+-":
            token.append(ch)
            continue
        if token:
            _token_terms("".join(token), terms)
            token = []
    return terms


def _token_terms(token: str, terms: list[str]) -> None:
    whole = token.strip("._+-").lower()
    if whole and whole[0].isalnum():
        terms.append(whole)
    piece: list[str] = []
    previous = ""
    for position, ch in enumerate(token):
        if not ch.isalnum():
            if piece:
                terms.append("".join(piece).lower())
            piece = []
            previous = ""
            continue
        following = token[position + 1] if position + 1 < len(token) else ""
        boundary = bool(piece) and (
            (ch.isupper() and (previous.islower() or previous.isdigit()))
            or (ch.isupper() and previous.isupper() and following.islower())
        )
        if boundary:
            terms.append("".join(piece).lower())
            piece = []
        piece.append(ch)
        previous = ch
    if piece:
        terms.append("".join(piece).lower())
