"""Running a harness CLI as a child process that cancellation always kills and reaps.

The child starts in its own session (so its own process group): on cancellation or
deadline the whole group gets SIGKILL, including anything the CLI started, and the child
is waited for inside a shielded scope, so no zombie is left behind. When the child exits
on its own, whatever it left behind in its group is killed too.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.abc import ByteReceiveStream, Process

_STDERR_LIMIT = 64 * 1024


@dataclass(frozen=True, slots=True)
class Finished:
    """What a CLI run left: its exit code and output."""

    returncode: int
    stdout: bytes
    stderr: bytes


def _kill_group(process: Process) -> None:
    # Already gone is fine: the group empties when its last member is reaped.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


async def _drain(stream: ByteReceiveStream | None, into: bytearray, limit: int | None) -> None:
    if stream is None:
        return
    async for chunk in stream:
        if limit is None or len(into) < limit:
            into.extend(chunk)


async def _feed(process: Process, data: bytes) -> None:
    if process.stdin is None:
        return
    try:
        await process.stdin.send(data)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, BrokenPipeError):
        pass  # the CLI exited without reading its input; its exit code tells why
    finally:
        await process.stdin.aclose()


async def run_cli(
    argv: Sequence[str],
    *,
    stdin: bytes,
    env: Mapping[str, str],
    cwd: Path | None = None,
) -> Finished:
    """Run one CLI to its end; cancellation kills its process group and reaps it.

    Raises `FileNotFoundError` / `PermissionError` when the executable cannot be started.
    """
    process = await anyio.open_process(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env),
        cwd=cwd,
        start_new_session=True,
    )
    out, err = bytearray(), bytearray()
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(_feed, process, stdin)
            group.start_soon(_drain, process.stdout, out, None)
            group.start_soon(_drain, process.stderr, err, _STDERR_LIMIT)
        returncode = await process.wait()
    except BaseException:
        with anyio.CancelScope(shield=True):
            _kill_group(process)
            await process.wait()
            await process.aclose()
        raise
    # What the CLI left running in its group (codex's sandbox helpers outlive it) goes
    # too; the group ID stays reserved while any member lives, so this hits no stranger.
    _kill_group(process)
    await process.aclose()
    return Finished(returncode, bytes(out), bytes(err))
