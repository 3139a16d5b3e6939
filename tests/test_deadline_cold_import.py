"""Each API lane with a cold SDK import (issue 17 item 1): in a fresh process, the
postmortem's report comes within `timeoutMs` + 250 ms of its own clock, and the
process exits within a further 250 ms.

The provider is a loopback socket that accepts and never answers, so every specialist
runs into the deadline; the SDK (`anthropic` ≈ 1.4 s cold, `openai` similar) is imported
by the postmortem itself, off the event loop.
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
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO_ROOT

TIMEOUT_MS = 800

LANES = {
    "anthropic": {
        "harness": "claude",
        "provider": "anthropic",
        "model": "claude-sonnet-5",
        "key": ("ANTHROPIC_API_KEY", "sk-ant-api03-FAKEKEYfakekeyFAKEKEY0123456789"),
        "base": "ANTHROPIC_BASE_URL",
        "sdk": "anthropic",
    },
    "openai": {
        "harness": "codex",
        "provider": "openai",
        "model": "gpt-5.1",
        "key": ("OPENAI_API_KEY", "sk-proj-FAKEKEYfakekey0123456789abcdef"),
        "base": "OPENAI_BASE_URL",
        "sdk": "openai",
    },
}


@pytest.fixture
def silent_provider() -> Iterator[str]:
    """A loopback listener whose connections are accepted by the kernel, never answered."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"


def _run_record(tmp_path: Path, lane: dict[str, Any]) -> Path:
    record = json.loads((REPO_ROOT / "examples" / "run.json").read_text(encoding="utf-8"))
    runtime = copy.deepcopy(record["runtime"])
    runtime["harness"], runtime["provider"] = lane["harness"], lane["provider"]
    for node in runtime["nodes"].values():
        if node.get("kind") == "agent":
            node["model"] = lane["model"]
            node.pop("connections", None)
            node["env"] = [lane["key"][0], lane["base"]]
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
    if importlib.util.find_spec(lane["sdk"]) is None:
        pytest.skip(f"the {lane['sdk']} SDK is not installed")
    sys.path.insert(0, str(REPO_ROOT / "examples"))
    try:
        from make_checkout import make_checkout
    finally:
        sys.path.pop(0)
    checkout = tmp_path / "acme-api"
    make_checkout(checkout)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ACTIVE_MEMORY_", "ANTHROPIC", "OPENAI"))
    }
    env.update(
        {
            "ZEROSHOT_STATE_DIR": str(tmp_path / "state"),
            lane["key"][0]: lane["key"][1],
            lane["base"]: silent_provider,
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
