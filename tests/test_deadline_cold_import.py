"""Each API lane with a cold SDK import (issue 17 item 1): in a fresh process, the
postmortem's report comes within `timeoutMs` + 250 ms of its own clock, and the
process exits within a further 250 ms.

The provider is a loopback socket that accepts and never answers, so every specialist
runs into the deadline; the SDK (`anthropic` ≈ 1.4 s cold, `openai` similar) is imported
by the postmortem itself, off the event loop, before its clock starts.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO_ROOT

TIMEOUT_MS = 800


@dataclass(frozen=True)
class Lane:
    harness: str
    provider: str
    model: str
    key_name: str
    key: str
    base: str
    sdk: str


LANES = {
    "anthropic": Lane(
        "claude", "anthropic", "claude-sonnet-5", "ANTHROPIC_API_KEY",
        "sk-ant-api03-FAKEKEYfakekeyFAKEKEY0123456789", "ANTHROPIC_BASE_URL", "anthropic",
    ),
    "openai": Lane(
        "codex", "openai", "gpt-5.1", "OPENAI_API_KEY",
        "sk-proj-FAKEKEYfakekey0123456789abcdef", "OPENAI_BASE_URL", "openai",
    ),
}  # fmt: skip


def _make_checkout(folder: Path) -> None:
    spec = importlib.util.spec_from_file_location(
        "make_checkout", REPO_ROOT / "examples" / "make_checkout.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.make_checkout(folder)


@pytest.fixture
def silent_provider() -> Iterator[str]:
    """A loopback listener whose connections are accepted by the kernel, never answered."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"


def _run_record(tmp_path: Path, lane: Lane) -> Path:
    record = json.loads((REPO_ROOT / "examples" / "run.json").read_text(encoding="utf-8"))
    runtime = copy.deepcopy(record["runtime"])
    runtime["harness"], runtime["provider"] = lane.harness, lane.provider
    for node in runtime["nodes"].values():
        if node.get("kind") == "agent":
            node["model"] = lane.model
            node.pop("connections", None)
            node["env"] = [lane.key_name, lane.base]
    runtime["globalAgents"]["postmortem"]["timeoutMs"] = TIMEOUT_MS
    record["runtime"] = runtime
    path = tmp_path / "run.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    return path


@pytest.mark.parametrize("name", list(LANES))
def test_a_cold_sdk_import_never_overruns_the_deadline(
    name: str, tmp_path: Path, silent_provider: str
) -> None:
    lane = LANES[name]
    if importlib.util.find_spec(lane.sdk) is None:
        pytest.skip(f"the {lane.sdk} SDK is not installed")
    checkout = tmp_path / "acme-api"
    _make_checkout(checkout)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ACTIVE_MEMORY_", "ANTHROPIC", "OPENAI"))
    }
    env.update(
        {
            "ZEROSHOT_STATE_DIR": str(tmp_path / "state"),
            lane.key_name: lane.key,
            lane.base: silent_provider,
        }
    )
    command = [
        sys.executable, "-c", "from active_memory.cli import run; run()", "postmortem",
        str(_run_record(tmp_path, lane)), "--checkout", str(checkout), "--json",
    ]  # fmt: skip
    with subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(tmp_path)
    ) as child:
        assert child.stdout is not None and child.stderr is not None
        first = child.stdout.read(1)  # the report is one JSON document, printed at the end
        reported = time.monotonic()
        rest = child.stdout.read()
        code = child.wait(timeout=60)
        exited = time.monotonic()
        err = child.stderr.read().decode()
    assert first, f"no report (exit {code}): {err}"
    report = json.loads(first + rest)
    assert report["timeout_ms"] == TIMEOUT_MS
    timed_out = [s for s in report["specialists"].values() if s["status"] == "timed_out"]
    assert timed_out, report["specialists"]
    assert report["elapsed_ms"] <= TIMEOUT_MS + 250, report["elapsed_ms"]
    assert exited - reported <= 0.25, exited - reported
