"""Which files configure or document a failing command: the tables that let a task show
"the relevant config" of a failure whose calls name no file (gather_failure_context.py).
Candidates only: the caller keeps those that are current files of the checkout.

- `run_folders`: the folders a command ran in (its working folder, and where its `cd`s
  went): `cd web && npm run build` ran in `web`;
- `FOLDER_FILES`: per program, the file in such a folder that defines what it runs
  (`package.json` for npm, `Makefile` for make, `mix.exs`, `Cargo.toml`, …);
- `TEST_FILES`: for a test run (`pytest`, `mix test`, `make test`, `npm test`, …), the
  test runner's set-up in those folders and their `test`/`tests` folders (`conftest.py`,
  `test/test_helper.exs`, `config/test.exs`, `jest.config.js`, …): where a suite refuses
  to start;
- `FAMILY_FILES`: per family, the hooks that may refuse it and the repository's
  instructions to agents and contributors (`git commit`, `git push`);
- `TOOL_FILES`: per tool an error names (`mix credo`, `[FORMAT]`, `eslint`, `ruff`,
  `error TS2322`), its configuration at the root.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable

from active_memory.command_family import family_program
from active_memory.shell import simple_commands

_HOOKS = (
    ".pre-commit-config.yaml",
    "lefthook.yml",
    "lefthook.yaml",
    ".lefthook.yml",
    ".husky/pre-commit",
    ".husky/commit-msg",
    ".husky/pre-push",
    ".githooks/pre-commit",
    ".githooks/commit-msg",
    ".githooks/pre-push",
    ".lintstagedrc",
    ".lintstagedrc.json",
    "lint-staged.config.js",
    "commitlint.config.js",
    ".commitlintrc.json",
    ".claude/settings.json",
)
_INSTRUCTIONS = (
    "CLAUDE.md",
    "AGENTS.md",
    "GEMINI.md",
    ".github/copilot-instructions.md",
    "CONTRIBUTING.md",
)
FAMILY_FILES: dict[str, tuple[str, ...]] = {
    "git commit": (*_HOOKS, *_INSTRUCTIONS),
    "git push": (*_HOOKS, *_INSTRUCTIONS),
}
"""Per family, root-relative files that may refuse it (git's hook managers, a harness's
project settings where an agent's hooks are declared) or say how it is done here."""

FOLDER_FILES: dict[str, tuple[str, ...]] = {
    "npm": ("package.json",),
    "npx": ("package.json",),
    "yarn": ("package.json",),
    "pnpm": ("package.json",),
    "bun": ("package.json",),
    "node": ("package.json",),
    "make": ("Makefile", "GNUmakefile"),
    "just": ("justfile", "Justfile"),
    "task": ("Taskfile.yml",),
    "mix": ("mix.exs",),
    "cargo": ("Cargo.toml",),
    "go": ("go.mod",),
    "pytest": ("pyproject.toml", "pytest.ini", "tox.ini"),
    "tox": ("tox.ini",),
    "uv": ("pyproject.toml",),
    "poetry": ("pyproject.toml",),
    "bundle": ("Gemfile",),
    "rake": ("Rakefile",),
    "gradle": ("build.gradle", "build.gradle.kts"),
    "mvn": ("pom.xml",),
    "composer": ("composer.json",),
    "docker": ("Dockerfile", "docker-compose.yml", "compose.yaml"),
}
"""Per program, the file in the folder it ran in that defines what it runs."""

_TEST_RUNNERS = frozenset({"pytest", "jest", "vitest", "mocha", "rspec", "phpunit", "tox"})
TEST_FILES = (
    "conftest.py",
    "pytest.ini",
    "test_helper.exs",
    "test.exs",
    "jest.config.js",
    "jest.config.ts",
    "vitest.config.js",
    "vitest.config.ts",
    "vitest.config.mjs",
    ".mocharc.json",
    ".mocharc.yml",
    ".rspec",
    "spec_helper.rb",
    "phpunit.xml",
)
"""Names of a test runner's set-up, looked for in the folders a test run ran in, their
`test`, `tests` and `spec` folders, and `config/` (`config/test.exs`)."""
_TEST_FOLDERS = ("", "test", "tests", "spec", "config")

TOOL_FILES: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = (
    (re.compile(r"\bcredo\b|^\[[A-Z]\] ", re.M), (".credo.exs",)),
    (re.compile(r"mix format|\[FORMAT\]|not formatted", re.I), (".formatter.exs",)),
    (re.compile(r"\bdialyzer\b|:pattern_match\b", re.I), (".dialyzer_ignore.exs",)),
    (
        re.compile(r"\beslint\b", re.I),
        ("eslint.config.js", "eslint.config.mjs", ".eslintrc.json", ".eslintrc.js"),
    ),
    (re.compile(r"\bprettier\b", re.I), (".prettierrc", ".prettierrc.json")),
    (re.compile(r"\bruff\b", re.I), ("ruff.toml", ".ruff.toml", "pyproject.toml")),
    (re.compile(r"\bmypy\b", re.I), ("mypy.ini", "pyproject.toml")),
    (re.compile(r"\brubocop\b", re.I), (".rubocop.yml",)),
    (re.compile(r"\bgolangci\b", re.I), (".golangci.yml",)),
    (re.compile(r"\berror TS\d+:", re.I), ("tsconfig.json",)),
    (re.compile(r"\bclippy\b", re.I), ("clippy.toml", "Cargo.toml")),
)
"""An error that names a checker, and the root-relative files that configure it."""


def run_folders(command: str, cwd: str) -> list[str]:
    """The root-relative folders a command line ran in: `cwd` (`""`: the root), then
    each `cd` target of its chain, read from the folder before it (targets leaving the
    checkout, `$VARS` and `~` are skipped)."""
    found = [cwd.strip("/")]
    here = found[0]
    for words in simple_commands(command[:8192]):
        if len(words) < 2 or words[0] not in ("cd", "pushd"):
            continue
        target = next((w for w in words[1:] if not w.startswith("-")), "")
        if not target or target.startswith(("$", "~", "/")):
            continue
        joined = posixpath.normpath(posixpath.join(here, target)) if here else target
        joined = posixpath.normpath(joined)
        if joined == "." or joined == ".." or joined.startswith("../"):
            joined = ""
        here = joined
        found.append(here)
    return list(dict.fromkeys(found))


def is_test_run(family: str) -> bool:
    """A family that runs a test suite: `mix test`, `make test`, `npm test`, `pytest`."""
    words = family.split(" ")
    return words[-1] in ("test", "tests", "spec") or family_program(family) in _TEST_RUNNERS


def command_files(family: str, folders: Iterable[str], errors: Iterable[str]) -> list[str]:
    """The root-relative candidates that configure or document a failing command of
    `family` that ran in `folders`, whose errors were `errors` (see the module
    docstring), in this order: the folders' own files, the test set-up, the family's
    files, the tools' files."""
    folders = list(dict.fromkeys(folders))
    program = family_program(family)
    found: list[str] = []
    for folder in folders:
        found.extend(_in(folder, name) for name in FOLDER_FILES.get(program, ()))
    if is_test_run(family):
        for folder in folders:
            for sub in _TEST_FOLDERS:
                found.extend(_in(_in(folder, sub), name) for name in TEST_FILES)
    found.extend(FAMILY_FILES.get(family, ()))
    text = "\n".join(errors)
    for pattern, files in TOOL_FILES:
        if pattern.search(text):
            found.extend(files)
    return list(dict.fromkeys(found))


def _in(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder and name else (folder or name)
