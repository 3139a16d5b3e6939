"""`answer_tool_call`: the one function every transport calls to answer a tool call.

The command hook (one process per call) and the recall server (resident) both go
through it, so they cannot disagree. In order:

1. signals from the call (signals.py), resolved inside the workspace root;
2. the tool receipt, recorded for the run whether or not anything matches;
3. the run's frozen snapshot, found or frozen now (snapshot.py), its index matched;
4. the session ledger, under its lock: cards already delivered or over the remaining
   budget are skipped, the rest framed and charged (ledger.py), and one delivery line
   per card written for the run record.

A dry-run context (`active-memory recall`) does steps 1, 3 and a read-only 4.
"""

from __future__ import annotations

import os

from active_memory.recall.environment import resolve_context
from active_memory.recall.harness import hook_output, parse_payload
from active_memory.recall.ledger import admit, ledger_path, read_state
from active_memory.recall.match import match
from active_memory.recall.records import RECEIPT_PATHS, record_receipt
from active_memory.recall.signals import extract_signals
from active_memory.recall.snapshot import graph_cards, graph_file, repository_index
from active_memory.recall.types import RecallAnswer

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from active_memory.recall.snapshot import SnapshotCache
    from active_memory.recall.types import CardHit, RecallContext, ToolCall


def answer_tool_call(
    call: ToolCall, context: RecallContext, *, cache: SnapshotCache | None = None
) -> RecallAnswer:
    """Answer one tool call: the cards it receives, framed, and the session's budget left.

    `cache` keeps opened snapshots between calls (the recall server); without it the
    snapshot is opened from disk (a hook process). Blocking: it takes a file lock and,
    at a run's first call, reads the store; an async caller runs it in a worker thread.
    Raises on internal errors; the hook entry points turn any error into "no context".
    """
    if "repository" not in context.scopes:
        return RecallAnswer(budget_left=context.budget_bytes)
    signals = extract_signals(call, context.workspace_root)
    paths = tuple(signals.paths)[:RECEIPT_PATHS]
    if not context.dry_run:
        record_receipt(context, call.tool, paths)
        _freeze_graph_part(context, cache)
    hits: list[CardHit] = []
    index = cache.repository_index(context) if cache is not None else repository_index(context)
    if index is not None and (signals.paths or signals.identifiers or signals.terms):
        hits = match(index, signals)
    if not hits:
        state = read_state(ledger_path(context))
        left = max(0, context.budget_bytes - state.spent)
        return RecallAnswer(budget_left=left, paths=paths)
    admitted, skipped, text, left = admit(context, hits)
    return RecallAnswer(tuple(admitted), text, left, tuple(skipped), paths)


def answer_hook(
    harness: str,
    payload: Any,
    env: Mapping[str, str],
    *,
    cache: SnapshotCache | None = None,
) -> dict[str, Any]:
    """Answer one harness hook call end to end: the JSON object to send back.

    `harness` is `claude`, `codex` or `after-tool`; `payload` the decoded hook JSON;
    `env` the complete environment recall reads (for the server: its own environment
    updated with the variables the hook forwarded). `{}` means "no context". Raises
    `PayloadError` for a malformed payload and any internal error as is.
    """
    call = parse_payload(harness, payload)
    answer = answer_tool_call(call, resolve_context(call, env), cache=cache)
    return hook_output(harness, answer) or {}


def _freeze_graph_part(context: RecallContext, cache: SnapshotCache | None) -> None:
    # The run's first recall freezes its whole scope, the node's graph lessons included,
    # so `instructions` and the hooks see the same snapshot.
    path = graph_file(context)
    if path is None or os.path.exists(path):
        return
    if cache is not None:
        cache.graph_cards(context)
    else:
        graph_cards(context)
