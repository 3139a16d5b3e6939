"""What `active-memory import` does to a log before any record is written: read it, file
its runs under a namespace when one is given, join what the harness's hooks recorded
(sessions), leave out excluded paths, then mask `<private>` text and credentials last,
once everything is joined (docs/importers.md, docs/privacy.md).

The worker imports one session through `harness_session.import_harness_session`, which
makes the same joins in the same order; this is the command's form of it, for a whole
log or database at once, with the import report's counts and warnings.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from active_memory.runlog.importers.common import ImportResult

# Nothing heavy at the top: `import`'s argument parser reads the kinds below when the
# CLI starts, and the importers load only when a log is read.

KINDS = ("zeroshot", "claude", "codex", "pi", "gemini", "copilot", "opencode", "hermes")
"""What `import` reads."""
SESSIONS = ("claude", "codex", "pi", "gemini", "copilot", "opencode", "hermes")
"""The kinds that are one harness session (joined with what its hooks recorded)."""
DATABASES = ("opencode", "hermes")
"""The kinds whose PATH is a database of many sessions (`--session` picks one)."""


def import_log(
    kind: str,
    path: str,
    *,
    session: str | None = None,
    namespace: str | None = None,
    env: Mapping[str, str] | None = None,
) -> ImportResult:
    """The runs of the log or database at `path`, ready to write: filed under `namespace`
    when given, joined with their hooks' records, excluded paths left out, sealed.
    Raises the importers' `InvalidRecord` (a `UsageError`) for a log it cannot read."""
    environment = os.environ if env is None else env
    result = _read(kind, path, session)
    if namespace is not None:
        _file_under(result, namespace)
    if kind in SESSIONS:
        _join_hooks(result, kind, environment)
    _exclude(result, environment)
    _seal(result, kind, environment)
    return result


def remember_checkouts(result: ImportResult) -> None:
    """This machine learns where each imported run's repository is (known_checkouts.py):
    the recorded checkout, when it is here and holds the run's namespace."""
    from active_memory.known_checkouts import remember_all

    pairs = []
    for run in result.runs:
        repository = run.record.get("repository")
        if isinstance(repository, dict) and repository.get("checkout"):
            pairs.append((str(repository.get("namespace") or ""), str(repository["checkout"])))
    remember_all(pairs, "import")


def _read(kind: str, path: str, session: str | None) -> ImportResult:
    if kind in DATABASES:
        from active_memory.runlog.importers.harness_session import import_session_database

        return import_session_database(kind, path, session)
    if kind == "zeroshot":
        from active_memory.runlog.importers.zeroshot import import_ledger

        return import_ledger(path)
    if kind == "claude":
        from active_memory.runlog.importers.claude import import_transcript

        return import_transcript(path)
    if kind in ("pi", "gemini", "copilot"):
        from active_memory.runlog.importers.harness_session import import_session_log

        return import_session_log(kind, path)
    from active_memory.runlog.importers.codex import import_rollout

    return import_rollout(path)


def _file_under(result: ImportResult, namespace: str) -> None:
    from active_memory.runlog.importers.common import aliases_for

    for run in result.runs:
        repository = dict(run.record.get("repository") or {})
        repository["namespace"] = namespace
        repository["aliases"] = aliases_for(namespace)
        run.record["repository"] = repository


def _join_hooks(result: ImportResult, harness: str, env: Mapping[str, str]) -> None:
    # The same join the postmortem queue's worker makes (import_harness_session): the
    # session's hook receipts and deliveries, recorded under the state dir.
    from active_memory.runlog.importers.harness_session import join_hook_records

    for run in result.runs:
        run.record = join_hook_records(run.record, harness, env=env, linked=run.linked)
        if "deliveries" not in run.record:
            run.warnings.append(
                "no hook records for this session under the state dir: `deliveries` left "
                "out, so maintenance will abstain (docs/importers.md)"
            )


def _exclude(result: ImportResult, env: Mapping[str, str]) -> None:
    # The `exclude` setting of each record's checkout: excluded paths never reach a
    # record (docs/privacy.md); the counts go into the session report.
    from active_memory.runlog.importers.harness_session import exclude_paths

    for run in result.runs:
        run.record, counts = exclude_paths(run.record, env)
        if run.report is not None:
            run.report["excluded"] = counts
        elif counts["paths"]:
            run.warnings.append(f"{counts['paths']} excluded paths left out (docs/privacy.md)")


def _seal(result: ImportResult, harness: str, env: Mapping[str, str]) -> None:
    # Last, once receipts and deliveries are joined: `<private>` text and credentials out
    # of every field, and out of the session's hook files (docs/privacy.md).
    from active_memory.runlog.importers.harness_session import seal_session
    from active_memory.runlog.importers.privacy import seal

    for run in result.runs:
        if harness in SESSIONS:
            seal_session(run, harness, session_id=None, env=env)
        else:  # a zeroshot run: no prompts of its own to hold `<private>`, credentials
            run.record, _ = seal(run.record)
