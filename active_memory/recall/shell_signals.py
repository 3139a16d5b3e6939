"""How a shell command becomes signals: each simple command of its chain read in order.

Wrappers are stripped first (command_family.unwrapped: `timeout 60`, `env X=1`, `npx`,
`python -m`, …). `cd folder && …` (and `pushd`) moves the base of later arguments;
`git -C dir` does for its own; `bash -c '…'` is read as the command it runs; an
`apply_patch` command or heredoc names the files its envelope touches; a search
program's (`rg`, `grep`, `git grep`, …) first positional word or `-e` value is a pattern
(identifiers and terms), the rest paths; a redirection's file is a path. Of any other
command, which arguments are paths is shell_paths.py's rule: a command's verbs, flags,
URLs, ranges and bare words that name nothing are words, and a bare word is looked up
(`lstat`) at most `MAX_LOOKUPS` times per call.

Imported by signals.py only for a call that runs a command: a file tool's hook process
loads neither this module nor the shell tokenizer.
"""

from __future__ import annotations

import os

from active_memory.recall.path_signals import PATCH_TOOLS, PathReader, split_location
from active_memory.recall.types import MAX_TEXT
from active_memory.shell import REDIRECTIONS, simple_commands

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


def read_shell(reader: PathReader, text: str, base: str) -> None:
    """Read a shell command line: its simple commands in order, an `apply_patch` heredoc."""
    if "*** Begin Patch" in text:
        reader.patch(text, base)
    for words in simple_commands(text[:MAX_TEXT]):
        base = read_argv(reader, words, base)


def read_argv(reader: PathReader, words: list[str], base: str) -> str:
    """Read one simple command; return the base for the commands after it."""
    # Imported by a call that runs a command (see signals.py, `_families`).
    from active_memory.command_family import unwrapped

    words = unwrapped(list(words))  # `timeout 60`, `env X=1`, `npx`, `python -m`…
    if not words:
        return base
    program = os.path.basename(words[0])
    args = _redirections(reader, words[1:], base)
    reader.words(program)
    if "/" in words[0]:
        reader.path(words[0], base)
    if program in ("cd", "pushd"):
        target = next((a for a in args if not a.startswith("-")), None)
        if target is None or target.startswith("$") or target == "~":
            return base
        reader.path(target, base)
        return reader.resolve(target, base)
    if program in SHELLS:
        for position, arg in enumerate(args[:-1]):
            if arg.startswith("-") and not arg.startswith("--") and "c" in arg:
                read_shell(reader, args[position + 1], base)
                return base
    if program in PATCH_TOOLS:
        for arg in args:
            reader.patch(arg, base)
        return base
    if program == "git":
        _git(reader, args, base)
        return base
    if program in SEARCHERS:
        _search(reader, args, base)
        return base
    from active_memory.recall.shell_paths import without_verbs

    family, rest = without_verbs(program, args)
    _arguments(reader, rest, base, family)
    return base


def _git(reader: PathReader, args: list[str], base: str) -> None:
    """`git [-C dir] SUBCOMMAND args…`: the subcommand is a verb, not a path."""
    verb = _first_positional(args)
    if verb is not None and verb > 0 and args[verb - 1] == "-C":
        reader.path(args[verb], base)
        base = reader.resolve(args[verb], base)
        args = args[verb + 1 :]
        verb = _first_positional(args)
    if verb is None:
        return
    subcommand, rest = args[verb], args[verb + 1 :]
    reader.words(subcommand)
    if subcommand == "grep":
        _search(reader, rest, base)
    else:
        _arguments(reader, rest, base, f"git {subcommand}")


def _redirections(reader: PathReader, words: list[str], base: str) -> list[str]:
    """The arguments without redirections; a redirection's file is a path signal."""
    args: list[str] = []
    position = 0
    while position < len(words):
        word = words[position]
        following = words[position + 1] if position + 1 < len(words) else None
        if type(word) is str and word in REDIRECTIONS:  # an operator, not a quoted word
            if following is not None and not following.isdigit() and following != "-":
                reader.path(following, base)
            position += 2
            continue
        if word.isdigit() and following in REDIRECTIONS and type(following) is str:
            position += 1  # the descriptor number of `2>&1`
            continue
        args.append(word)
        position += 1
    return args


def _arguments(reader: PathReader, args: list[str], base: str, family: str) -> None:
    """A command's arguments after its verbs (`family`: `git add`, `ls`): paths by
    shell_paths' rule, the rest words; an option's `=` value is one when it has a `/`
    and passes the same rule (`--out=build/x.json`, not `--reason="fix a/b"`)."""
    from active_memory.recall.shell_paths import is_path_argument

    def exists(word: str) -> bool:
        if reader.lookups <= 0:
            return False
        reader.lookups -= 1
        if os.path.lexists(os.path.join(base, word)):
            return True
        return base != reader.root and os.path.lexists(os.path.join(reader.root, word))

    for arg in args:
        if arg.startswith("-"):
            _, equals, value = arg.partition("=")
            if equals and "/" in value and is_path_argument(value, family, exists):
                reader.path(value, base)
            continue
        if is_path_argument(split_location(arg)[0], family, exists):
            reader.path(arg, base)
        else:
            reader.words(arg)


def _search(reader: PathReader, args: list[str], base: str) -> None:
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
            reader.pattern(args[position + 1])
            pattern_given = True
            skip_next = True
        elif arg.startswith("--regexp="):
            reader.pattern(arg.partition("=")[2])
            pattern_given = True
        elif arg in ("-f", "--file") and position + 1 < len(args):
            reader.path(args[position + 1], base)
            skip_next = True
        elif arg in SEARCH_VALUE_FLAGS:
            if arg in ("-g", "--glob", "--iglob", "--include") and position + 1 < len(args):
                reader.pattern(args[position + 1])
            skip_next = True
    if positional and not pattern_given:
        reader.pattern(positional.pop(0))
    for arg in positional:
        reader.path(arg, base)


def _first_positional(args: list[str]) -> int | None:
    return next((i for i, arg in enumerate(args) if not arg.startswith("-")), None)
