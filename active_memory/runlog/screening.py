"""Run records screened for credentials, one rule for every writer and reader.

Every string of a run record is passed through the credential screen's masking function
(`credential_gate.mask_value`, the one screen; docs/security.md) except the record's
identity and its graph: `schema` and `run_id` name the record, and the graph IR must
stay byte for byte, or its hash (SPEC §3) would no longer match it. A credential in an
authored graph is the graph author's own file; it is not copied anywhere else.

Used where a record is written (`import … -o`, `init`'s copies of the selected runs)
and where one is read into a postmortem (a record a run controller hands over was never
sealed by an importer).
"""

from __future__ import annotations

from typing import Any

from active_memory.credential_gate import mask_value
from active_memory.runlog.record import RunRecord, parse_run_record

IDENTITY_KEYS = frozenset({"schema", "run_id", "graph"})
"""Top-level keys never rewritten: the record's identity and its graph IR."""


def screen_record_data(data: dict[str, Any]) -> dict[str, Any]:
    """`data` (a run record's JSON) with every credential masked but in `IDENTITY_KEYS`;
    the same object when nothing in it may hold one."""
    screened = {k: v if k in IDENTITY_KEYS else mask_value(v) for k, v in data.items()}
    if all(screened[k] is v for k, v in data.items()):
        return data
    return screened


def screen_record(record: RunRecord) -> RunRecord:
    """`record` with every credential masked (see `screen_record_data`); the same object
    when it holds none."""
    data = record.model_dump(mode="json", by_alias=True, exclude_none=True)
    screened = screen_record_data(data)
    if screened is data:
        return record
    return parse_run_record(screened, f"run {record.run_id}")
