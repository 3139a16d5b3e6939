"""The impact-evidence scanner (SPEC §4): pure functions from a run record to evidence.

`scan(record)` returns a `ScanResult`: `evidence` (items with stable IDs that discovery
proposals cite: `timeout_crash`, `rejected_rounds`, `exploration`) and `skipped` (each
loop or map not counted, with its reason). No I/O, no model, no clock.
"""

from __future__ import annotations

from active_memory.evidence.model import EvidenceItem as EvidenceItem
from active_memory.evidence.model import ScanResult as ScanResult
from active_memory.evidence.model import Skip as Skip
from active_memory.evidence.scan import scan as scan
