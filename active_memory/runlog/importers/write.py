"""Writing imported run records: `<run_id>.run.json`, atomically, never over a file silently."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from active_memory.atomic_files import write_atomically
from active_memory.errors import UsageError
from active_memory.runlog.screening import screen_record_data

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def file_name(run_id: str) -> str:
    """`<run_id>.run.json`, with characters unsafe in a file name replaced by `_`."""
    safe = _UNSAFE.sub("_", run_id).lstrip(".") or "run"
    return f"{safe[:200]}.run.json"


def targets(
    run_ids: list[str], *, out_dir: str | None, out_file: str | None, force: bool
) -> list[Path]:
    """Where each run goes; refuse (before writing anything) what would be overwritten."""
    if out_file is not None:
        if len(run_ids) > 1:
            raise UsageError(
                f"-o/--output names one file but the import holds {len(run_ids)} runs; "
                "use --out DIR to write one file per run"
            )
        paths = [Path(out_file)] * len(run_ids)
        folder = Path(out_file).parent
    else:
        folder = Path(out_dir or ".")
        paths = [folder / file_name(run_id) for run_id in run_ids]
    if run_ids and not folder.is_dir():
        raise UsageError(f"{folder}: no such folder; create it first")
    seen: set[Path] = set()
    for path in paths:
        if path in seen:
            raise UsageError(f"{path}: two runs map to the same file name; use --out DIR")
        seen.add(path)
        if path.is_dir():
            raise UsageError(f"{path}: is a folder; give a file path")
    existing = [str(p) for p in paths if p.exists()]
    if existing and not force:
        shown = ", ".join(existing[:5]) + (
            f" and {len(existing) - 5} more" if len(existing) > 5 else ""
        )
        raise UsageError(
            f"refusing to overwrite {shown}; nothing was written. "
            "Pass --force to replace, or choose another --out folder"
        )
    return paths


def write_record(path: Path, record: dict[str, Any], *, force: bool) -> None:
    """Write one record through a temporary file in the same folder, then move it in place.

    Without `force` the final step is a hard link, which fails if a file appeared at
    `path` since `targets` looked: a concurrent writer is never overwritten either.
    """
    # The one screen again at the writer: no record file keeps a credential, whoever
    # built the record (the importers seal theirs already; docs/security.md).
    text = json.dumps(screen_record_data(record), ensure_ascii=False, indent=2) + "\n"
    try:
        # 0600: a run record holds private run data.
        write_atomically(path, text, mode=0o600, replace=force)
    except FileExistsError:
        raise UsageError(f"{path}: appeared while importing; not overwritten") from None
