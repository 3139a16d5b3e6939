"""The impact-evidence scanner (SPEC §4): pure functions from a run record to evidence.

`scan(record, earlier_signatures=…)` returns a `ScanResult`: `evidence` (items with
stable IDs that discovery proposals cite: `timeout_crash`, `rejected_rounds`,
`exploration`, `tool_failures`) and `skipped` (each loop, map or failing family not
counted, with its reason). No I/O, no model, no clock. `FailureSignature` and
`normalise_error` (signatures.py) say when two tool failures are the same failure.
"""

from __future__ import annotations

from active_memory.evidence.model import EvidenceItem as EvidenceItem
from active_memory.evidence.model import ScanResult as ScanResult
from active_memory.evidence.model import Skip as Skip
from active_memory.evidence.scan import scan as scan
from active_memory.evidence.signatures import FailureSignature as FailureSignature
from active_memory.evidence.signatures import normalise_error as normalise_error
