"""`answer_tool_call`: the one function every transport calls to answer a tool call.

The command hook (one process per call) and the recall server (resident) both go
through it, so they cannot disagree. In order:

1. signals from the call (signals.py), resolved inside the workspace root; paths the
   `exclude` setting names are dropped, and a call that touched only excluded paths
   gets nothing at all (no receipt, no card);
2. the tool receipt, recorded for the run whether or not anything matches;
3. the generations the run pinned, pinned now at its first call (pins.py); a run pinned
   to a store version no generation holds yet reads it from the store (direct.py);
4. the ledger of the call's context (the session, or a sub-agent's own: contexts.py),
   under its lock: matches are walked lazily in delivery order (match.iter_matches),
   told before every step how large a card may still be, so cards that cannot fit are
   skipped inside the posting lists and never looked at; cards already delivered are
   skipped; the admitted cards are framed and charged (ledger.py), one delivery line
   per card written for the run record and flushed to the disk before the ledger moves
   on and the answer leaves (`answer_with_commit` lets the recall server do that flush
   in a worker thread while its event loop answers other calls).

A dry-run context (`active-memory recall`) does steps 1, 3 and a read-only 4, and lists
every match (its report shows each skipped card and why).
"""

from __future__ import annotations

from active_memory.recall.contexts import pending_id
from active_memory.recall.environment import resolve_context
from active_memory.recall.harness import hook_output, parse_payload
from active_memory.recall.index import SnapshotIndex
from active_memory.recall.ledger import admit, ledger_path, read_state
from active_memory.recall.match import iter_matches, match
from active_memory.recall.records import RECEIPT_PATHS, record_receipt
from active_memory.recall.signals import extract_signals
from active_memory.recall.snapshot import pin_graph, repository_index
from active_memory.recall.types import RecallAnswer
from active_memory.session_budget import budget_left

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

    from active_memory.recall.ledger import Commit
    from active_memory.recall.signals import Signals
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
    return answer_with_commit(call, context, cache=cache, defer_sync=False)[0]


def answer_with_commit(
    call: ToolCall,
    context: RecallContext,
    *,
    cache: SnapshotCache | None = None,
    defer_sync: bool = True,
) -> tuple[RecallAnswer, Commit | None]:
    """`answer_tool_call`, leaving a delivering call's disk flush to the caller: the
    answer and, when a card was admitted, the `ledger.Commit` the caller must run (or
    abandon) before the answer may leave; until then the session stays locked. The
    recall server answers on its event loop and runs the commit in a worker thread."""
    if "repository" not in context.scopes:
        return RecallAnswer(budget_left=context.budget_bytes), None
    signals = extract_signals(call, context.workspace_root)
    if context.exclude and not _drop_excluded(signals, context.exclude):
        # The call touched only excluded paths: no signal, no receipt, no card.
        state = read_state(ledger_path(context))
        return RecallAnswer(budget_left=budget_left(context.budget_bytes, state.spent)), None
    paths = tuple(signals.paths)[:RECEIPT_PATHS]
    if not context.dry_run:
        record_receipt(context, call.tool, paths, call.agent)
        _pin_graph_part(context, cache)
    index = cache.repository_index(context) if cache is not None else repository_index(context)
    if index is None or not (
        signals.paths or signals.identifiers or signals.terms or signals.commands
    ):
        state = read_state(ledger_path(context))
        left = budget_left(context.budget_bytes, state.spent)
        return RecallAnswer(budget_left=left, paths=paths), None
    hits: Iterable[CardHit]
    if not isinstance(index, SnapshotIndex):  # a run pinned to a version: the store's cards
        walk = index.walk(signals)
        hits, floor = (list(walk) if context.dry_run else walk), 0
    elif context.dry_run:
        hits, floor = match(index, signals), 0
    else:
        hits, floor = iter_matches(index, signals), index.min_card
    admitted, skipped, text, left, commit = admit(
        context, hits, floor=floor, pending=pending_id(call), defer_sync=defer_sync
    )
    return RecallAnswer(tuple(admitted), text, left, tuple(skipped), paths), commit


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


def _drop_excluded(signals: Signals, exclude: tuple[str, ...]) -> bool:
    """Remove excluded paths and folders from `signals`; False when the call touched
    excluded paths and nothing else (then its words are about them too, and are dropped)."""
    from active_memory.exclusion import excluded_of

    dropped = excluded_of(signals.paths, exclude)
    for path in dropped:
        del signals.paths[path]
    for folder in excluded_of(signals.folders, exclude):
        del signals.folders[folder]
    return not (dropped and not signals.paths)


def _pin_graph_part(context: RecallContext, cache: SnapshotCache | None) -> None:
    # The node's first recall pins its graph scope too, so `instructions` and the hooks
    # see the same lessons.
    if cache is not None:
        cache.pin_graph(context)
    else:
        pin_graph(context)
