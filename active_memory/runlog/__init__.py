"""Zeroshot graphs (with the canonical graph hash) and the run record (SPEC §3).

`graph` holds the graph models and walk helpers, `canonical` the canonical JSON and graph
hash, `record` the run record `active-memory/run@1` and `load_run_record`, `receipts`
the receipt bounds, `jsonpath` validation errors that name the JSON path. Import from
the submodules; nothing heavy is re-exported here, so importing `active_memory.runlog`
stays cheap.
"""

from __future__ import annotations
