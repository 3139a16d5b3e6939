"""The postmortem orchestrator: it owns time (one deadline), concurrency (one task group
of four specialists), the one publish and the run controller's hook.

```python
report = await run_postmortem(record, config, store, checkout=checkout, sessions=factory)
print(json.dumps(report.to_json()))  # SPEC §10

settled = await after_run_settled(record, config, store)  # for a run controller
settled.outcome  # the run's latched outcome, whatever the postmortem did
```

See docs/orchestrator.md.
"""

from __future__ import annotations

from active_memory.orchestrator.controller import SettledRun as SettledRun
from active_memory.orchestrator.controller import after_run_settled as after_run_settled
from active_memory.orchestrator.journal import InterruptedPostmortem as InterruptedPostmortem
from active_memory.orchestrator.journal import Journal as Journal
from active_memory.orchestrator.journal import JournalEntry as JournalEntry
from active_memory.orchestrator.journal import default_journal_dir as default_journal_dir
from active_memory.orchestrator.journal import interrupted_postmortems as interrupted_postmortems
from active_memory.orchestrator.journal import (
    settled_interrupted_postmortems as settled_interrupted_postmortems,
)
from active_memory.orchestrator.lanes import LANE_NAMES as LANE_NAMES
from active_memory.orchestrator.lanes import ChosenLane as ChosenLane
from active_memory.orchestrator.lanes import LaneName as LaneName
from active_memory.orchestrator.lanes import LaneOptions as LaneOptions
from active_memory.orchestrator.lanes import choose_lane as choose_lane
from active_memory.orchestrator.options import PostmortemLimits as PostmortemLimits
from active_memory.orchestrator.options import Progress as Progress
from active_memory.orchestrator.options import ProgressEvent as ProgressEvent
from active_memory.orchestrator.postmortem import run_postmortem as run_postmortem
from active_memory.orchestrator.records import config_from_record as config_from_record
from active_memory.orchestrator.records import open_checkout as open_checkout
from active_memory.orchestrator.report import ConflictReport as ConflictReport
from active_memory.orchestrator.report import MutationReport as MutationReport
from active_memory.orchestrator.report import PostmortemReport as PostmortemReport
from active_memory.orchestrator.report import PublishedCounts as PublishedCounts
from active_memory.orchestrator.report import SpecialistReport as SpecialistReport
from active_memory.orchestrator.report import UsageReport as UsageReport
from active_memory.orchestrator.sessions import SessionFactory as SessionFactory
from active_memory.orchestrator.sessions import lane_sessions as lane_sessions
from active_memory.specialists.tasks import DEFAULT_BATCH_BYTES as DEFAULT_BATCH_BYTES
from active_memory.specialists.tasks import cut_by_serialized_size as cut_by_serialized_size
