"""Which arguments of a shell command are paths: the one rule for recall's signals, so
for the hook's receipts, its matches and the importers' failure paths alike.

A shell call's words are read after its wrappers (command_family.unwrapped: `timeout
N`, `env`, `npx`, `uv run`, `python -m`, …). The words of its family are verbs, never
paths (`mix test`, `npm run build`, `gh pr close`, `bd show`). Of the other arguments
(options and their `=` values are read by the caller):

1. never a path: a word with a space or shell punctuation, a number, a word starting
   with `+ @ % ^ = :` (`chmod +x`, `@types/node`), a word with a `:` that is not a
   `file:line` location (`HEAD:lib/a.ex`, `host:/srv`, `build:prod`), a revision range
   (`master..HEAD`, `a...b`: `..` inside a name, not as a folder);
2. for a program whose arguments are files (`ls`, `cat`, `rm`, `mkdir`, …,
   `FILE_PROGRAMS`), any other word is a path, existing or not (`mkdir -p build`);
3. for a command whose arguments are names of packages or modules (`npm install
   highlight.js`, `pip install`, `cargo add`, `go get`, `NAME_FAMILIES`), only a word
   written as a local path (`./pkg`, `../lib`, `/abs`, `~/x`, `.`) is a path;
4. for any other program: a word with a `/` (`priv/static/assets`), a name with a file
   suffix (`app.css`, `.credo.exs`, `.gitignore`; a suffix in lower or upper case only:
   `Phoenix.LiveView` is a module), or a bare word that exists in the working folder or
   at the root (`Makefile`, `test`); a bare word that names nothing (`git push origin
   master`, `close`, `in_progress`, `spotter-gqc.7`) is a word.

Only rule 4's bare words cost a file-system call (`lstat`); the caller bounds them
(types.MAX_LOOKUPS per call, then a bare word is a word). Standard library and
command_family only: a hook process imports it the first time a call runs a command.
"""

from __future__ import annotations

from active_memory.command_family import SUBCOMMAND_PROGRAMS, argv_family

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

MAX_LOOKUPS = 16
"""Bare words a caller looks up per call, at most (a long `echo a b c …` costs no more);
past that a bare word is a word."""

FILE_PROGRAMS = frozenset(
    {
        "ls", "cat", "head", "tail", "less", "more", "wc", "cp", "mv", "rm", "rmdir", "touch",
        "mkdir", "stat", "file", "du", "tree", "diff", "vim", "vi", "nano", "code", "ln",
        "readlink", "realpath", "bat", "nl", "tac", "open", "source", ".", "dirname",
    }
)  # fmt: skip
"""Programs whose arguments, options aside, are files or folders."""

NAME_FAMILIES = frozenset(
    {
        "npm install", "npm uninstall", "npm update", "npm view", "npm info",
        "yarn add", "yarn remove", "yarn upgrade", "pnpm add", "pnpm install",
        "pnpm remove", "pnpm update", "bun add", "bun remove", "pip install",
        "pip uninstall", "pip3 install", "pip3 uninstall", "pip show", "uv add",
        "uv remove", "uv pip install", "uv pip uninstall", "uv tool install",
        "poetry add", "poetry remove", "cargo add", "cargo remove", "cargo install",
        "go get", "go install", "gem install", "brew install", "brew uninstall",
        "apt install", "apt-get install", "mix hex.info", "docker pull", "docker run",
        "docker push", "composer require", "dotnet add",
    }
)  # fmt: skip
"""Command families whose arguments name packages or modules, not files."""

_LOCAL = ("./", "../", "/", "~")
_NOT_IN_PATHS = frozenset(" \t\n,=$(){}<>|;&\"'`!")
_NOT_FIRST = frozenset("+@%^=:")
_SUFFIX_MAX = 10


def looks_like_path(word: str) -> bool:
    """A shell argument that could name a file: no spaces or shell/script punctuation, and
    not a bare number (`sed -n 1,80p`, `head -n 20`, a commit message are not paths)."""
    if not word or word.isdigit() or any(ch in _NOT_IN_PATHS for ch in word):
        return False
    return any(ch.isalnum() for ch in word)


def is_path_argument(word: str, family: str, exists: Callable[[str], bool]) -> bool:
    """Whether `word` (a location already cut off: `a.py:12` is `a.py`), an argument of a
    command of `family` (`git add`, `ls`), is a path (the module docstring's rule).
    `exists(word)` is asked only for a bare word of a program outside `FILE_PROGRAMS`."""
    if not looks_like_path(word) or word[0] in _NOT_FIRST or ":" in word:
        return False
    if ".." in word and any(".." in part and part != ".." for part in word.split("/")):
        return False  # `master..HEAD`, `v1...v2`: a range, not `../x`
    if family in NAME_FAMILIES:
        return word == "." or word.startswith(_LOCAL)
    program = family.partition(" ")[0]
    if program in FILE_PROGRAMS or "/" in word or word[0] == "~":
        return True
    return has_file_suffix(word) or exists(word)


def has_file_suffix(name: str) -> bool:
    """`app.css`, `.credo.exs`, `.gitignore`, `.dialyzerignore`: a name ending in a dot and
    a suffix of letters, digits, `_` or `-` that starts with a letter, short unless the
    name is a dot file (`spotter-gqc.7`, `v1.2`, `a.b..c` are not)."""
    stem, dot, suffix = name.rpartition(".")
    if not dot or not suffix or not suffix[0].isalpha():
        return False
    if stem and (len(suffix) > _SUFFIX_MAX or not (suffix.islower() or suffix.isupper())):
        return False  # `Phoenix.LiveView`, `Foo.Bar`: modules
    return all(ch.isalnum() or ch in "_-" for ch in suffix)


def without_verbs(program: str, args: list[str]) -> tuple[str, list[str]]:
    """The command's family and `args` without the family's words after the program
    (`mix test test/a_test.exs` → `test/a_test.exs`; `gh pr close 5` → `5`)."""
    if program not in SUBCOMMAND_PROGRAMS:
        return program, args
    family = argv_family([program, *args]) or program
    verbs = family.split(" ")[1:]
    kept = list(args)
    start = 0
    for verb in verbs:
        for position in range(start, len(kept)):
            if kept[position] == verb:
                del kept[position]
                start = position
                break
    return family, kept
