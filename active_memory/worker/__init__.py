"""The postmortem queue's worker: claims settled harness sessions from the store's queue,
imports each into a run record and runs its postmortem, with bounded concurrency, one
postmortem per repository scope, retries, leases and a drain on shutdown.

```python
worker = Worker(location, WorkerOptions(concurrency=2, once=True))
async with open_store(location) as store:
    processed = await worker.run(store.queue)
```

See docs/queue.md; the time model is in `worker/engine.py`.
"""

from __future__ import annotations

from active_memory.worker.engine import QUEUE_BUSY_TIMEOUT as QUEUE_BUSY_TIMEOUT
from active_memory.worker.engine import Processed as Processed
from active_memory.worker.engine import Worker as Worker
from active_memory.worker.engine import WorkerEvent as WorkerEvent
from active_memory.worker.engine import WorkerOptions as WorkerOptions
from active_memory.worker.lanes import LANES as LANES
from active_memory.worker.lanes import LaneChoice as LaneChoice
from active_memory.worker.lanes import WorkerLane as WorkerLane
from active_memory.worker.lanes import session_factory as session_factory
