"""The files that explain a repeated failure beyond what its calls name: for repository
discovery, so that a lesson about a command that touches no file (`git push` without an
upstream, a `git commit` a hook refuses, `git add` of an ignored folder, `make test`
refused by the suite's set-up) has something current to cite.

For each repeated-failure item, in the items' order, each file at most once and only
when it is a current file of the checkout:

1. the files its failures' errors name (`lib/x.ex:57:13: …`, `make: *** [Makefile:5:
   test]`), read against the call's working folder, then the root;
2. the ignore rule's file of every ignored path its failures or their resolutions name
   (`git check-ignore -v`: `.gitignore`, `priv/.gitignore`);
3. what configures or documents the command (gather_command_files.py): the file that
   defines it in each folder it and its resolution ran in (`web/package.json` for `cd
   web && npm run build`), a test run's set-up (`tests/conftest.py`), the hooks and
   instructions of `git commit` and `git push`, the checkers its errors name
   (`.credo.exs`);
4. when none of its calls or its resolution names a current file: the files the run
   edited before its first failure, the latest first (the work the command acted on:
   what was committed, pushed or built), at most `EDITED_BEFORE_SHOWN`.

Git is asked through the postmortem's `CodeCache` (verdicts, ignore rules); nothing here
chooses what fits the bound.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from active_memory.checkout import GitFailed
from active_memory.evidence import EvidenceItem
from active_memory.evidence.repeated_failures import failures_behind
from active_memory.runlog.receipts import relative_path
from active_memory.runlog.record import RunRecord, ToolFailure
from active_memory.specialists.tasks.gather_command_files import command_files, run_folders
from active_memory.specialists.tasks.gather_failures import EDIT_TOOLS
from active_memory.specialists.tasks.gather_files import CodeCache
from active_memory.specialists.tasks.gather_run import PATH_TOKEN, command_paths

EDITED_BEFORE_SHOWN = 6
"""Files edited before a failure that names none, shown per item at most."""

_ERROR_PATHS_MAX = 16


def failure_context_files(
    record: RunRecord, items: Sequence[EvidenceItem], cache: CodeCache | None
) -> list[str]:
    """The current files that explain the repeated-failure items of `items` (see the
    module docstring), in order, distinct; empty without a checkout."""
    if cache is None:
        return []
    checkout = record.repository.checkout if record.repository else None
    root = cache.checkout.root
    episodes: list[tuple[list[str], list[str], list[str]]] = []
    for item in items:
        if item.kind != "tool_failures" or item.family is None:
            continue
        failures = [f for group in failures_behind(record, item) for f in group]
        if not failures:
            continue
        configs = command_files(item.family, _folders(failures), (f.error for f in failures))
        present = [p for p in configs if (root / p).is_file()]
        times = [f.at for f in failures if f.at is not None]
        edited = _edited_before(record, min(times)) if times else []
        named = [*_error_paths(failures, checkout), *present]
        episodes.append((named, _call_paths(failures, checkout), edited))
    if not episodes:
        return []
    try:
        rules = cache.ignore_sources([p for _, own, _ in episodes for p in own])
        sources = {p: source for p, (source, _) in rules.items() if not source.startswith("/")}
        asked = [
            p
            for named, own, edited in episodes
            for p in [*named, *own, *(sources[x] for x in own if x in sources), *edited]
        ]
        verdicts = cache.verdicts(list(dict.fromkeys(asked)))
    except GitFailed:
        return []
    found: dict[str, None] = {}
    for named, own, edited in episodes:
        ignore_rules = [sources[p] for p in own if p in sources]
        found.update(dict.fromkeys(p for p in [*named, *ignore_rules] if verdicts[p].current))
        if not any(verdicts[p].current for p in own):
            found.update(dict.fromkeys(p for p in edited if verdicts[p].current))
    return list(found)


def _folders(failures: Sequence[ToolFailure]) -> list[str]:
    """The folders the failures' commands and their resolutions ran in."""
    found: dict[str, None] = {}
    for failure in failures:
        cwd = failure.cwd or ""
        found.update(dict.fromkeys(run_folders(failure.command, cwd)))
        if failure.resolved_by is not None:
            found.update(dict.fromkeys(run_folders(failure.resolved_by.command, cwd)))
    return list(found)


def _call_paths(failures: Sequence[ToolFailure], checkout: str | None) -> list[str]:
    """The paths the failures and their resolutions recorded or name on their command
    lines, root-relative, distinct."""
    found: dict[str, None] = {}
    for failure in failures:
        cwd = failure.cwd or ""
        found.update(dict.fromkeys(failure.paths))
        found.update(dict.fromkeys(command_paths(failure.command, cwd, checkout)))
        resolved = failure.resolved_by
        if resolved is not None:
            found.update(dict.fromkeys(command_paths(resolved.command, cwd, checkout)))
    return [p for p in found if p]


def _error_paths(failures: Sequence[ToolFailure], checkout: str | None) -> list[str]:
    """The paths the failures' errors name, each read against the call's working folder
    and the root (unverified), in order of first mention."""
    found: dict[str, None] = {}
    for failure in failures:
        cwd = (failure.cwd or "").strip("/")
        for match in PATH_TOKEN.finditer(failure.error):
            text = match.group(1).rstrip(".")
            if text.startswith("/"):
                relative = relative_path(text, checkout)
                found.update(dict.fromkeys([relative] if relative else []))
                continue
            for base in dict.fromkeys([cwd, ""]):
                joined = relative_path(f"{base}/{text}" if base else text, None)
                if joined:
                    found.setdefault(joined, None)
        if len(found) >= _ERROR_PATHS_MAX:
            break
    return list(found)[:_ERROR_PATHS_MAX]


def _edited_before(record: RunRecord, first: datetime) -> list[str]:
    """The files the run's file tools wrote before `first`, the latest edit first."""
    latest: dict[str, datetime] = {}
    for receipt in record.receipts:
        at = receipt.at
        if receipt.tool in EDIT_TOOLS and at is not None and at < first:
            for path in receipt.paths:
                latest[path] = max(at, latest.get(path, at))
    ordered = sorted(latest, key=lambda p: latest[p], reverse=True)
    return ordered[:EDITED_BEFORE_SHOWN]
