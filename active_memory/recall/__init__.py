"""Recall (SPEC §8): pinned generations, inverted indexes, signals, session budgets, cards.

Public API (see docs/recall.md):

- `answer_tool_call(call, context, cache=None) -> RecallAnswer`: the one function every
  transport (command hook, recall server) calls to answer a tool call;
- `parse_payload(harness, payload) -> ToolCall` and `hook_output(harness, answer)`: a
  harness's hook JSON in and out;
- `resolve_context(call, env) -> RecallContext`: run, session, namespace, budget;
- `SnapshotCache`: generations kept open by a resident process, shared between runs;
- `graph_cards(context)`: a node's pinned graph lessons (for `instructions`).

Everything imported here is standard library only, because the hook process imports
this package on every tool call.
"""

from __future__ import annotations

from active_memory.recall.engine import answer_hook as answer_hook
from active_memory.recall.engine import answer_tool_call as answer_tool_call
from active_memory.recall.environment import resolve_context as resolve_context
from active_memory.recall.harness import PayloadError as PayloadError
from active_memory.recall.harness import hook_output as hook_output
from active_memory.recall.harness import parse_payload as parse_payload
from active_memory.recall.snapshot import SnapshotCache as SnapshotCache
from active_memory.recall.snapshot import graph_cards as graph_cards
from active_memory.recall.types import CardHit as CardHit
from active_memory.recall.types import RecallAnswer as RecallAnswer
from active_memory.recall.types import RecallContext as RecallContext
from active_memory.recall.types import ToolCall as ToolCall
