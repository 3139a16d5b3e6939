"""A PostgreSQL cluster of a test's own, which the test may stop and start again (the
shared one of `ACTIVE_MEMORY_TEST_POSTGRES` must stay up for every other test).

The binaries: `ACTIVE_MEMORY_TEST_PG_BIN` (`.ci/run` sets it), else the newest
`/usr/lib/postgresql/*/bin`, else `initdb` on PATH. PostgreSQL refuses to run as root:
as root the cluster belongs to `ACTIVE_MEMORY_TEST_PG_USER` (default `amtest`, the user
`.ci/run` creates) and its folder lies under /tmp where that user can reach it. Without
the binaries (or that user) a test skips, and fails with `CI=true`.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shlex
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest


def _bin_dir() -> Path | None:
    configured = os.environ.get("ACTIVE_MEMORY_TEST_PG_BIN")
    if configured:
        return Path(configured)
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[4]))
    if found:
        return Path(found[-1])
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _missing(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason)


class Cluster:
    """`with Cluster() as pg:` a running cluster on a free loopback port; `pg.url`,
    `pg.stop()`, `pg.start()` (same port, same data)."""

    def __init__(self, *, options: tuple[str, ...] = ()) -> None:
        bindir = _bin_dir()
        if bindir is None or not (bindir / "initdb").exists():
            _missing("no PostgreSQL binaries: set ACTIVE_MEMORY_TEST_PG_BIN (.ci/run does)")
        assert bindir is not None
        self.bin = bindir
        self.user = (
            os.environ.get("ACTIVE_MEMORY_TEST_PG_USER", "amtest") if os.getuid() == 0 else ""
        )
        if self.user:
            try:
                import pwd

                pwd.getpwnam(self.user)
            except KeyError:
                _missing(f"running as root needs the user {self.user} for PostgreSQL")
        self.root = Path(tempfile.mkdtemp(prefix="am-test-pg-", dir="/tmp"))
        self.root.chmod(0o755)
        if self.user:
            shutil.chown(self.root, self.user)
        self.data = self.root / "data"
        self.port = _free_port()
        self.options = options
        self.url = f"postgresql://tester@127.0.0.1:{self.port}/postgres"

    def _run(self, *argv: str) -> None:
        command = [str(self.bin / argv[0]), *argv[1:]]
        if self.user:
            command = ["su", "-s", "/bin/sh", self.user, "-c", shlex.join(command)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv[:2])}: {done.stdout}{done.stderr}")

    def __enter__(self) -> Cluster:
        self._run("initdb", "-D", str(self.data), "-U", "tester", "--auth=trust", "--no-sync")
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(RuntimeError):
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "stop")
        shutil.rmtree(self.root, ignore_errors=True)

    def start(self) -> None:
        """Start (again) on the same port."""
        settings = " ".join(
            ["-k", str(self.root), "-c", "listen_addresses=127.0.0.1", "-p", str(self.port),
             "-c", "fsync=off", *self.options]
        )  # fmt: skip
        log = self.root / "server.log"
        self._run("pg_ctl", "-D", str(self.data), "-l", str(log), "-w", "-o", settings, "start")

    def stop(self) -> None:
        """Stop at once (`-m fast`: open connections are terminated)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
