"""What a specialist turn through a harness CLI sends the model: bytes and tools per request.

Run: `.venv/bin/python bench/cli_request_bench.py` (the real `claude` and `codex` binaries
from ACTIVE_MEMORY_TEST_CLAUDE / ACTIVE_MEMORY_TEST_CODEX or PATH; `.ci/run` installs
them). The bundled example's whole postmortem runs through each lane against the fake
model server of the tests, which logs every request; the server answers each specialist
with the example's recorded answer, so every configuration asks the same questions.

Configurations, measured in the same run:

- claude, before: the lane's former command line (`--output-format json`,
  `--append-system-prompt`): Claude Code's own system prompt and default tool set.
- claude, after, no tools: `--system-prompt` and no tool but the answer tool (what a
  specialist without a checkout gets).
- claude, after, with the checkout: plus the read-only Read, Grep and Glob tools.
- codex, before: `--sandbox read-only` and codex's default features.
- codex, after: the read-only permission profile, web search, hooks, goals, sub-agents,
  plugins and image generation off.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import os
import statistics
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fakes.harness import codex_config, find_harness, isolated_home  # noqa: E402
from fakes.model_server import ModelServer, Received, answer  # noqa: E402
from test_postmortem_lanes_cli import recorded_answers, runtime  # noqa: E402

from active_memory.cli import main  # noqa: E402
from active_memory.specialists.providers import base  # noqa: E402
from active_memory.specialists.providers.claude_cli import ClaudeCliSession  # noqa: E402
from active_memory.specialists.providers.codex_cli import CodexCliSession  # noqa: E402

EXAMPLES = ROOT / "examples"


def claude_before(self: ClaudeCliSession, request: base.Request) -> list[str]:
    """The claude lane's command line before this change."""
    argv = [self.executable, "-p", "--output-format", "json", "--model", self.model]
    argv += ["--json-schema", json.dumps(request.schema, ensure_ascii=False)]
    return [*argv, "--append-system-prompt", request.instructions()]


def codex_before(self: CodexCliSession, request: base.Request) -> list[str]:
    """The codex lane's command line before this change."""
    argv = [self.executable, "exec", "--json", "--skip-git-repo-check"]
    argv += ["--sandbox", "read-only", "--model", self.model, "--cd", str(self.workdir)]
    if request.resume is not None:
        argv += ["resume", request.resume]
    return [*argv, "-"]


@contextlib.contextmanager
def patched(cls: type, name: str, value: Any) -> Iterator[None]:
    old = getattr(cls, name)
    setattr(cls, name, value)
    try:
        yield
    finally:
        setattr(cls, name, old)


@contextlib.contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.update(values)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def example(root: Path) -> Path:
    spec = importlib.util.spec_from_file_location("make_checkout", EXAMPLES / "make_checkout.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    checkout = root / "acme-api"
    module.make_checkout(checkout)
    return checkout


_CLAUDE_AFTER = ClaudeCliSession.argv


def claude_without_tools(self: ClaudeCliSession, request: base.Request) -> list[str]:
    """The lane's command line when the model may not read the checkout."""
    self.investigates = False
    return _CLAUDE_AFTER(self, request)


def postmortem(harness: str, binary: Path, root: Path) -> list[Received]:
    """One dry-run postmortem of the example through a CLI lane; the model's requests."""
    root.mkdir(parents=True)
    repo = example(root)
    env_names = ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"] if harness == "claude" else []
    config = runtime(root, harness, env_names or ["OPENAI_API_KEY"])
    home = isolated_home(root)
    with ModelServer(respond=recorded_answers) as server:
        values = home | {
            "ZEROSHOT_STATE_DIR": str(root / "state"),
            "ANTHROPIC_API_KEY": "sk-ant-api03-BENCHkey0123456789",
            "ANTHROPIC_BASE_URL": server.url,
            "OPENAI_API_KEY": "sk-proj-BENCHkey0123456789abcdef",
            f"ACTIVE_MEMORY_{harness.upper()}_BIN": str(binary),
        }
        if harness == "codex":
            codex_config(Path(home["CODEX_HOME"]), server.openai_url, key_name="OPENAI_API_KEY")
        argv = ["postmortem", str(EXAMPLES / "run.json"), "--config", str(config)]
        argv += ["--checkout", str(repo), "--lane", harness, "--dry-run", "--json"]
        quiet = contextlib.redirect_stderr(io.StringIO())
        with environment(values), contextlib.redirect_stdout(io.StringIO()) as out, quiet:
            main(["lessons", "import", str(EXAMPLES / "lessons.jsonl")])
            code = main(argv)
        if code != 0:
            raise SystemExit(f"the {harness} postmortem failed ({code}): {out.getvalue()[:500]}")
        return server.model_requests()


def small_ask(binary: Path, root: Path) -> list[Received]:
    """One small ask (a short prompt, a one-field answer) through the claude lane."""
    import anyio
    from fakes.lanes import GOOD, Discoveries, lane

    from active_memory.specialists.providers import SessionOptions, open_session

    root.mkdir(parents=True)
    with ModelServer(default=answer(GOOD)) as server:
        environ = isolated_home(root) | {
            "ANTHROPIC_API_KEY": "sk-ant-x",
            "ANTHROPIC_BASE_URL": server.url,
        }
        session = open_session(
            lane(env=["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"]),
            "repository_discovery",
            deadline=None,
            options=SessionOptions(mode="cli", executable=str(binary)),
            environ=environ,
        )

        async def ask() -> None:
            async with session:
                await session.ask("Which file regenerates the client?", Discoveries)

        anyio.run(ask)
        return server.model_requests()


def figures(label: str, requests: list[Received], baseline: float | None) -> float:
    sizes = [r.raw_size for r in requests]
    mean = statistics.mean(sizes)
    tools = statistics.mean(len(r.tool_names()) for r in requests)
    ratio = f"{mean / baseline:6.3f} x before" if baseline else "   (baseline)"
    print(
        f"  {label:<34} {len(sizes):3d} requests  mean {mean / 1024:7.1f} KB  "
        f"max {max(sizes) / 1024:7.1f} KB  tools {tools:4.1f}  {ratio}"
    )
    return mean


def main_bench() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args()
    found = {name: find_harness(name) for name in ("claude", "codex")}
    with tempfile.TemporaryDirectory(prefix="am-cli-bench-") as folder:
        root = Path(folder)
        claude = found["claude"]
        if claude is None:
            print("claude: not found (set ACTIVE_MEMORY_TEST_CLAUDE or put it on PATH)")
        else:
            print(f"claude {claude}: one small ask")
            with patched(ClaudeCliSession, "argv", claude_before):
                before = small_ask(claude, root / "s-before")
            baseline = figures("before (default prompt and tools)", before, None)
            figures("after, no tools", small_ask(claude, root / "s-after"), baseline)
            print(f"claude {claude}: the example's postmortem")
            with patched(ClaudeCliSession, "argv", claude_before):
                before = postmortem("claude", claude, root / "c-before")
            baseline = figures("before (default prompt and tools)", before, None)
            with patched(ClaudeCliSession, "argv", claude_without_tools):
                bare = postmortem("claude", claude, root / "c-bare")
            figures("after, no tools", bare, baseline)
            after = postmortem("claude", claude, root / "c-after")
            figures("after, reading the checkout", after, baseline)
        codex = found["codex"]
        if codex is None:
            print("codex: not found (set ACTIVE_MEMORY_TEST_CODEX or put it on PATH)")
        else:
            print(f"codex {codex}: the example's postmortem")
            with patched(CodexCliSession, "argv", codex_before):
                before = postmortem("codex", codex, root / "x-before")
            baseline = figures("before (--sandbox read-only)", before, None)
            after = postmortem("codex", codex, root / "x-after")
            figures("after (profile, features off)", after, baseline)
    return 0


if __name__ == "__main__":
    sys.exit(main_bench())
