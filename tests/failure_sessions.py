"""Sessions of the real `claude` and `codex` binaries whose scripted model runs commands
that fail: a git command refused (an ignored path, a hook, a permission rule, no
remote), a failing pytest fixed in a red-green cycle, an npm error, a compiler error, a
command killed by `timeout`.

The scripted model server (fakes/model_server.py) plays the model on loopback; HOME is a
fresh folder. `tests/test_tool_failures_real.py` runs these live; the captures committed
under tests/fixtures/sessions/ (`claude-2.1.332-failures-real/`,
`codex-0.171-failures-real.jsonl`) were made by running this file:

    ACTIVE_MEMORY_TEST_CLAUDE=… ACTIVE_MEMORY_TEST_CODEX=… python tests/failure_sessions.py

which records both sessions in a temporary folder and writes the cleaned logs there
(temporary folders renamed to `/home/dev/demo` and `/home/dev`, Claude Code's prompt
texts and tool schemas removed as for the other `*-real` fixtures).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from fakes import harness, model_server
from fakes.model_wire import Turn, text, tool

PROMPT = "Make the checks pass, then commit and push"
WORK = "/home/dev/demo"
HOME = "/home/dev"

CALC = "def add(a, b):\n    return {}\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n"
BAD_C = "int main(void) {\n  return y;\n}\n"
PACKAGE = '{"name": "demo", "version": "1.0.0", "scripts": {"build": "node build.js"}}\n'
HOOK = (
    "#!/bin/sh\n"
    "# A PreToolUse hook that refuses every git commit, as a project's pre-commit check.\n"
    'if grep -q "git commit"; then\n'
    "  echo \"Pre-commit validation failed: [FORMAT] Code is not formatted. Run 'ruff format'"
    ' to fix." >&2\n'
    "  exit 2\n"
    "fi\n"
    "exit 0\n"
)

EXPECTED_FAMILIES = {
    # family → how many of its calls fail in both sessions' scripts
    "git add": 1,
    "pytest": 3,
    "npm run biuld": 2,
    "gcc": 2,
    "sleep": 3,
}
"""Families both scripts fail the same way; each harness adds its own (see below)."""
QUALIFYING = {"npm run biuld", "gcc", "sleep"}
"""Families that meet SPEC §4 item 4 in both sessions (pytest is a red-green cycle)."""


def workspace(root: Path, *, claude: bool) -> Path:
    """The checkout the session works in: a git repository with what the script breaks."""
    work = root / "work"
    work.mkdir(parents=True)
    (work / "calc.py").write_text(CALC.format("a - b"))
    (work / "test_calc.py").write_text(TEST)
    (work / "bad.c").write_text(BAD_C)
    (work / "package.json").write_text(PACKAGE)
    (work / ".gitignore").write_text("build/\n")
    (work / "build").mkdir()
    (work / "build" / "app.css").write_text("body {}\n")
    git = ["git", "-C", str(work), "-c", "user.email=dev@example.com", "-c", "user.name=dev"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "calc.py", "test_calc.py"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "init"], check=True)
    if claude:
        hook = work / ".claude" / "refuse_commit.sh"
        hook.parent.mkdir()
        hook.write_text(HOOK)
        hook.chmod(0o755)
        settings = {
            "permissions": {"deny": ["Bash(git push:*)"]},
            "hooks": {
                "PreToolUse": [
                    {"matcher": "Bash", "hooks": [{"type": "command", "command": str(hook)}]}
                ]
            },
        }
        (work / ".claude" / "settings.json").write_text(json.dumps(settings))
    return work


def _pytest() -> str:
    return f"{sys.executable} -m pytest -q -p no:cacheprovider test_calc.py"


def claude_script(work: Path) -> list[Turn]:
    """What the scripted model asks Claude Code to run, in order."""
    calc = str(work / "calc.py")

    def bash(command: str) -> Turn:
        return tool("Bash", {"command": command, "description": command[:40]})

    def edit(old: str, new: str) -> Turn:
        return tool("Edit", {"file_path": calc, "old_string": old, "new_string": new})

    return [
        bash("git add build/app.css"),  # ignored path
        bash("git add -f build/app.css"),  # resolves it
        tool("Read", {"file_path": calc}),
        bash(_pytest()),  # red: assert 0 == 4
        edit("a - b", "a * b + 1"),
        bash(_pytest()),  # still red: assert 5 == 4
        edit("a * b + 1", "a + b + 1"),
        bash(_pytest()),  # still red: assert 5 == 4 after another edit
        edit("a + b + 1", "a + b"),
        bash(_pytest()),  # green
        bash("npm run biuld"),  # a typo, twice
        bash("npm run biuld"),
        bash("gcc -c bad.c -o bad.o"),  # a compiler error, twice
        bash("gcc -c bad.c -o bad.o"),
        bash("timeout 1 sleep 3"),  # killed by timeout, three times
        bash("timeout 1 sleep 3"),
        bash("timeout 1 sleep 3"),
        bash("git add -A && git commit -m 'fix: add'"),  # refused by the hook, twice
        bash("git add -A && git commit -m 'fix: add'"),
        bash("git push"),  # refused by a permission rule
        edit("no such text", "x"),  # a file tool's own error
        text("The checks pass; the commit was refused by the project's hook."),
    ]


CLAUDE_EXTRA = {"git commit": 2, "git push": 1, "Edit calc.py": 1}
CLAUDE_QUALIFYING = QUALIFYING | {"git commit"}


def codex_script(work: Path) -> list[Turn]:
    """What the scripted model asks Codex to run, in order (edits through the shell)."""

    def run(command: str) -> Turn:
        return tool("exec_command", {"cmd": command})

    def write(body: str) -> Turn:
        return run(f"printf '{body}' > calc.py")

    return [
        run("git add build/app.css"),
        run("git add -f build/app.css"),
        run(_pytest()),
        write("def add(a, b):\\n    return a * b + 1\\n"),
        run(_pytest()),
        write("def add(a, b):\\n    return a + b + 1\\n"),
        run(_pytest()),
        write("def add(a, b):\\n    return a + b\\n"),
        run(_pytest()),
        run("npm run biuld"),
        run("npm run biuld"),
        run("gcc -c bad.c -o bad.o"),
        run("gcc -c bad.c -o bad.o"),
        run("timeout 1 sleep 3"),
        run("timeout 1 sleep 3"),
        run("timeout 1 sleep 3"),
        run("git push"),  # no remote configured, twice
        run("git push"),
        text("The checks pass; there is no remote to push to."),
    ]


CODEX_EXTRA = {"git push": 2}
CODEX_QUALIFYING = QUALIFYING | {"git push"}


def record_claude(root: Path) -> Path:
    """Run the session with the real `claude`; return its transcript."""
    binary = harness.require_harness("claude")
    work = workspace(root, claude=True)
    no_tools = lambda received: not received.tool_names()  # noqa: E731
    with model_server.ModelServer(
        script=claude_script(work), default=text("ok"), side=no_tools
    ) as server:
        env = harness.claude_environment(root, server.url, "sk-fake") | {"IS_SANDBOX": "1"}
        subprocess.run(
            [
                str(binary),
                "-p",
                PROMPT,
                "--permission-mode",
                "bypassPermissions",
                "--output-format",
                "json",
            ],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=True,
        )
    (transcript,) = (root / "home" / ".claude" / "projects").glob("*/*.jsonl")
    return transcript


def record_codex(root: Path) -> Path:
    """Run the session with the real `codex exec`; return its rollout."""
    binary = harness.require_harness("codex")
    work = workspace(root, claude=False)
    env = harness.isolated_home(root) | {"FAKE_OPENAI_KEY": "sk-fake"}
    with model_server.ModelServer(script=codex_script(work), default=text("ok")) as server:
        harness.codex_config(Path(env["CODEX_HOME"]), server.openai_url)
        subprocess.run(
            [
                str(binary),
                "exec",
                "--skip-git-repo-check",
                "--dangerously-bypass-approvals-and-sandbox",
                PROMPT,
            ],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=True,
        )
    (rollout,) = Path(env["CODEX_HOME"]).glob("sessions/*/*/*/rollout-*.jsonl")
    return rollout


_LONG = 200


def clean(path: Path, root: Path) -> str:
    """The log with the temporary folders renamed and the harness's own long texts out."""
    lines: list[str] = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        entry = json.loads(raw)
        kind = entry.get("type")
        if kind == "api-request-blob":
            continue
        queued = kind == "attachment" and (entry.get("attachment") or {}).get("type") == (
            "queued_command"
        )
        if queued:
            # A task notification queued into a turn is the session's data: kept whole,
            # without the harness's rendering of it.
            entry.pop("rendered", None)
            entry.pop("renderedInHumanTurn", None)
        elif kind in ("attachment", "api-request-shape", "api-request"):
            entry = _shortened(entry)
        if kind == "session_meta" and isinstance(entry.get("payload"), dict):
            entry["payload"].pop("base_instructions", None)
        if kind == "response_item" and (entry.get("payload") or {}).get("role") == "developer":
            continue
        lines.append(json.dumps(entry, ensure_ascii=False, separators=(",", ":")))
    out = "\n".join(lines) + "\n"
    out = out.replace(str(root / "work"), WORK).replace(str(root / "home"), HOME)
    # Claude Code's per-project folders name the working folder with `-` for `/`.
    out = out.replace(str(root / "work").replace("/", "-"), WORK.replace("/", "-"))
    out = out.replace(sys.executable, "python3")
    out = out.replace(str(Path(sys.executable).parents[1]), "/home/dev/.venv")
    return re.sub(re.escape(str(root)), "/home/dev/tmp", out)


def _shortened(value: Any) -> Any:
    if isinstance(value, str):
        return value if len(value) <= _LONG else "<removed: the harness's own text>"
    if isinstance(value, list):
        return [_shortened(item) for item in value]
    if isinstance(value, dict):
        return {key: _shortened(item) for key, item in value.items()}
    return value


def main() -> None:
    """Record both sessions and print where the cleaned logs are."""
    base = Path(tempfile.mkdtemp(prefix="failure-sessions-"))
    for name, record in (("claude", record_claude), ("codex", record_codex)):
        root = base / name
        root.mkdir()
        log = record(root)
        out = base / f"{name}-{log.name}"
        out.write_text(clean(log, root), encoding="utf-8")
        print(out)


if __name__ == "__main__":
    main()
