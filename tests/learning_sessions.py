"""Sequences of sessions of the real `claude` and `codex` binaries on small repositories
built here, where the same mistake recurs session after session: the learning bench's
recorded sequences (bench/learning_bench.py, tests/fixtures/learning/).

- `calc-env` (Claude Code): a Python project whose `make test` refuses to run unless
  `CALC_ENV=test` is set (tests/conftest.py);
- `web-build` (Codex): a Node project whose `npm run build` exists only in `web/`, so it
  fails from the root;
- `handbook-push` (Claude Code): a docs repository where every session pushes a new topic
  branch, and `git push` needs `-u origin <branch>` the first time.

The scripted model server (fakes/model_server.py) plays the model on loopback; HOME is a
fresh folder; no Active Memory hook is installed, so these are the sessions as they went
without lessons. The scripts repeat the mistake whatever happened before, which is what
the bench needs: it replays each session's calls to see when a card would have arrived.
Each session starts where the previous one ended (its commits stay). Run:

    ACTIVE_MEMORY_TEST_CLAUDE=… ACTIVE_MEMORY_TEST_CODEX=… python tests/learning_sessions.py [NAME…]

which records each sequence in a temporary folder and writes, per sequence, into
tests/fixtures/learning/<name>/: the cleaned logs (temporary folders renamed to
`/home/dev/<name>` and `/home/dev`, as tests/failure_sessions.py cleans them) in
`transcripts.tar.xz`,
`repo.bundle` (the repository with every session's commits) and `sequence.json`.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import failure_sessions
from fakes import harness, model_server
from fakes.model_wire import Turn, text, tool

FIXTURES = Path(__file__).parent / "fixtures" / "learning"
GIT_IDENTITY = ("-c", "user.email=dev@example.com", "-c", "user.name=dev")


@dataclass(frozen=True)
class Session:
    """One session: what the person typed and what the scripted model then does."""

    prompt: str
    script: Callable[[Path], list[Turn]]


@dataclass(frozen=True)
class Sequence:
    """A repository, its remote, and the sessions run on it one after the other."""

    harness: str
    remote: str
    files: dict[str, str]
    sessions: list[Session]
    bare_remote: bool = False
    """Give `origin` a local bare repository as its push URL, so `git push` can work."""


# --- calc-env: `make test` needs CALC_ENV=test ------------------------------------------

CALC_FILES = {
    "README.md": "# calc\n\nA small calculator that keeps a ledger of its results.\n",
    ".gitignore": "__pycache__/\n*.pyc\n",
    "pyproject.toml": (
        '[project]\nname = "calc"\nversion = "0.1.0"\nrequires-python = ">=3.11"\n\n'
        '[tool.pytest.ini_options]\npythonpath = ["src"]\ntestpaths = ["tests"]\n'
    ),
    "Makefile": (
        "# The test suite (see tests/conftest.py for what it needs).\n"
        "PYTHON ?= python3\n\n"
        "test:\n\t$(PYTHON) -m pytest -q -p no:cacheprovider\n\n"
        ".PHONY: test\n"
    ),
    "src/calc/__init__.py": '"""A small calculator with a ledger of results."""\n',
    "src/calc/ops.py": (
        '"""The operations."""\n\n\n'
        "def add(a: float, b: float) -> float:\n    return a + b\n\n\n"
        "def sub(a: float, b: float) -> float:\n    return a - b\n"
    ),
    "src/calc/ledger.py": (
        '"""Every result is appended to a ledger file, one JSON line each."""\n\n'
        "import json\nimport os\nfrom pathlib import Path\n\n\n"
        "def ledger_path() -> Path:\n"
        '    if os.environ.get("CALC_ENV") == "test":\n'
        '        return Path(os.environ.get("TMPDIR", "/tmp")) / "calc-test-ledger.jsonl"\n'
        '    return Path.home() / ".calc" / "ledger.jsonl"\n\n\n'
        "def record(op: str, result: float) -> None:\n"
        "    path = ledger_path()\n"
        "    path.parent.mkdir(parents=True, exist_ok=True)\n"
        '    with path.open("a", encoding="utf-8") as handle:\n'
        '        handle.write(json.dumps({"op": op, "result": result}) + "\\n")\n'
    ),
    "tests/conftest.py": (
        '"""The suite writes ledger entries: it must never touch the real ledger."""\n\n'
        "import os\n\nimport pytest\n\n\n"
        "def pytest_configure(config: pytest.Config) -> None:\n"
        '    if os.environ.get("CALC_ENV") != "test":\n'
        "        raise pytest.UsageError(\n"
        "            \"CALC_ENV is not 'test': the ledger tests would write to ~/.calc\"\n"
        "        )\n"
    ),
    "tests/test_ops.py": (
        "from calc.ops import add, sub\n\n\n"
        "def test_add() -> None:\n    assert add(2, 3) == 5\n\n\n"
        "def test_sub() -> None:\n    assert sub(2, 3) == -1\n"
    ),
    "tests/test_ledger.py": (
        "from calc import ledger\n\n\n"
        "def test_record_appends_a_line() -> None:\n"
        '    ledger.record("add", 5)\n'
        "    assert ledger.ledger_path().read_text().splitlines()[-1] == "
        '\'{"op": "add", "result": 5}\'\n'
    ),
}


def _claude_bash(command: str) -> Turn:
    return tool("Bash", {"command": command, "description": command[:40]})


def _read(work: Path, path: str) -> Turn:
    return tool("Read", {"file_path": str(work / path)})


def _edit(work: Path, path: str, old: str, new: str) -> Turn:
    return tool("Edit", {"file_path": str(work / path), "old_string": old, "new_string": new})


def _write(work: Path, path: str, content: str) -> Turn:
    return tool("Write", {"file_path": str(work / path), "content": content})


SUB = "def sub(a: float, b: float) -> float:\n    return a - b\n"
TEST_SUB = "def test_sub() -> None:\n    assert sub(2, 3) == -1\n"


def calc_1(work: Path) -> list[Turn]:
    mul = SUB + "\n\ndef mul(a: float, b: float) -> float:\n    return a * b\n"
    test_mul = TEST_SUB + "\n\ndef test_mul() -> None:\n    assert mul(2, 3) == 6\n"
    return [
        _read(work, "src/calc/ops.py"),
        _edit(work, "src/calc/ops.py", SUB, mul),
        _read(work, "tests/test_ops.py"),
        _edit(work, "tests/test_ops.py", TEST_SUB, test_mul),
        _edit(work, "tests/test_ops.py", "import add, sub", "import add, mul, sub"),
        _claude_bash("make test"),  # refused: CALC_ENV is not set
        _claude_bash("make test PYTHON=python3"),  # the same refusal
        _read(work, "tests/conftest.py"),
        _claude_bash("CALC_ENV=test make test"),
        _claude_bash("git add -A && git commit -q -m 'Add mul'"),
        text("Added `mul` with a test; the suite passes when run as `CALC_ENV=test make test`."),
    ]


def calc_2(work: Path) -> list[Turn]:
    old = "def mul(a: float, b: float) -> float:\n    return a * b\n"
    div = (
        old + "\n\ndef div(a: float, b: float) -> float:\n"
        "    if b == 0:\n"
        '        raise ZeroDivisionError(f"cannot divide {a} by zero")\n'
        "    return a / b\n"
    )
    test_old = "def test_mul() -> None:\n    assert mul(2, 3) == 6\n"
    test_div = (
        test_old + "\n\ndef test_div_by_zero_says_what() -> None:\n"
        "    import pytest\n\n"
        '    with pytest.raises(ZeroDivisionError, match="cannot divide 1 by zero"):\n'
        "        div(1, 0)\n"
    )
    return [
        _read(work, "src/calc/ops.py"),
        _edit(work, "src/calc/ops.py", old, div),
        _read(work, "tests/test_ops.py"),
        _edit(work, "tests/test_ops.py", test_old, test_div),
        _edit(work, "tests/test_ops.py", "import add, mul, sub", "import add, div, mul, sub"),
        _claude_bash("make test"),  # refused again
        _claude_bash("CALC_ENV=test make test"),
        _claude_bash("git add -A && git commit -q -m 'Add div'"),
        text("Added `div`, which raises ZeroDivisionError naming the dividend."),
    ]


def calc_3(work: Path) -> list[Turn]:
    old = "A small calculator that keeps a ledger of its results.\n"
    new = (
        old + "\nEach result is appended as one JSON line to `~/.calc/ledger.jsonl` "
        "(`src/calc/ledger.py`).\n"
    )
    return [
        _read(work, "README.md"),
        _read(work, "src/calc/ledger.py"),
        _edit(work, "README.md", old, new),
        _claude_bash("git add README.md && git commit -q -m 'Document the ledger'"),
        text("README.md now says where the ledger lives."),
    ]


def calc_4(work: Path) -> list[Turn]:
    return [
        _claude_bash("make test"),  # the first thing it does, refused
        _read(work, "tests/conftest.py"),
        _claude_bash("CALC_ENV=test make test"),
        text("The suite passes (run as `CALC_ENV=test make test`)."),
    ]


# --- web-build: `npm run build` works only in web/ --------------------------------------

WEB_FILES = {
    "README.md": "# shop\n\nThe storefront. Its web bundle is built from `web/src`.\n",
    ".gitignore": "web/dist/\nnode_modules/\n",
    "package.json": json.dumps(
        {"name": "shop", "private": True, "scripts": {"lint": "node scripts/lint.mjs"}},
        indent=2,
    )
    + "\n",
    "scripts/lint.mjs": (
        'import { readdirSync, readFileSync } from "node:fs";\n\n'
        "// Refuses console.log in the web sources.\n"
        'const dir = "web/src";\n'
        "let bad = 0;\n"
        "for (const name of readdirSync(dir)) {\n"
        '  if (readFileSync(`${dir}/${name}`, "utf8").includes("console.log")) {\n'
        "    console.error(`${dir}/${name}: console.log`);\n"
        "    bad += 1;\n"
        "  }\n"
        "}\n"
        'console.log(bad ? `lint: ${bad} problem(s)` : "lint: ok");\n'
        "process.exit(bad ? 1 : 0);\n"
    ),
    "web/package.json": json.dumps(
        {
            "name": "shop-web",
            "private": True,
            "type": "module",
            "scripts": {"build": "node build.mjs"},
        },
        indent=2,
    )
    + "\n",
    "web/build.mjs": (
        "// Bundles src/*.js into dist/app.js. The paths are relative to web/.\n"
        'import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";\n\n'
        'const sources = readdirSync("src").filter((n) => n.endsWith(".js")).sort();\n'
        'mkdirSync("dist", { recursive: true });\n'
        'const parts = sources.map((n) => `// ${n}\\n` + readFileSync(`src/${n}`, "utf8"));\n'
        'writeFileSync("dist/app.js", parts.join("\\n"));\n'
        "console.log(`built dist/app.js from ${sources.length} files`);\n"
    ),
    "web/src/cart.js": (
        "export function total(items) {\n"
        "  return items.reduce((sum, item) => sum + item.price * item.quantity, 0);\n"
        "}\n"
    ),
    "web/src/price.js": "export function formatPrice(value) {\n  return `$${value}`;\n}\n",
}


def _exec(command: str) -> Turn:
    return tool("exec_command", {"cmd": command})


def _heredoc(path: str, content: str) -> Turn:
    return _exec(f"cat > {path} <<'EOF'\n{content}EOF")


def web_1(work: Path) -> list[Turn]:
    cart = WEB_FILES["web/src/cart.js"] + (
        "\nexport function discounted(value, percent = 10) {\n"
        "  return value * (1 - percent / 100);\n"
        "}\n"
    )
    return [
        _exec("sed -n 1,40p web/src/cart.js"),
        _heredoc("web/src/cart.js", cart),
        _exec("npm run build"),  # no build script at the root
        _exec("npm install"),
        _exec("npm run build"),  # the same error
        _exec("cat package.json"),
        _exec("ls web"),
        _exec("cd web && npm run build"),
        _exec("git add -A && git commit -q -m 'Add a cart discount helper'"),
        text(
            "Added `discounted()` to web/src/cart.js; the bundle builds with "
            "`cd web && npm run build`."
        ),
    ]


def web_2(work: Path) -> list[Turn]:
    price = "export function formatPrice(value) {\n  return `$${value.toFixed(2)}`;\n}\n"
    return [
        _exec("sed -n 1,40p web/src/price.js"),
        _heredoc("web/src/price.js", price),
        _exec("npm run build"),  # again from the root
        _exec("cd web && npm run build"),
        _exec("git add -A && git commit -q -m 'Prices with two decimals'"),
        text("Prices now show two decimals; rebuilt the bundle."),
    ]


def web_3(work: Path) -> list[Turn]:
    lint = WEB_FILES["scripts/lint.mjs"].replace(
        '.includes("console.log")', ".match(/console\\.log|debugger/)"
    )
    lint = lint.replace("console.log`);", "console.log or debugger`);")
    return [
        _exec("cat scripts/lint.mjs"),
        _heredoc("scripts/lint.mjs", lint),
        _exec("npm run lint"),
        _exec("git add -A && git commit -q -m 'lint: refuse debugger statements'"),
        text("The lint script now refuses `debugger` statements too."),
    ]


def web_4(work: Path) -> list[Turn]:
    return [
        _exec("npm run build"),  # the first call, from the root
        _exec("cd web && npm run build"),
        _exec("wc -c web/dist/app.js"),
        text("The bundle is rebuilt; web/dist/app.js's size is shown above."),
    ]


# --- handbook-push: a new branch has no upstream ------------------------------------------

HANDBOOK_FILES = {
    "README.md": "# Handbook\n\nHow we work. Changes go through topic branches.\n",
    "CONTRIBUTING.md": (
        "# Contributing\n\n"
        "Work on a topic branch, commit, and push the branch to `origin`; a reviewer\n"
        "merges it. Never push to `main`.\n"
    ),
    "docs/onboarding.md": "# Onboarding\n\n## First day\n\nGet an account and read the README.\n",
    "docs/releases.md": "# Releases\n\nWe release on Thursdays.\n",
}


def handbook_1(work: Path) -> list[Turn]:
    old = "Get an account and read the README.\n"
    new = old + "\n## Code review\n\nEvery change is reviewed by one person before it is merged.\n"
    return [
        _claude_bash("git checkout -b docs-review"),
        _read(work, "docs/onboarding.md"),
        _edit(work, "docs/onboarding.md", old, new),
        _claude_bash("git add docs/onboarding.md && git commit -q -m 'docs: code review'"),
        _claude_bash("git push"),  # no upstream
        _claude_bash("git push origin"),  # the same refusal
        _claude_bash("git push -u origin docs-review"),
        text("Pushed docs-review with the code review section."),
    ]


def handbook_2(work: Path) -> list[Turn]:
    old = "We release on Thursdays.\n"
    new = old + "\n## Checklist\n\n1. Tag the release.\n2. Write the notes.\n3. Announce it.\n"
    return [
        _claude_bash("git checkout -b docs-release-checklist"),
        _read(work, "docs/releases.md"),
        _edit(work, "docs/releases.md", old, new),
        _claude_bash("git add docs/releases.md && git commit -q -m 'docs: release checklist'"),
        _claude_bash("git push"),  # no upstream, again
        _claude_bash("git push -u origin docs-release-checklist"),
        text("Pushed docs-release-checklist."),
    ]


def handbook_3(work: Path) -> list[Turn]:
    old = "How we work. Changes go through topic branches.\n"
    new = old + "\nSee CONTRIBUTING.md for how to propose a change.\n"
    return [
        _claude_bash("git checkout -b readme-contributing"),
        _read(work, "README.md"),
        _edit(work, "README.md", old, new),
        _claude_bash("git add README.md && git commit -q -m 'README: point to CONTRIBUTING'"),
        _claude_bash("git push -u origin readme-contributing"),  # right the first time
        text("Pushed readme-contributing."),
    ]


def handbook_4(work: Path) -> list[Turn]:
    glossary = "# Glossary\n\n- **Topic branch**: a branch for one change, merged by review.\n"
    return [
        _claude_bash("git switch -c docs-glossary"),
        _write(work, "docs/glossary.md", glossary),
        _claude_bash("git add docs/glossary.md && git commit -q -m 'docs: glossary'"),
        _claude_bash("git push"),  # no upstream
        _claude_bash("git push -u origin docs-glossary"),
        text("Pushed docs-glossary with a first glossary."),
    ]


SEQUENCES: dict[str, Sequence] = {
    "calc-env": Sequence(
        "claude",
        "https://example.com/acme/calc.git",
        CALC_FILES,
        [
            Session("Add a `mul` operation to calc, with a test.", calc_1),
            Session(
                "Add `div`; dividing by zero must raise ZeroDivisionError with a clear message.",
                calc_2,
            ),
            Session("Describe in README.md where the ledger is stored.", calc_3),
            Session("Run the test suite and tell me whether it passes.", calc_4),
        ],
    ),
    "web-build": Sequence(
        "codex",
        "https://example.com/acme/shop.git",
        WEB_FILES,
        [
            Session("Add a 10% discount helper to the cart and rebuild the bundle.", web_1),
            Session("Format prices with two decimals and rebuild.", web_2),
            Session("Make the lint script also reject `debugger` statements.", web_3),
            Session("Rebuild the web bundle and tell me its size.", web_4),
        ],
    ),
    "handbook-push": Sequence(
        "claude",
        "https://example.com/acme/handbook.git",
        HANDBOOK_FILES,
        [
            Session(
                "Add a section on code review to docs/onboarding.md and push it on a topic branch.",
                handbook_1,
            ),
            Session(
                "Document a release checklist in docs/releases.md; push it on a topic branch.",
                handbook_2,
            ),
            Session("Point the README to CONTRIBUTING.md and push it on a branch.", handbook_3),
            Session(
                "Start a glossary in docs/glossary.md and push it on a new branch.", handbook_4
            ),
        ],
        bare_remote=True,
    ),
}


# --- recording ---------------------------------------------------------------------------


def _git(work: Path, *arguments: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(work), *GIT_IDENTITY, *arguments],
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


def workspace(root: Path, sequence: Sequence) -> Path:
    """The repository the sessions work in, with its first commit."""
    work = root / "work"
    for name, content in sequence.files.items():
        path = work / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    _git(work, "init", "-q", "-b", "main")
    _git(work, "config", "user.email", "dev@example.com")
    _git(work, "config", "user.name", "dev")
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "Initial commit")
    _git(work, "remote", "add", "origin", sequence.remote)
    if sequence.bare_remote:
        bare = root / "remote.git"
        subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
        _git(work, "config", "remote.origin.pushurl", str(bare))
    return work


def _environment(
    root: Path, sequence: Sequence, server: model_server.ModelServer
) -> dict[str, str]:
    venv_bin = str(Path(sys.executable).parent)
    if sequence.harness == "claude":
        env = harness.claude_environment(root, server.url, "sk-fake") | {"IS_SANDBOX": "1"}
    else:
        env = harness.isolated_home(root) | {"FAKE_OPENAI_KEY": "sk-fake"}
        harness.codex_config(Path(env["CODEX_HOME"]), server.openai_url)
    # `python3` is this interpreter (it has pytest); the log shows it as `python3`.
    env["PATH"] = f"{venv_bin}:{env['PATH']}"
    return env


def _logs(root: Path, harness_name: str) -> set[Path]:
    if harness_name == "claude":
        return set((root / "home" / ".claude" / "projects").glob("*/*.jsonl"))
    return set((root / "home" / ".codex").glob("sessions/*/*/*/rollout-*.jsonl"))


def run_session(root: Path, work: Path, sequence: Sequence, session: Session) -> Path:
    """Run one session with the real binary; return its new log."""
    binary = harness.require_harness(sequence.harness)
    before = _logs(root, sequence.harness)
    no_tools: Callable[[Any], bool] = lambda received: not received.tool_names()  # noqa: E731
    side = no_tools if sequence.harness == "claude" else None
    with model_server.ModelServer(
        script=session.script(work), default=text("ok"), side=side
    ) as server:
        env = _environment(root, sequence, server)
        if sequence.harness == "claude":
            command = [
                str(binary), "-p", session.prompt, "--permission-mode", "bypassPermissions",
                "--output-format", "json",
            ]  # fmt: skip
        else:
            command = [
                str(binary), "exec", "--skip-git-repo-check",
                "--dangerously-bypass-approvals-and-sandbox", session.prompt,
            ]  # fmt: skip
        subprocess.run(
            command, cwd=work, env=env, capture_output=True, text=True, timeout=600, check=True
        )
    (log,) = _logs(root, sequence.harness) - before
    return log


def record(name: str, out: Path) -> Path:
    """Record the sequence `name` into `out` (replaced); return `out`."""
    sequence = SEQUENCES[name]
    root = Path(tempfile.mkdtemp(prefix=f"learning-{name}-"))
    work = workspace(root, sequence)
    entries: list[dict[str, Any]] = []
    logs: list[tuple[Path, str]] = []
    for session in sequence.sessions:
        start = _git(work, "rev-parse", "HEAD")
        log = run_session(root, work, sequence, session)
        end = _git(work, "rev-parse", "HEAD")
        target = log.name
        logs.append((log, target))
        entries.append(
            {"log": target, "harness": sequence.harness, "cwd": f"/home/dev/{name}",
             "start": start, "end": end, "prompt": session.prompt}
        )  # fmt: skip
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    with tarfile.open(out / "transcripts.tar.xz", "w:xz") as archive:
        for log, target in logs:
            cleaned = failure_sessions.clean(log, root).replace(
                failure_sessions.WORK, f"/home/dev/{name}"
            )
            data = cleaned.encode("utf-8")
            member = tarfile.TarInfo(target)
            member.size, member.mtime, member.mode = len(data), 0, 0o644
            archive.addfile(member, io.BytesIO(data))
    subprocess.run(
        ["git", "-C", str(work), "bundle", "create", str(out / "repo.bundle"), "--all"],
        check=True,
        capture_output=True,
    )
    document = {
        "schema": "active-memory/learning-sequence@1",
        "name": name,
        "description": f"recorded by tests/learning_sessions.py with the real `{sequence.harness}`",
        "repository": {"bundle": "repo.bundle", "remote": sequence.remote},
        "transcripts": "transcripts.tar.xz",
        "sessions": entries,
    }
    (out / "sequence.json").write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    shutil.rmtree(root, ignore_errors=True)
    return out


def main(argv: list[str]) -> None:
    """Record the named sequences (default: all) into tests/fixtures/learning/."""
    for name in argv or list(SEQUENCES):
        print(record(name, FIXTURES / name))


if __name__ == "__main__":
    main(sys.argv[1:])
