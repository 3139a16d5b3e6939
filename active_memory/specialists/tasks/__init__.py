"""What each specialist is given: its task, built from a run record, lessons and a checkout.

A task is built in one direction, each step a module with one job:

| module | job |
|---|---|
| `bound.py` | the bounds: `TaskLimits`, the prompt bound, a manifest's batches |
| `manifest.py` | which lessons a maintenance specialist must judge |
| `gather_run.py` | what the run shows: essentials, requests, failed calls, evidence, nodes |
| `gather_lessons.py` | the lessons: deliveries, the supplied batch, `others`, the scope's |
| `gather_files.py` | the code: which files in which group, their first bytes, the listing |
| `choose.py` | what fits the bound (pure: reads nothing) |
| `render.py` | how a task reads in the prompt, and its size |
| `model.py` | the task's pydantic models, `canonical_json`, `digest()` |
| `build.py` | the builders: gather → choose → render |
| `changed_code.py` | a stale lesson's changed code, added to a built task |

The names below are the public API; the modules are the implementation.
"""

from active_memory.specialists.tasks.bound import DEFAULT_BATCH_BYTES as DEFAULT_BATCH_BYTES
from active_memory.specialists.tasks.bound import DEFAULT_LIMITS as DEFAULT_LIMITS
from active_memory.specialists.tasks.bound import LESSON_SHARE as LESSON_SHARE
from active_memory.specialists.tasks.bound import TaskLimits as TaskLimits
from active_memory.specialists.tasks.bound import cut_batches as cut_batches
from active_memory.specialists.tasks.bound import cut_by_serialized_size as cut_by_serialized_size
from active_memory.specialists.tasks.bound import lesson_bytes as lesson_bytes
from active_memory.specialists.tasks.bound import serialized_size as serialized_size
from active_memory.specialists.tasks.build import build_discovery as build_discovery
from active_memory.specialists.tasks.build import build_graph_maintenance as build_graph_maintenance
from active_memory.specialists.tasks.build import (
    build_repository_maintenance as build_repository_maintenance,
)
from active_memory.specialists.tasks.build import with_rejected as with_rejected
from active_memory.specialists.tasks.changed_code import Recited as Recited
from active_memory.specialists.tasks.changed_code import recited as recited
from active_memory.specialists.tasks.changed_code import with_changed_code as with_changed_code
from active_memory.specialists.tasks.gather_files import MANIFESTS as MANIFESTS
from active_memory.specialists.tasks.gather_files import CodeCache as CodeCache
from active_memory.specialists.tasks.gather_lessons import deferral_of as deferral_of
from active_memory.specialists.tasks.manifest import NO_DELIVERY_EVIDENCE as NO_DELIVERY_EVIDENCE
from active_memory.specialists.tasks.manifest import STALE_OFFERED_MAX as STALE_OFFERED_MAX
from active_memory.specialists.tasks.manifest import abstains as abstains
from active_memory.specialists.tasks.manifest import manifest as manifest
from active_memory.specialists.tasks.manifest import stale_offered as stale_offered
from active_memory.specialists.tasks.model import CandidateView as CandidateView
from active_memory.specialists.tasks.model import ChangedCodeView as ChangedCodeView
from active_memory.specialists.tasks.model import CompletionView as CompletionView
from active_memory.specialists.tasks.model import DeferralView as DeferralView
from active_memory.specialists.tasks.model import DeliveryView as DeliveryView
from active_memory.specialists.tasks.model import DiscoveryName as DiscoveryName
from active_memory.specialists.tasks.model import DiscoveryTask as DiscoveryTask
from active_memory.specialists.tasks.model import EvidenceView as EvidenceView
from active_memory.specialists.tasks.model import FileAuthority as FileAuthority
from active_memory.specialists.tasks.model import FolderAuthority as FolderAuthority
from active_memory.specialists.tasks.model import FolderListing as FolderListing
from active_memory.specialists.tasks.model import LessonDelivery as LessonDelivery
from active_memory.specialists.tasks.model import LessonRef as LessonRef
from active_memory.specialists.tasks.model import MaintenanceName as MaintenanceName
from active_memory.specialists.tasks.model import MaintenanceTask as MaintenanceTask
from active_memory.specialists.tasks.model import MovedCodeView as MovedCodeView
from active_memory.specialists.tasks.model import NodeAuthority as NodeAuthority
from active_memory.specialists.tasks.model import RequestView as RequestView
from active_memory.specialists.tasks.model import RunEssentials as RunEssentials
from active_memory.specialists.tasks.model import ScopeLesson as ScopeLesson
from active_memory.specialists.tasks.model import SuppliedLesson as SuppliedLesson
from active_memory.specialists.tasks.model import Task as Task
from active_memory.specialists.tasks.model import canonical_json as canonical_json
from active_memory.specialists.tasks.render import rendered_size as rendered_size
from active_memory.specialists.tasks.render import task_text as task_text
