from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_cli_hook_skips_the_argument_parser(tmp_path: Path) -> None:
    script = (
        "import sys; from active_memory.cli import run; sys.argv[1:] = ['hook', 'claude']; run()"
    )
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", script],
        input=b"not json",
        capture_output=True,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
        timeout=60,
        check=False,
    )
    assert result.returncode == 0 and result.stdout == b""
    imported = {line.split("|")[-1].strip() for line in result.stderr.decode().splitlines()}
    assert "active_memory.hooks.command" in imported
    assert not {"argparse", "pydantic", "rich"} & imported
