"""The runtime JSON (SPEC §2): zeroshot's runtime plan plus `activeMemory` and `globalAgents`.

`load_runtime_config(CONFIG, GRAPH)` reads both files, validates the plan, resolves the
postmortem's source node against the authored graph and returns a `RuntimeConfig`: the
validated settings, which scopes recall and collect, and the `SpecialistLane` the four
specialists inherit. Every violation raises `ConfigError` naming the JSON path; unknown
keys of the plan are kept so the plan round-trips unchanged (`RuntimeSettings.plan_json`).

| module | what it holds |
|---|---|
| `fields.py` | the checked values: strict booleans and integers, model IDs, env names |
| `models.py` | the runtime JSON's models, defaults and bounds (`budgetBytes`, `timeoutMs`) |
| `parse.py` | a parsed document → `RuntimeSettings`, violations in our words |
| `source_node.py` | `sourceNode` resolved against the graph: `SpecialistLane`, `RuntimeConfig` |
| `files.py` | reading the runtime JSON and the graph file; `load_runtime_config` |

The names below are the public API; import them from `active_memory.config`.
"""

from active_memory.config.fields import ConnectionKey as ConnectionKey
from active_memory.config.fields import Connections as Connections
from active_memory.config.fields import EnvList as EnvList
from active_memory.config.fields import EnvName as EnvName
from active_memory.config.fields import ModelId as ModelId
from active_memory.config.fields import NodeName as NodeName
from active_memory.config.fields import StrictBool as StrictBool
from active_memory.config.files import load_runtime_config as load_runtime_config
from active_memory.config.files import parse_graph as parse_graph
from active_memory.config.files import read_json_file as read_json_file
from active_memory.config.models import DEFAULT_TIMEOUT_MS as DEFAULT_TIMEOUT_MS
from active_memory.config.models import PROVIDERS_BY_HARNESS as PROVIDERS_BY_HARNESS
from active_memory.config.models import TIMEOUT_MS_RANGE as TIMEOUT_MS_RANGE
from active_memory.config.models import ActiveMemorySettings as ActiveMemorySettings
from active_memory.config.models import AgentBinding as AgentBinding
from active_memory.config.models import Binding as Binding
from active_memory.config.models import Effort as Effort
from active_memory.config.models import GitDeliveryBinding as GitDeliveryBinding
from active_memory.config.models import GlobalAgents as GlobalAgents
from active_memory.config.models import PostmortemSettings as PostmortemSettings
from active_memory.config.models import RunSize as RunSize
from active_memory.config.models import RuntimeSettings as RuntimeSettings
from active_memory.config.models import Scope as Scope
from active_memory.config.models import SessionScope as SessionScope
from active_memory.config.parse import parse_runtime_settings as parse_runtime_settings
from active_memory.config.source_node import RuntimeConfig as RuntimeConfig
from active_memory.config.source_node import SpecialistLane as SpecialistLane
from active_memory.config.source_node import resolve_config as resolve_config
from active_memory.config.source_node import resolve_lane as resolve_lane
