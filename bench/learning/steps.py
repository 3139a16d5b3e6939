"""The real commands the bench runs for each session: `active-memory import`, the
postmortem (a subprocess on the chosen lane; in-process and dry for a record pass),
`active-memory lessons export`."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import JsonValue

import active_memory
from active_memory.specialists.kinds import SpecialistName, kind_of
from active_memory.specialists.providers import ProviderSession
from active_memory.specialists.providers.base import Request
from active_memory.specialists.providers.function import FunctionSession
from learning.answers import MODEL, Recorder

# `active-memory …` through this interpreter, from the folder holding the package this
# process imported (`-c` puts the working folder first on `sys.path`), so the commands run
# the very Active Memory the bench measures, whatever else is on PATH.
PACKAGE_ROOT = Path(active_memory.__file__).resolve().parents[1]
CLI = [
    sys.executable,
    "-c",
    "import sys; sys.argv[0] = 'active-memory'; from active_memory.cli import run; run()",
]
FIRST_PARTY = {"claude": "anthropic", "codex": "openai"}
DECLARED_ENV = {
    "anthropic": ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"],
    "openai": ["OPENAI_API_KEY", "OPENAI_BASE_URL"],
}
DEFAULT_MODEL = {"claude": "claude-sonnet-5", "codex": "gpt-5-codex"}


class StepFailed(Exception):
    """A command of the bench failed; the message holds what it printed."""


def environment(state: Path) -> dict[str, str]:
    """The commands' environment: this one, without ACTIVE_MEMORY_* variables, with the
    sequence's own state folder (so no user store or settings are read or touched)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACTIVE_MEMORY_")}
    env["ZEROSHOT_STATE_DIR"] = str(state)
    return env


def run_cli(arguments: list[str], env: Mapping[str, str], *, allow: tuple[int, ...] = (0,)) -> str:
    """Run `active-memory ARGUMENTS`; its stdout, or `StepFailed` with its output."""
    done = subprocess.run(
        [*CLI, *arguments],
        env=dict(env),
        cwd=PACKAGE_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode not in allow:
        shown = " ".join(arguments)
        raise StepFailed(
            f"`active-memory {shown}` exited {done.returncode}:\n{done.stderr[-4000:]}"
        )
    return done.stdout


def import_session(harness: str, log: Path, out: Path, env: Mapping[str, str]) -> Path:
    """`active-memory import HARNESS LOG -o OUT`: the session's run record, joined with
    what its (replayed) hooks recorded under the state folder."""
    out.parent.mkdir(parents=True, exist_ok=True)
    run_cli(["import", harness, str(log), "-o", str(out), "--force", "--json"], env)
    return out


def drop_tool_failures(record: Path) -> None:
    """The run record without `tool_failures` (what the tasks held before issue 25)."""
    data = json.loads(record.read_text(encoding="utf-8"))
    data.pop("tool_failures", None)
    data.pop("tool_failures_dropped", None)
    record.write_text(json.dumps(data, ensure_ascii=False) + "\n", encoding="utf-8")


def write_runtime(record: Path, out: Path, *, model: str | None, timeout_ms: int) -> Path:
    """A runtime plan for an imported session (as the worker builds one): the session's
    harness and first-party provider, its model unless `model` is given."""
    data = json.loads(record.read_text(encoding="utf-8"))
    runtime = data.get("runtime") or {}
    harness = str(runtime.get("harness") or "claude")
    provider = FIRST_PARTY.get(harness, "anthropic")
    recorded = ((runtime.get("nodes") or {}).get("worker") or {}).get("model")
    plan = {
        "harness": harness,
        "provider": provider,
        "size": "standard",
        "nodes": {
            "worker": {
                "kind": "agent",
                "model": model or recorded or DEFAULT_MODEL[harness],
                "env": DECLARED_ENV[provider],
            }
        },
        "globalAgents": {"postmortem": {"enabled": True, "timeoutMs": timeout_ms}},
    }
    out.write_text(json.dumps(plan, indent=2) + "\n", encoding="utf-8")
    return out


def postmortem_arguments(record: Path, runtime: Path, checkout: Path, store: Path) -> list[str]:
    """The postmortem command line every lane shares."""
    return [
        "postmortem", str(record), "--config", str(runtime), "--checkout", str(checkout),
        "--store", str(store), "--json",
    ]  # fmt: skip


def postmortem(arguments: list[str], lane: list[str], env: Mapping[str, str]) -> dict[str, Any]:
    """Run the postmortem on `lane` (its options); its `--json` report."""
    out = run_cli([*arguments, *lane], env, allow=(0, 1))
    try:
        report: dict[str, Any] = json.loads(out)
    except ValueError:
        raise StepFailed(f"the postmortem printed no JSON report:\n{out[-2000:]}") from None
    return report


def export_lessons(store: Path, env: Mapping[str, str]) -> list[dict[str, Any]]:
    """Every lesson of the store (`active-memory lessons export`)."""
    if not store.exists():
        return []
    out = run_cli(["lessons", "export", "--store", str(store)], env)
    return [json.loads(line) for line in out.splitlines() if line.strip()]


@contextlib.contextmanager
def _process_environment(env: Mapping[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _no_change(specialist: str, task: JsonValue) -> JsonValue:
    if not kind_of(specialist).is_maintenance:
        return {"lessons": []}
    lessons = task.get("lessons") if isinstance(task, dict) else None
    return {
        "decisions": [
            {"id": x["id"], "revision": x["revision"], "action": "keep", "reason": "unanswered"}
            for x in (lessons if isinstance(lessons, list) else [])
            if isinstance(x, dict)
        ]
    }


def record_pass(
    arguments: list[str], env: Mapping[str, str], recorder: Recorder, prefix: str
) -> dict[str, Any]:
    """The postmortem run dry, in this process, by the same command body, each task
    answered by `recorder` (recorded, re-keyed, or written out for a person)."""
    from active_memory.cli import build_parser
    from active_memory.commands.postmortem import run_command

    def sessions(specialist: SpecialistName, *, deadline: float) -> ProviderSession:
        async def answer(request: Request) -> JsonValue:
            prompt = "\n\n".join(m.content for m in request.messages)
            found = recorder.answer(
                prefix, specialist, request.input, prompt, request.instructions()
            )
            return found if found is not None else _no_change(specialist, request.input)

        return FunctionSession(specialist, answer, model=MODEL, deadline=deadline)

    args = build_parser().parse_args([*arguments, "--dry-run"])
    out, err = io.StringIO(), io.StringIO()
    with (
        _process_environment(env),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        code = run_command(args, sessions=sessions)
    if code not in (0, 1):
        raise StepFailed(f"the record pass exited {code}:\n{err.getvalue()[-4000:]}")
    report: dict[str, Any] = json.loads(out.getvalue())
    return report
