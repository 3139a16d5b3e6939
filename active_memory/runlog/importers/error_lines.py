"""The informative error of a failed tool call: the line or lines that say what is wrong.

Not a hint (`hint: …`), a banner (`=== FAILURES ===`), a progress line (`Compiling 3
files (.ex)`, `Finding suitable PLTs`, `Running ExUnit with seed …`), a stack frame or
the echo of a source line. How it is chosen (docs/importers.md, "Tool failures"):

1. The output is cleaned: ANSI colours and Claude Code's `<tool_use_error>` tags
   removed, a line holding escaped `\\n` line breaks (a hook that printed them) split,
   credo's `┃` margin dropped. Every line `NOISE` matches is left out.
2. `RULES` is a table of rules, each for some programs (the first word of the call's
   family: `git`, `mix`, `pytest`, `Edit`…) or for every program, each with a tier.
   The lowest tier that matches any line wins, and all its matching lines are taken in
   output order, each with the lines it joins (`joins`: the lines that continue it, up
   to a blank or noise line) and its companions (`then`: e.g. the `--> src/lib.rs:3:5`
   location under a Rust error), duplicates once, at most `MAX_LINES` lines.
3. When no rule matches: the last line that names an error (`…Error`, `error`,
   `fatal`, `denied`, `not found`, `cannot`…), else the last that hints at a failure
   (`fail`, `invalid`, `refused`), else the last line that is not noise.

A task runner (`make`, `just`, `task`: `RUNNER_LINES`) only reports that a recipe
failed (`make: *** [Makefile:5: test] Error 4`): its own lines are set aside while the
recipe's output is read, with the rules of the programs its echoed recipe lines run
(`python3 -m pytest …` → pytest's), and steps 2 and 3 up to the line naming an error;
only when the recipe's output names none is the runner's line the error.

`FAMILY_HINTS` say which command of a chain an output comes from (`git add -A && git
commit` refused by a pre-commit hook is `git commit`; an ignored path is `git add`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from active_memory.command_family import FILE_TOOLS, family_program, shell_family

MAX_LINES = 6
"""Lines of one error at most (the record's 1 KB bound applies too)."""
MAX_LINE_CHARS = 400
"""One line longer than this is cut (a minified bundle, an HTML page in an assertion)."""


def _re(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, flags)


NOISE: tuple[re.Pattern[str], ...] = (
    _re(r"^Exit code -?\d+$"),  # Claude Code's own header of a Bash result
    _re(r"^(?:Command exited with code -?\d+|Exit Code: -?\d+|Process Group PGID: \d+)$"),
    _re(r"^hint:"),  # git advice
    _re(r'^\(use "git '),
    _re(r"^To (?:push the current branch|have this happen automatically)\b"),
    _re(r"^(?:Finding suitable PLTs|Checking PLT\.\.\.|PLT is up to date!|Starting Dialyzer)"),
    _re(r"^(?:Total errors: \d|done in \d|done \(passed successfully\)|No :ignore_warnings)"),
    _re(r"^Compiling \d+ files? \(\.\w+\)$"),
    _re(r"^Generated \S+ app$"),
    _re(r"^==> \S+$"),
    _re(r"^(?:Running ExUnit with seed|Getting extensions in current project|Running setup for)"),
    _re(r"^(?:Finished in [\d.]+ seconds|Randomized with seed)"),
    _re(r"^(?:Checking \d+ source files?|Please report incorrect results|Analysis took)"),
    _re(r"^(?:Use `mix credo explain`|\d+ mods/funs, found)"),
    _re(r"^npm (?:WARN|notice)\b"),
    _re(r"^npm (?:ERR!|error)(?: (?:code|errno|syscall|path|workspace|location|command)\b|\s*$)"),
    _re(r"^npm (?:ERR!|error) (?:A complete log|Lifecycle script|To see a list|\s{2})"),
    _re(r"^npm (?:ERR!|error) enoent(?: This is related to|\s*$)"),
    _re(r"^> \S"),  # npm's banner of the script it runs
    _re(r"^\s*at (?:\S+ \(.*:\d+:\d+\)|\S+:\d+:\d+|node:\S+|async |Object\.|Module\.)"),
    _re(r"^Node\.js v\d"),
    _re(r'^\s*File ".*", line \d+'),
    _re(r"^Traceback \(most recent call last\):$"),
    _re(r"^\s*\^[\^~\s]*$"),  # carets under a quoted source line
    _re(r"^[=_\-⎯─]{3,}.*[=_\-⎯─]{3,}$"),  # banners (pytest, cargo, vitest)
    _re(r"^(?:platform \w+ -- Python|rootdir:|plugins:|collected \d+ items?|cachedir:)"),
    _re(r"^(?:configfile:|asyncio: mode=|cachedir:|Test session starts)"),
    _re(r"^\S+ [.FEsxX]+\s+\[\s*\d+%\]$"),  # pytest progress
    _re(r"^[.FEsx*]+$"),
    _re(
        r"^\s*(?:Compiling|Finished|Running|Downloaded|Downloading|Updating|Locking|Adding|"
        r"Fresh|Blocking|Installing|Collecting|Resolving|Fetching|Preparing|Building|"
        r"Using cached|Requirement already satisfied|Looking in (?:links|indexes)|"
        r"Audited|Prepared|Resolved|Installed|Uninstalled)\b"
    ),
    _re(r"^(?:stack backtrace:|note: Some details are omitted|note: run with `RUST_BACKTRACE)"),
    _re(r"^\s+\d+: \S"),  # a backtrace frame
    _re(r"^\s+at /rustc/|^\s+at \./"),
    _re(r"^(?:For more information about (?:this|an) error|Some errors have detailed)"),
    _re(r"^\s*\[?\(?Output truncated"),
    _re(r"^\s*\d*\s*[│|](?:\s.*)?$"),  # quoted source lines (rustc, elixir, gcc)
    _re(r"^\s*stacktrace:$"),
    _re(r"^\s*\(\w+ [\d.]+\) \S+:\d+: "),  # an Elixir stack frame of a dependency
    _re(r"^Please add to your mix\.exs:$"),
    _re(r"^\s*warning: "),  # a warning is not what failed
    _re(r"^\s*note: "),
    _re(r"^\s*help: "),
    _re(r"^(?:running \d+ tests?|test result: ok\.)"),
    _re(r"^# \S+$"),  # go's package header
)
"""Lines that never say what is wrong."""


@dataclass(frozen=True, slots=True)
class Rule:
    """Lines of one kind that say what is wrong, for some programs (empty: every one)."""

    name: str
    line: re.Pattern[str]
    tier: int = 1
    programs: frozenset[str] = frozenset()
    joins: int = 0
    """Following lines joined to the match, up to a blank or noise line."""
    then: re.Pattern[str] | None = None
    """A companion line (a location) taken with the match when it comes within `within`."""
    within: int = 0


_GIT = frozenset({"git"})
_TESTS_PY = frozenset({"pytest", "py.test"})
_TESTS_JS = frozenset({"jest", "vitest", "npm", "yarn", "pnpm", "bun"})
_GO = frozenset({"go"})
_MIX = frozenset({"mix", "elixir", "iex"})
_NPM = frozenset({"npm", "yarn", "pnpm", "bun", "npx"})
_PIP = frozenset({"pip", "pip3", "uv", "uvx", "poetry", "pipx"})
_HOOKED = frozenset({"git", "pre-commit"})

RULES: tuple[Rule, ...] = (
    # --- file tools: the harness's own message is its first line ------------------
    Rule("file tool", _re(r"^(?=\S)"), programs=FILE_TOOLS),
    # --- git --------------------------------------------------------------------------
    Rule("git rejected push", _re(r"^\s*! \[(?:remote )?rejected\]"), programs=_GIT),
    Rule("git fatal or error", _re(r"^(?:fatal|error): "), programs=_GIT),
    Rule(
        "git ignored paths",
        _re(r"^The following paths are ignored by one of your \.gitignore files:"),
        programs=_GIT,
        joins=3,
    ),
    Rule("git conflict", _re(r"^(?:CONFLICT \(|Automatic merge failed)"), programs=_GIT),
    Rule(
        "git nothing to commit",
        _re(r"^(?:nothing (?:added )?to commit|no changes added)"),
        programs=_GIT,
    ),
    Rule(
        "pre-commit hook",
        _re(r"^\S.*?\.{3,}(?:\(no files to check\))?Failed$"),
        programs=_HOOKED,
        then=_re(r"^- (?:files were modified by this hook|exit code: \d+)"),
        within=3,
    ),
    # --- test runners -------------------------------------------------------------------
    Rule("pytest summary", _re(r"^(?:FAILED|ERROR) \S+"), programs=_TESTS_PY),
    Rule("pytest usage", _re(r"^ERROR: "), programs=_TESTS_PY),
    Rule("pytest E line", _re(r"^E\s{2,}\S"), tier=2, programs=_TESTS_PY),
    Rule(
        "jest failure",
        _re(r"^\s*● (?!Console\b)\S"),
        programs=_TESTS_JS,
        then=_re(r"^\s*(?:expect\(|Expected|Received|\w*Error\b|Cannot find)"),
        within=8,
    ),
    Rule(
        "vitest failure",
        _re(r"^\s*FAIL\s+\S+.* > "),
        programs=_TESTS_JS,
        then=_re(r"^\s*(?:\w*Error\b|→ )"),
        within=3,
    ),
    Rule("vitest cross", _re(r"^\s*[\u00d7\u2717] \S"), tier=2, programs=_TESTS_JS),
    Rule("jest or vitest file", _re(r"^\s*FAIL\s+\S+$"), tier=3, programs=_TESTS_JS),
    Rule("mix test failure", _re(r"^\s*\d+\) test .+ \([\w.]+\)$"), programs=_MIX),
    Rule(
        "mix test assertion",
        _re(r"^\s*(?:Assertion with .+ failed|Expected truthy)"),
        programs=_MIX,
    ),
    Rule("mix test code", _re(r"^\s*code:\s+\S"), programs=_MIX),
    Rule("go test failure", _re(r"^\s*--- FAIL: \S+"), programs=_GO),
    Rule("go test message", _re(r"^\s+\S+_test\.go:\d+: \S"), programs=_GO),
    Rule("go compile error", _re(r"^\S+\.go:\d+:\d+: \S"), programs=_GO),
    Rule("go package failed", _re(r"^FAIL\s+\S+"), tier=3, programs=_GO),
    Rule(
        "rust panic",
        _re(r"^thread '.+' (?:\(\d+\) )?panicked at "),
        joins=3,
    ),
    # --- compilers, type checkers, linters (whatever runs them) -------------------------
    Rule("typescript", _re(r"^\S+?(?:\(\d+,\d+\):|:\d+:\d+ -) error TS\d+: ")),
    Rule("compiler error", _re(r"^\S+?:\d+(?::\d+)?: (?:fatal )?error: ")),
    Rule("linker", _re(r"undefined reference to |^ld(?:\.\w+)?: ")),
    Rule("rust error", _re(r"^error\[E\d+\]: "), then=_re(r"^\s*--> \S"), within=2),
    Rule(
        "error line",
        _re(r"^\s*error: (?!could not compile|test failed, to rerun|aborting due to)"),
        then=_re(r"^\s*(?:└─|-->)\s*\S+:\d+"),
        within=8,
    ),
    Rule("elixir exception", _re(r"^\s*\*\* \([\w.]+\) \S")),
    Rule("elixir compile", _re(r"^== Compilation error in file ")),
    Rule("credo issue", _re(r"^\[[A-Z]\] \S"), then=_re(r"^\s*\S+\.exs?:\d+"), within=1),
    Rule("dialyzer warning", _re(r"^\S+\.(?:exs?|erl):\d+(?::\d+)?:[a-z_]+$"), joins=1),
    Rule(
        "not formatted",
        _re(r"(?i)\b(?:not (?:properly )?formatted|would reformat|code style issues)\b"),
        joins=3,
    ),
    Rule("esbuild", _re(r"^\s*✘ \[ERROR\] ")),
    Rule("command not found", _re(r"command not found|: not found$|^\S+: No such file or dir")),
    # --- package managers ---------------------------------------------------------------
    Rule("npm error", _re(r"^npm (?:ERR!|error) \S"), programs=_NPM),
    Rule("pnpm error", _re(r"^\s*ERR_PNPM_\w+"), programs=_NPM),
    Rule("yarn error", _re(r"^error (?!Command failed with exit code)\S"), programs=_NPM),
    Rule("pip error", _re(r"^ERROR: (?!pip's dependency resolver)"), programs=_PIP),
    Rule("uv error", _re(r"^\s*\u00d7 \S"), programs=_PIP, then=_re(r"^\s*╰─[▶>]"), within=3),
    Rule(
        "mix deps",
        _re(r"^(?:Unchecked dependencies|Failed to fetch record for)"),
        programs=_MIX,
        joins=2,
    ),
    # --- what any program may print -----------------------------------------------------
    Rule(
        "exception",
        _re(r"^(?:Uncaught )?(?:[\w.]+\.)?(?:[A-Z]\w*)?(?:Error|Exception)\b(?: \[\w+\])?:\s"),
        tier=2,
    ),
    Rule(
        "permission or missing file",
        _re(r"(?i)permission denied|no such file or directory"),
        tier=2,
    ),
    Rule("weak error", _re(r"^error: (?:could not compile|test failed)"), tier=3),
    Rule("timed out", _re(r"(?i)\btimed out\b|^Terminated$|^Killed$"), tier=3),
)
"""Per tool, the lines that say what is wrong; `tier` orders them (1 first)."""

_MAKE_LINES = _re(r"^g?make(?:\[\d+\])?: (?:\*\*\*|Leaving directory|Entering directory)")
RUNNER_LINES: dict[str, re.Pattern[str]] = {
    "make": _MAKE_LINES,
    "gmake": _MAKE_LINES,
    "just": _re(r"^error: Recipe `[^`]*` failed"),
    "task": _re(r"^task: (?:Failed to run task|\[[^\]]+\] )"),
}
"""Per task runner, its own lines about a recipe that failed: the recipe's output says
what is wrong first."""
_RULE_PROGRAMS = frozenset(p for rule in RULES for p in rule.programs) - FILE_TOOLS

FAMILY_HINTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        _re(r"paths are ignored by one of your \.gitignore files|is beyond a symbolic link"),
        "git add",
    ),
    (
        _re(
            r"has no upstream branch|\[(?:remote )?rejected\]|failed to push some refs|"
            r"No configured push destination"
        ),
        "git push",
    ),
    (
        _re(r"(?i)pre-commit|nothing (?:added )?to commit|no changes added to commit"),
        "git commit",
    ),
)
"""An output that shows which command of a chain it comes from."""

_ERROR_NAMED = _re(
    r"\b\w*(?:Error|Exception)\b|^\s*(?:E\s+)?error\b|panic|fatal|denied|no such file|"
    r"not found|cannot|unable to",
    re.I,
)
_FAILURE_HINT = _re(r"fail|invalid|refused|abort", re.I)
_ANSI = _re(r"\x1b\[[0-9;?]*[A-Za-z]")
_TAGS = _re(r"</?tool_use_error>")
_MARGIN = _re(r"^[┃│]\s?")


@dataclass(frozen=True, slots=True)
class _Line:
    text: str
    noise: bool


def informative_error(output: str, family: str | None = None) -> str:
    """The informative line or lines of a failed call's output (see the module docstring)."""
    lines = _lines(output)
    program = family_program(family) if family else None
    runner = RUNNER_LINES.get(program or "")
    if runner is not None:
        recipe = [_Line(x.text, x.noise or bool(runner.search(x.text))) for x in lines]
        chosen = _by_rules(recipe, {program or "", *_recipe_programs(recipe)})
        if chosen:
            return "\n".join(chosen)
        named = _named_error(recipe)
        if named:
            return named
    chosen = _by_rules(lines, {program} if program else set())
    if chosen:
        return "\n".join(chosen)
    return _fallback(lines)


def _recipe_programs(lines: list[_Line]) -> set[str]:
    """The programs of the recipe lines a task runner echoed (`python3 -m pytest -q` →
    `pytest`) that some rule is for."""
    found: set[str] = set()
    for line in lines:
        if line.noise:
            continue
        family = shell_family(line.text.strip())
        program = family_program(family) if family else ""
        if program in _RULE_PROGRAMS:
            found.add(program)
    return found


def failing_family(chain: list[str], output: str) -> str | None:
    """Which family of a chain an output comes from (the last one unless a hint says
    another); None for an empty chain."""
    if not chain:
        return None
    if len(chain) > 1:
        for pattern, family in FAMILY_HINTS:
            if family in chain and pattern.search(output):
                return family
    return chain[-1]


def _lines(output: str) -> list[_Line]:
    text = _TAGS.sub("", _ANSI.sub("", output))
    read: list[_Line] = []
    for raw in text.splitlines():
        pieces = raw.split("\\n") if raw.count("\\n") >= 2 else [raw]
        for piece in pieces:
            line = _MARGIN.sub("", piece.rstrip())
            if len(line) > MAX_LINE_CHARS:
                line = line[: MAX_LINE_CHARS - 1] + "…"
            noise = not line.strip() or any(p.search(line) for p in NOISE)
            read.append(_Line(line, noise))
    return read


def _by_rules(lines: list[_Line], programs: set[str]) -> list[str]:
    rules = [r for r in RULES if not r.programs or not r.programs.isdisjoint(programs)]
    for tier in sorted({rule.tier for rule in rules}):
        chosen: dict[str, None] = {}
        for index, line in enumerate(lines):
            if line.noise:
                continue
            for rule in (r for r in rules if r.tier == tier):
                if not rule.line.search(line.text):
                    continue
                if rule.programs == FILE_TOOLS and index != _first_text(lines):
                    continue
                for piece in _taken(lines, index, rule):
                    chosen.setdefault(piece, None)
                break
            if len(chosen) >= MAX_LINES:
                break
        if chosen:
            return list(chosen)[:MAX_LINES]
    return []


def _first_text(lines: list[_Line]) -> int:
    return next((i for i, line in enumerate(lines) if line.text.strip()), -1)


def _taken(lines: list[_Line], index: int, rule: Rule) -> list[str]:
    taken = [lines[index].text.strip()]
    if rule.joins:
        joined = [taken[0]]
        for line in lines[index + 1 : index + 1 + rule.joins]:
            if line.noise:
                break
            joined.append(line.text.strip())
        taken = [" ".join(joined)]
    if rule.then is not None:
        for line in lines[index + 1 : index + 1 + rule.within]:
            if rule.then.search(line.text):
                taken.append(line.text.strip())
                break
    return taken


def _named_error(lines: list[_Line]) -> str:
    """The last line that is not noise and names an error, else the last that hints at a
    failure; `""` when none does."""
    kept = [line.text.strip() for line in lines if not line.noise]
    for pattern in (_ERROR_NAMED, _FAILURE_HINT):
        found = [line for line in kept if pattern.search(line)]
        if found:
            return found[-1]
    return ""


def _fallback(lines: list[_Line]) -> str:
    named = _named_error(lines)
    if named:
        return named
    kept = [line.text.strip() for line in lines if not line.noise]
    if kept:
        return kept[-1]
    every = [line.text.strip() for line in lines if line.text.strip()]
    return every[-1] if every else ""
