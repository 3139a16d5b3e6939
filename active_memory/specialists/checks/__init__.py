"""The checks an answer must pass before anything of it is published (SPEC §5, §6).

- `core`: the schema, size, evidence, scope and citation checks, and the two entry
  points `check_discovery` / `check_maintenance`;
- `safety`: the safety rules (no repair turn, no detail beyond the rule's name);
- `content`: what a card says (task summaries, generic advice, a graph lesson restating
  its node's instructions, associations every task touches);
- `results`: what the checks yield.
"""

from active_memory.specialists.checks.core import MAX_PROPOSALS as MAX_PROPOSALS
from active_memory.specialists.checks.core import check_discovery as check_discovery
from active_memory.specialists.checks.core import check_maintenance as check_maintenance
from active_memory.specialists.checks.results import AcceptedProposal as AcceptedProposal
from active_memory.specialists.checks.results import DiscoveryResult as DiscoveryResult
from active_memory.specialists.checks.results import Failed as Failed
from active_memory.specialists.checks.results import MaintenanceResult as MaintenanceResult
from active_memory.specialists.checks.results import Reconciled as Reconciled
from active_memory.specialists.checks.results import Rejection as Rejection
