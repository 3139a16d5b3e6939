"""Command families (SPEC §3 "Tool failures", §8 `commands`): what a call ran, without its
arguments. One rule for the importers (a failure's `family`) and for recall (a shell
call matching a `commands` association).

A **shell command line** is read with the shell tokenizer (shell.py) into pipelines
joined by `&&`, `||`, `;`, `&` or newlines. For each simple command:

1. wrappers are stripped, as often as they nest: `VAR=value` assignments, `env`
   (options and assignments), `sudo`, `nice`, `nohup`, `time`, `command`, `exec`,
   `stdbuf`, `xargs`, `timeout` (options and its duration), `npx` / `bunx` / `pnpx`,
   `npm exec` / `pnpm exec` / `pnpm dlx` / `yarn dlx`, `uv run` / `uvx`, `poetry run`,
   `pipenv run`, `pdm run`, `hatch run`, `bundle exec`, `mise exec`, and `python -m X`
   (the module is the program); `bash -c '…'` (and `sh`, `zsh`, `-lc`, …) is read as
   the command line it quotes;
2. the program is the first word (a path into a `bin` folder or `node_modules/.bin`
   by its name; any other path as written, `./` dropped, an absolute one by its name);
3. the family is the program and its subcommand: `git commit`, `mix test`,
   `cargo test`, `make test` (options before the subcommand skipped, with the values
   of the options that take one: `git -C dir`, `make -C dir`, `npm --prefix dir`);
   a script runner's script stays: `npm run build`, `yarn run lint`, `uv pip install`,
   `docker compose up`, `gh pr create`; an interpreter running a file keeps the file:
   `node assets/build.js`, `python3 scripts/seed.py` (inline code, `-c`/`-e`, names
   only the interpreter); programs without subcommands are alone: `pytest`, `tsc`,
   `gcc`, `ls`.

The command a line stands for is the last one of its chain that is not bookkeeping
(`cd`, `export`, `source`, `echo`, `true`, `sleep`, `mkdir`, …; a chain of bookkeeping
only stands for its first command), and within a pipeline
the first that is not an output filter (`head`, `tail`, `grep`, `tee`, `sort`, …):
`cd web && npm test 2>&1 | tail -20` is `npm test`; `git add -A && git commit -m …` is
`git commit` (`chain_families` lists every candidate, for callers that know better which
one failed). A **file tool** is its name and its root-relative path: `Edit lib/app.ex`.

Standard library only and no `re`: recall's hook path imports this per tool call.
"""

from __future__ import annotations

import os

from active_memory.shell import CONTROL, REDIRECTIONS, Word, tokenize

MAX_COMMAND_CHARS = 64 * 1024
"""Only this much of a command line is read (a heredoc-sized commit message is data)."""

_CHAIN = frozenset({"&&", "||", ";", "&", "\n", ";;", "(", ")"})
_PIPE = frozenset({"|", "|&"})

BOOKKEEPING = frozenset(
    {
        "cd", "pushd", "popd", "export", "unset", "set", "source", ".", "echo", "printf",
        "true", "false", ":", "sleep", "mkdir", "clear", "alias", "wait", "trap", "local",
        "read", "exit", "shopt", "ulimit", "umask", "date", "pwd", "which", "type",
    }
)  # fmt: skip
"""Commands a chain runs around the work: never the command a line stands for."""

FILTERS = frozenset(
    {
        "head", "tail", "grep", "egrep", "fgrep", "rg", "cat", "tee", "sort", "uniq", "wc",
        "less", "more", "cut", "tr", "sed", "awk", "column", "jq", "yq", "fold", "nl",
        "strings", "tac", "ts",
    }
)  # fmt: skip
"""Programs a pipeline feeds output through: the work is the command before them."""

_SIMPLE_WRAPPERS = frozenset({"sudo", "nice", "nohup", "time", "command", "exec", "stdbuf"})
_VALUE_OPTIONS: dict[str, frozenset[str]] = {
    "sudo": frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"}),
    "nice": frozenset({"-n"}),
    "env": frozenset({"-u", "-C", "-S", "--unset", "--chdir"}),
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
    "xargs": frozenset({"-n", "-P", "-I", "-L", "-d", "-E", "-s", "-a"}),
    "npx": frozenset({"-p", "--package", "-c", "--call"}),
    "uvx": frozenset({"--from", "--with", "--python", "-p"}),
    "uv": frozenset(
        {
            "--with",
            "--project",
            "--directory",
            "--python",
            "-p",
            "--package",
            "--group",
            "--extra",
            "--env-file",
            "--index",
            "--index-url",
        }
    ),
    "git": frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path"}),
    "make": frozenset({"-C", "-f", "--file", "--directory", "-j", "--jobs", "-I", "-o", "-W"}),
    "npm": frozenset({"--prefix", "-w", "--workspace", "-C"}),
    "pnpm": frozenset({"--prefix", "-C", "--dir", "--filter", "-F", "-w"}),
    "yarn": frozenset({"--cwd"}),
    "bun": frozenset({"--cwd"}),
    "cargo": frozenset({"-C", "--manifest-path", "--config", "-Z"}),
    "go": frozenset({"-C"}),
    "docker": frozenset({"-H", "--host", "--context", "-c", "--config", "-l", "--log-level"}),
    "mise": frozenset({"-C", "--cd", "-E", "--env"}),
    "poetry": frozenset({"-C", "--directory", "-P", "--project"}),
}
"""Options whose value is the next word (`git -C dir status`)."""

_RUNNERS: dict[str, frozenset[str]] = {
    # program → subcommands that run what follows them: `uv run pytest` is `pytest`.
    "uv": frozenset({"run"}),
    "poetry": frozenset({"run"}),
    "pipenv": frozenset({"run"}),
    "pdm": frozenset({"run"}),
    "hatch": frozenset({"run"}),
    "rye": frozenset({"run"}),
    "pixi": frozenset({"run"}),
    "bundle": frozenset({"exec"}),
    "npm": frozenset({"exec", "x"}),
    "pnpm": frozenset({"exec", "dlx"}),
    "yarn": frozenset({"dlx", "exec"}),
    "bun": frozenset({"x"}),
    "mise": frozenset({"exec", "x"}),
}
_PACKAGE_RUNNERS = frozenset({"npx", "bunx", "pnpx", "uvx"})

SUBCOMMAND_PROGRAMS = frozenset(
    {
        "git", "mix", "npm", "yarn", "pnpm", "bun", "cargo", "go", "uv", "pip", "pip3",
        "poetry", "docker", "podman", "kubectl", "gh", "make", "rake", "bundle", "rails",
        "dotnet", "terraform", "helm", "brew", "apt", "apt-get", "vitest", "deno",
        "composer", "gradle", "gradlew", "mvn", "systemctl", "pre-commit", "ruff",
        "conda", "pdm", "hatch", "nix", "just", "rustup", "gcloud", "aws", "az", "fly",
        "heroku", "bd", "supabase", "prisma", "nx", "turbo", "lerna", "tox", "nox",
        "alembic", "django-admin", "flask", "cmake", "ctest", "swift", "zig", "dart",
        "flutter", "elixir", "iex", "rebar3", "stack", "cabal", "opam", "dune", "sbt",
        "lein", "clj", "mise", "asdf", "jj", "hg", "svn", "wrangler", "vercel", "netlify",
        "firebase", "pulumi", "ansible-galaxy", "ansible-playbook", "docker-compose",
    }
)  # fmt: skip
"""Programs whose first word after the options is a subcommand (`git commit`)."""

_NESTED: dict[str, frozenset[str] | None] = {
    # program → subcommands that name one more word (None: every subcommand does).
    "npm": frozenset({"run", "run-script"}),
    "yarn": frozenset({"run"}),
    "pnpm": frozenset({"run"}),
    "bun": frozenset({"run"}),
    "deno": frozenset({"task"}),
    "uv": frozenset({"pip", "tool", "python"}),
    "docker": frozenset({"compose", "container", "image", "volume", "network", "buildx"}),
    "podman": frozenset({"compose", "container", "image"}),
    "go": frozenset({"mod", "tool", "work"}),
    "gh": None,
    "git": frozenset({"stash", "remote", "submodule", "worktree", "lfs"}),
    "cargo": frozenset({"llvm-cov"}),
    "mise": frozenset({"run"}),
}
_ALIASES: dict[str, dict[str, str]] = {
    "npm": {"i": "install", "in": "install", "add": "install", "t": "test", "run-script": "run"},
    "pnpm": {"i": "install", "t": "test"},
}

INTERPRETERS = frozenset(
    {
        "python", "python3", "python2", "py", "node", "nodejs", "ruby", "perl", "php",
        "bash", "sh", "zsh", "dash", "ksh", "fish", "tsx", "ts-node", "elixir", "Rscript",
        "lua", "deno", "bun", "pwsh", "powershell",
    }
)  # fmt: skip
"""Programs that run a script file: the family keeps the file (`node assets/build.js`)."""

SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "fish"})

SHELL_TOOLS = frozenset(
    {
        "Bash", "bash", "shell", "shell_command", "exec_command", "local_shell",
        "run_shell_command", "container.exec", "execute", "terminal",
    }
)  # fmt: skip
"""Tools whose argument is a command line (Claude Code, Codex, Pi, Gemini CLI, Copilot CLI)."""

FILE_TOOLS = frozenset(
    {
        "Read", "Edit", "MultiEdit", "Write", "NotebookEdit", "NotebookRead", "LS", "Glob",
        "Grep", "read", "edit", "write", "view", "create", "str_replace", "apply_patch",
        "read_file", "read_many_files", "write_file", "replace", "list_directory", "list_dir",
        "glob", "grep", "grep_search", "search_file_content", "grep_files", "view_image",
    }
)  # fmt: skip
"""Tools that act on a file by path: their family is the tool and the path."""

READ_ONLY_TOOLS = frozenset(
    {
        "Read", "NotebookRead", "LS", "Glob", "Grep", "read", "view", "read_file",
        "read_many_files", "list_directory", "list_dir", "glob", "grep", "grep_search",
        "search_file_content", "grep_files", "view_image",
    }
)  # fmt: skip
"""File tools that only look: a success of one never resolves a failure."""
_INLINE_CODE = frozenset({"-c", "-e", "--eval", "-lc", "-ic", "-cl", "--command", "-Command"})
_BIN_FOLDERS = ("/bin/", "/sbin/", "node_modules/.bin/", "/.venv/bin/", ".venv/bin/")
_SCRIPT_SUFFIXES = (
    ".py", ".js", ".mjs", ".cjs", ".ts", ".mts", ".rb", ".pl", ".php", ".sh", ".bash",
    ".exs", ".ex", ".lua", ".R", ".ps1", ".zsh",
)  # fmt: skip
_MAX_DEPTH = 4


class Invocation:
    """One simple command, read: its family, its program and the words after the family.

    A plain slotted class, not a dataclass: recall's hook path imports this module and
    must not load `dataclasses`."""

    __slots__ = ("arguments", "family", "program")

    def __init__(self, family: str, program: str, arguments: tuple[str, ...]) -> None:
        self.family = family
        self.program = program
        self.arguments = arguments

    def __repr__(self) -> str:
        return f"Invocation({self.family!r}, {self.program!r}, {self.arguments!r})"

    @property
    def targets(self) -> tuple[str, ...]:
        """The arguments that are not options (what a test run or a build was pointed at)."""
        return tuple(word for word in self.arguments if not word.startswith("-"))


def shell_family(command: str) -> str | None:
    """The family of a shell command line (see the module docstring); None when empty."""
    invocation = main_invocation(command)
    return invocation.family if invocation is not None else None


def main_invocation(command: str) -> Invocation | None:
    """The command a line stands for: the last of its chain that is not bookkeeping."""
    chain = invocations(command)
    if not chain:
        return None
    working = [item for item in chain if item.program not in BOOKKEEPING]
    # Only bookkeeping (`sleep 8 && echo done`, `cd missing`): the first is what ran longest
    # or failed first.
    return working[-1] if working else chain[0]


def chain_families(command: str) -> list[str]:
    """The family of every command of the line's chain that is not bookkeeping, in order
    (duplicates kept once)."""
    found: dict[str, None] = {}
    for item in invocations(command):
        if item.program not in BOOKKEEPING:
            found.setdefault(item.family, None)
    return list(found)


def invocations(command: str, depth: int = 0) -> list[Invocation]:
    """One `Invocation` per pipeline of the line's chain (the pipeline's working command)."""
    result: list[Invocation] = []
    pipelines = _pipelines(command[:MAX_COMMAND_CHARS])
    if len(command) > MAX_COMMAND_CHARS and len(pipelines) > 1:
        pipelines.pop()  # cut mid-command: its last words are not what was run
    for pipeline in pipelines:
        read = [item for words in pipeline for item in _read(words, depth)]
        if not read:
            continue
        # `bash -c 'a && b'` inside a pipeline reads as several: keep the pipeline's choice
        # simple, the first that is not a filter or bookkeeping.
        chosen = next(
            (x for x in read if x.program not in FILTERS and x.program not in BOOKKEEPING),
            read[0],
        )
        if len(pipeline) == 1:
            result.extend(read)  # a quoted chain (`bash -c`) keeps all its commands
        else:
            result.append(chosen)
    return result


def argv_family(argv: list[str]) -> str | None:
    """The family of a command given as an argument vector (Codex `["bash", "-lc", …]`)."""
    read = _read(list(argv), 0)
    working = [item for item in read if item.program not in BOOKKEEPING]
    chosen = working[-1] if working else (read[0] if read else None)
    return chosen.family if chosen is not None else None


def argv_families(argv: list[str]) -> list[str]:
    """`chain_families` of a command given as an argument vector (`["bash", "-lc", …]`)."""
    found: dict[str, None] = {}
    for item in _read(list(argv), 0):
        if item.program not in BOOKKEEPING:
            found.setdefault(item.family, None)
    return list(found)


def file_family(tool: str, path: str | None) -> str:
    """A file tool's family: its name and the root-relative path (`Edit lib/app.ex`)."""
    return f"{tool} {path}" if path else tool


def family_program(family: str) -> str:
    """The first word of a family: the program (or the file tool)."""
    return family.split(" ", 1)[0]


# --- reading ----------------------------------------------------------------------


def _pipelines(command: str) -> list[list[list[str]]]:
    """Chain → pipelines → simple commands (each a list of words, redirections removed)."""
    pipelines: list[list[list[str]]] = []
    pipeline: list[list[str]] = []
    words: list[str] = []
    tokens = tokenize(command)
    position = 0
    while position < len(tokens):
        token = tokens[position]
        operator = not isinstance(token, Word)
        if operator and (token in REDIRECTIONS or token == "<<<"):
            position += 2  # the operator and its file
            continue
        if operator and (token in _PIPE or token in _CHAIN or token in CONTROL):
            if words:
                pipeline.append(words)
            words = []
            if token not in _PIPE and pipeline:
                pipelines.append(pipeline)
                pipeline = []
        elif token.isdigit() and _is_redirection(tokens, position + 1):
            pass  # the descriptor of `2>&1`
        else:
            words.append(str(token))
        position += 1
    if words:
        pipeline.append(words)
    if pipeline:
        pipelines.append(pipeline)
    return pipelines


def _is_redirection(tokens: list[str], position: int) -> bool:
    if position >= len(tokens):
        return False
    token = tokens[position]
    return not isinstance(token, Word) and (token in REDIRECTIONS or token == "<<<")


def _read(words: list[str], depth: int) -> list[Invocation]:
    """A simple command read into one invocation (or, for `bash -c`, the line it quotes)."""
    words = unwrapped(words)
    if not words:
        return []
    program = _program_name(words[0])
    args = words[1:]
    if program in SHELLS and depth < _MAX_DEPTH:
        for position, arg in enumerate(args[:-1]):
            if arg.startswith("-") and not arg.startswith("--") and "c" in arg:
                return invocations(args[position + 1], depth + 1)
    if program in INTERPRETERS:
        return [_interpreted(program, args)]
    if program in SUBCOMMAND_PROGRAMS:
        return [_with_subcommand(program, args)]
    return [Invocation(program, program, tuple(args))]


def unwrapped(words: list[str]) -> list[str]:
    """`words` with every leading wrapper stripped (step 1 of the module docstring, but
    `bash -c`): `timeout 60 pytest x.py` → `pytest x.py`."""
    changed = True
    while words and changed:
        changed = False
        while words and _is_assignment(words[0]):
            words = words[1:]
            changed = True
        if not words:
            break
        name = _program_name(words[0])
        rest = words[1:]
        if name in _SIMPLE_WRAPPERS or name == "env" or name == "xargs":
            words = _skip_options(name, rest, assignments=name == "env")
            changed = True
        elif name == "timeout":
            rest = _skip_options(name, rest)
            words = rest[1:] if rest else rest  # the duration
            changed = True
        elif name in _PACKAGE_RUNNERS:
            words = _skip_options(name, rest)
            changed = True
        elif name in _RUNNERS and rest:
            options = _skip_options(name, rest)
            if options and options[0] in _RUNNERS[name]:
                words = _skip_options(name, options[1:])
                if words and words[0] == "--":
                    words = words[1:]
                changed = True
        elif _is_python(name) and len(rest) >= 2 and rest[0] == "-m":
            words = rest[1:]
            changed = True
    return words


def _skip_options(program: str, words: list[str], *, assignments: bool = False) -> list[str]:
    values = _VALUE_OPTIONS.get(program, frozenset())
    position = 0
    while position < len(words):
        word = words[position]
        if word == "--":
            return words[position + 1 :]
        if assignments and _is_assignment(word):
            position += 1
        elif word.startswith("-") and len(word) > 1:
            position += 2 if word in values else 1
        else:
            break
    return words[position:]


def _with_subcommand(program: str, args: list[str]) -> Invocation:
    rest = _skip_options(program, args)
    if program == "cargo" and rest and rest[0].startswith("+"):
        rest = _skip_options(program, rest[1:])  # `cargo +nightly test`
    if not rest or not _is_subcommand(rest[0]):
        return Invocation(program, program, tuple(rest))
    subcommand = _ALIASES.get(program, {}).get(rest[0], rest[0])
    words = [program, subcommand]
    rest = rest[1:]
    nested = _NESTED.get(program, frozenset())
    if program in _NESTED and (nested is None or subcommand in nested):
        after = _skip_options(program, rest)
        if after and _is_script_name(after[0]):
            words.append(after[0])
            rest = after[1:]
    return Invocation(" ".join(words), program, tuple(rest))


def _interpreted(program: str, args: list[str]) -> Invocation:
    position = 0
    while position < len(args):
        arg = args[position]
        if arg in _INLINE_CODE or (arg.startswith("-") and arg.endswith("c") and len(arg) <= 4):
            return Invocation(program, program, tuple(args[position + 1 :]))
        if arg.startswith("-"):
            position += 1
            continue
        script = _script_path(arg)
        if program in ("deno", "bun") and arg in ("run", "test", "x", "task", "install"):
            return _with_subcommand(program, args)
        return Invocation(f"{program} {script}", program, tuple(args[position + 1 :]))
    return Invocation(program, program, ())


def _program_name(word: str) -> str:
    if "/" not in word and "\\" not in word:
        return word
    normal = word.replace("\\", "/")
    base = os.path.basename(normal)
    if normal.startswith("/") or any(folder in normal for folder in _BIN_FOLDERS):
        return base
    return normal[2:] if normal.startswith("./") else normal


def _script_path(word: str) -> str:
    normal = word.replace("\\", "/")
    if normal.startswith("/"):
        return os.path.basename(normal)
    return normal[2:] if normal.startswith("./") else normal


def _is_python(name: str) -> bool:
    if name in ("python", "python3", "py", "python2"):
        return True
    return name.startswith("python3.") and name[len("python3.") :].isdigit()


def _is_assignment(word: str) -> bool:
    name, equals, _ = word.partition("=")
    return (
        bool(equals)
        and bool(name)
        and (name[0].isalpha() or name[0] == "_")
        and all(ch.isalnum() or ch == "_" for ch in name)
    )


def _is_subcommand(word: str) -> bool:
    """A bare lowercase word (`test`, `deps.get`, `phx.server`, `run-script`), not a path,
    a file, a number or an option."""
    if not word or not (word[0].islower() and word[0].isascii()):
        return False
    if word.endswith(_SCRIPT_SUFFIXES) or "/" in word:
        return False
    return all((ch.isascii() and (ch.isalnum() or ch in "._:-")) for ch in word)


def _is_script_name(word: str) -> bool:
    """A script or group name after `npm run`, `docker compose`, … (`build:prod`, `up`)."""
    if not word or word.startswith("-") or "/" in word:
        return False
    return all((ch.isascii() and (ch.isalnum() or ch in "._:-@")) for ch in word)
