"""A run record from one settled harness session, joined with what its hooks recorded.

`import_harness_session` is what the postmortem queue's worker and `active-memory import
claude|codex` call. It runs the harness's transcript importer (claude.py, codex.py, through
their public entry points), then joins the session's own hook records, kept under the
recall state dir per run key `session:<provider session>` (recall/records.py):

- **deliveries**: the cards the hooks (command or server) delivered to the session, one
  per `(session, lesson, revision)`. Present as a list (possibly empty) when there is
  evidence the hooks ran for the session: a receipt or delivery file for its run key or
  its budget ledger. Absent (None) otherwise: with no evidence the hooks ran, nobody can
  say what the session received, and maintenance abstains (SPEC §6).
- **receipts**: the hook's receipts are the exact ones (recall's own tool name, paths
  resolved against each call's working directory and the workspace root, the time the
  call was made). When the hooks recorded any, they replace the transcript's receipts of
  the tools the hook sees; the transcript's receipts are kept only for tools outside the
  hook's view (Claude Code's matcher covers `HOOKED_TOOLS["claude"]`; Codex's hook sees
  every tool, so its transcript receipts are all replaced). Without hook receipts the
  transcript's receipts stand. The run record's own bound applies to the joined list
  (SPEC §3: at most 512, the first 256 and the latest 256 by time).

Decisions are written in docs/importers.md ("Sessions joined with their hooks").
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from active_memory.credential_gate import mask_value
from active_memory.errors import EmptySession, InvalidRecord, UsageError

# Imported with this module, not inside the join: the worker joins sessions in several
# threads at once, and two threads initialising the `recall` package together can see
# it half-imported (ImportError: cannot import name 'admit' ...).
from active_memory.recall.environment import find_checkout_root
from active_memory.recall.ledger import ledger_path_for
from active_memory.recall.records import (
    RECEIPTS_FILE,
    has_records,
    read_deliveries,
    read_receipts,
    rewrite_records,
)
from active_memory.runlog.importers.common import ImportedRun, ImportResult, checked
from active_memory.runlog.importers.privacy import Scrubber, apply_exclusion, clean_paths, seal
from active_memory.runlog.importers.session import agent_node
from active_memory.runlog.record import RunRecord, parse_run_record
from active_memory.settings import SettingsError, effective_settings
from active_memory.store.location import state_dir

Harness = Literal["claude", "codex", "pi", "gemini", "copilot", "opencode", "hermes"]

GEMINI_MATCHER = (
    "read_file|read_many_files|write_file|replace|edit|run_shell_command|glob|"
    "grep_search|search_file_content|list_directory"
)
"""`hooks/installers/gemini.py MATCHER` (repeated: the importers do not import hooks/)."""

HOOKED_TOOLS: dict[str, frozenset[str] | None] = {
    # The tools `hook install claude` matches (hooks/installers/claude.py MATCHER).
    "claude": frozenset(
        {"Read", "Edit", "MultiEdit", "Write", "NotebookEdit", "Grep", "Glob", "Bash"}
    ),
    "codex": None,  # no matcher: the hook sees every tool call
    "pi": None,  # the extension's tool_result sees every tool call
    # The tools `hook install gemini` matches (hooks/installers/gemini.py MATCHER).
    "gemini": frozenset(GEMINI_MATCHER.split("|")),
    "copilot": None,  # no matcher: preToolUse sees every tool call
    "opencode": None,  # tool.execute.after sees every call that returned (not a throw)
    "hermes": None,  # transform_tool_result sees every tool call
}
"""Per harness, the tool names whose receipts the hook records (None: all)."""

HOOK_MISSES_ERRORS = frozenset({"opencode"})
"""Harnesses whose recall hook never runs for a call the tool threw on (OpenCode calls
`tool.execute.after` only with a result): the transcript's receipts of such calls are
kept beside the hook's."""

DATABASE_HARNESSES = frozenset({"opencode", "hermes"})
"""Clients whose sessions live in one database: the import names the session."""

_SESSION_NODE = "worker"
"""The node of a session's run record (importers/session_record.py): hook receipts get
it too."""
_AGENT_PREFIX = f"{_SESSION_NODE}/agent-"
"""Sub-agent nodes (`worker/agent-<id>`, importers/session_record.py `agent_node`)."""


def import_harness_session(
    harness: Harness | str,
    transcript: Path | str,
    *,
    session_id: str | None,
    cwd: Path | str | None,
    env: Mapping[str, str],
) -> RunRecord:
    """The run record of one harness session, with its hooks' deliveries and receipts.

    `session_id` is the provider session the hooks keyed their records by (the hook
    payload's `session_id`); None takes the one the transcript names. `cwd` fills the
    record's checkout when the transcript names none. `env` locates the state dir
    (`ZEROSHOT_STATE_DIR`, `XDG_STATE_HOME`, `HOME`). Raises `InvalidRecord` (a
    `UsageError`) when the transcript holds no session to import or the harness has no
    session importer.
    """
    transcript = Path(transcript)
    result = _import(harness, transcript, session_id)
    if not result.runs:
        reasons = "; ".join(skipped.reason for skipped in result.skipped[:3]) or "empty"
        turnless = result.skipped and all(
            s.reason.startswith("no user turn") for s in result.skipped
        )
        if turnless or _empty_file(transcript):
            # A session that never had a turn (or a log with nothing in it): nothing to
            # learn, which is not the transcript's fault.
            raise EmptySession(str(transcript), f"no turn in the {harness} session log ({reasons})")
        raise InvalidRecord(str(transcript), f"no run in the {harness} session log ({reasons})")
    run = result.runs[0]
    if harness in DATABASE_HARNESSES:  # the root of a continued session: its own key
        session_id = session_of(run.record, harness) or session_id
    data = join_hook_records(
        run.record,
        harness,
        session_id=session_id,
        cwd=Path(cwd) if cwd else None,
        env=env,
        linked=run.linked,
    )
    data, _ = exclude_paths(data, env)
    run.record = data
    seal_session(run, harness, session_id=session_id, env=env)
    return parse_run_record(run.record, str(transcript))


def seal_session(
    run: ImportedRun, harness: str, *, session_id: str | None, env: Mapping[str, str]
) -> int:
    """Mask `run`'s record once everything is joined into it (privacy.py `seal`), and
    rewrite the session's hook files without its `<private>` passages and credentials;
    returns how many
    private mentions the record had. Counted into the run's report when it has one."""
    data, masked = seal(run.record, run.private)
    run.record = checked(data, str(data.get("run_id", "<session>")))
    session = session_id or session_of(run.record, harness)
    if session:
        recall_dir = os.path.join(state_dir(env), "recall")
        scrubber = Scrubber(private=run.private)
        for key in (session, *run.linked):
            rewrite_records(recall_dir, f"session:{key}", lambda n, r: _clean(n, r, scrubber))
    if run.report is not None and masked:
        counts = run.report.setdefault("private", {})
        counts["masked"] = counts.get("masked", 0) + masked
    return masked


def _clean(name: str, record: dict[str, Any], scrubber: Scrubber) -> dict[str, Any] | None:
    # A hook record without the session's private passages: a receipt's path that held
    # one is dropped, a receipt left with no path with it; other strings are masked.
    # Credentials are masked too (a hook that predates the lean screen wrote them raw).
    out: dict[str, Any] = mask_value(scrubber.value(record))
    if name == RECEIPTS_FILE and isinstance(record.get("paths"), list):
        left, dropped = clean_paths(record["paths"], scrubber)
        if dropped and not left:
            return None
        out["paths"] = mask_value(left)
    return out


def exclude_paths(
    data: dict[str, Any], env: Mapping[str, str]
) -> tuple[dict[str, Any], dict[str, int]]:
    """`data` without the paths the `exclude` setting of its checkout names (privacy.py),
    and the counts for the import report. Raises `UsageError` for an invalid settings
    file: a record is never imported past an exclusion nobody could read."""
    checkout = (data.get("repository") or {}).get("checkout")
    root = find_checkout_root(checkout) if isinstance(checkout, str) and checkout else None
    try:
        patterns = effective_settings(root or checkout, env, use_env=False).exclude
    except SettingsError as exc:
        raise UsageError(f"{exc}; fix the file or move it away") from None
    out, counts = apply_exclusion(data, patterns)
    return (checked(out, str(out.get("run_id", "<session>"))) if counts["paths"] else out), counts


def join_hook_records(
    record: Mapping[str, Any],
    harness: str,
    *,
    session_id: str | None = None,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    linked: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """`record` (a session's run record as built by its importer) joined with its hooks'
    receipts and deliveries; validated and bounded like every imported record.
    `linked`: other provider sessions of the run and the node of each (ImportedRun)."""

    environment = os.environ if env is None else env
    session = session_id or session_of(record, harness)
    data = dict(record)
    if cwd is not None:
        repository = dict(data.get("repository") or {})
        if not repository.get("checkout"):
            repository["checkout"] = str(cwd)
            data["repository"] = repository
    if not session:
        return checked(data, str(data.get("run_id", "<session>")))
    recall_dir = os.path.join(state_dir(environment), "recall")
    hook_receipts: list[dict[str, Any]] = []
    deliveries: list[dict[str, Any]] = []
    hooks_ran = False
    for key, node in {session: "", **(linked or {})}.items():
        run_key = f"session:{key}"
        for item in read_receipts(recall_dir, run_key):
            hook_receipts.append({**item, "node": node} if node else item)
        deliveries += read_deliveries(recall_dir, run_key)
        hooks_ran = (
            hooks_ran
            or has_records(recall_dir, run_key)
            or os.path.exists(ledger_path_for(recall_dir, key))
        )
    if hook_receipts:
        data["receipts"] = _joined_receipts(harness, data.get("receipts") or [], hook_receipts)
    if hooks_ran:
        data["deliveries"] = [_delivery(item) for item in deliveries if _valid(item)]
    else:
        data.pop("deliveries", None)
    return checked(data, str(data.get("run_id", run_key)))


def session_of(record: Mapping[str, Any], harness: str) -> str | None:
    """The provider session a session importer's record names (`<harness>-<session>`)."""
    run_id = record.get("run_id")
    prefix = f"{harness}-"
    if isinstance(run_id, str) and run_id.startswith(prefix) and len(run_id) > len(prefix):
        return run_id[len(prefix) :]
    return None


def _empty_file(path: Path) -> bool:
    try:
        return path.stat().st_size == 0
    except OSError:
        return False


def _import(harness: str, transcript: Path, session_id: str | None = None) -> ImportResult:
    if harness in DATABASE_HARNESSES:
        return import_session_database(harness, transcript, session_id)
    if harness == "claude":
        from active_memory.runlog.importers.claude import import_transcript

        return import_transcript(transcript)
    if harness == "codex":
        from active_memory.runlog.importers.codex import import_rollout

        return import_rollout(transcript)
    if harness in ("pi", "gemini", "copilot"):
        return import_session_log(harness, transcript)
    raise InvalidRecord(str(transcript), f"no session importer for harness {harness!r}")


def _joined_receipts(
    harness: str, transcript: list[dict[str, Any]], hooks: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    hooked = HOOKED_TOOLS.get(harness)
    joined = [_hook_receipt(item) for item in hooks if isinstance(item.get("tool"), str)]
    if harness in HOOK_MISSES_ERRORS:
        joined.extend(_unmatched(transcript, joined))
    if hooked is not None:
        joined.extend(item for item in transcript if item.get("tool") not in hooked)
        if not any(isinstance(item.get("agent"), str) for item in hooks):
            joined = _keep_subagents(joined, transcript, hooked)
    # The record's validator orders by time (when all have one) and applies the cap.
    return joined


def _unmatched(
    transcript: list[dict[str, Any]], hooks: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    # The transcript's receipts the hook has no twin of (same node, tool and paths): the
    # calls it never saw. Each hook receipt stands for one transcript receipt.
    def key(item: Mapping[str, Any]) -> tuple[Any, ...]:
        return (item.get("node") or _SESSION_NODE, item.get("tool"),
                tuple(item.get("paths") or ()))  # fmt: skip

    left: dict[tuple[Any, ...], int] = {}
    for item in hooks:
        left[key(item)] = left.get(key(item), 0) + 1
    missed = []
    for item in transcript:
        if left.get(key(item), 0) > 0:
            left[key(item)] -= 1
        else:
            missed.append(item)
    return missed


def _keep_subagents(
    joined: list[dict[str, Any]], transcript: list[dict[str, Any]], hooked: frozenset[str]
) -> list[dict[str, Any]]:
    # Hooks that did not say which sub-agent made a call (a client without `agent_id`)
    # file every call under `worker`. The transcript knows better: its sub-agent
    # receipts of hooked tools are kept, and one hook receipt of the same tool and
    # paths each is dropped in their favour, so no call is counted twice.
    kept = list(joined)
    for item in transcript:
        node = item.get("node")
        if item.get("tool") not in hooked or not str(node).startswith(_AGENT_PREFIX):
            continue
        key = (item.get("tool"), tuple(item.get("paths") or ()))
        twin = next(
            (
                index
                for index, hook in enumerate(kept)
                if hook.get("node") == _SESSION_NODE
                and (hook.get("tool"), tuple(hook.get("paths") or ())) == key
            ),
            None,
        )
        if twin is not None:
            del kept[twin]
        kept.append(item)
    return kept


def _hook_receipt(item: Mapping[str, Any]) -> dict[str, Any]:
    agent = item.get("agent")
    receipt: dict[str, Any] = {
        "node": agent_node(agent)
        if isinstance(agent, str) and agent
        else item.get("node") or _SESSION_NODE,
        "tool": item["tool"],
        "paths": [path for path in item.get("paths") or () if isinstance(path, str)],
    }
    if isinstance(item.get("at"), str):
        receipt["at"] = item["at"]
    return receipt


def _valid(item: Mapping[str, Any]) -> bool:
    revision = item.get("revision")
    return (
        isinstance(item.get("session"), str)
        and isinstance(item.get("lesson"), str)
        and isinstance(revision, int)
        and not isinstance(revision, bool)
        and revision >= 1
    )


def _delivery(item: Mapping[str, Any]) -> dict[str, Any]:
    delivery = {"session": item["session"], "lesson": item["lesson"], "revision": item["revision"]}
    if isinstance(item.get("at"), str):
        delivery["at"] = item["at"]
    return delivery


def import_session_database(
    harness: str, path: Path | str, session_id: str | None = None
) -> ImportResult:
    """Run the OpenCode or Hermes importer on their database at `path` (every root
    session, or only `session_id`'s)."""
    if harness == "opencode":
        from active_memory.runlog.importers.opencode import import_database as import_opencode

        return import_opencode(path, session_id)
    from active_memory.runlog.importers.hermes import import_database as import_hermes

    return import_hermes(path, session_id)


def import_session_log(harness: str, path: Path | str) -> ImportResult:
    """Run the Pi, Gemini CLI or Copilot CLI session importer on `path`."""
    if harness == "pi":
        from active_memory.runlog.importers.pi import import_session as import_pi

        return import_pi(path)
    if harness == "gemini":
        from active_memory.runlog.importers.gemini import import_session as import_gemini

        return import_gemini(path)
    from active_memory.runlog.importers.copilot import import_session as import_copilot

    return import_copilot(path)
