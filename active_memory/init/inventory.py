"""Find finished local runs and decide, per run, whether init may learn from it.

Sources: zeroshot native run ledgers (`runs/<run_id>/runs.sqlite3` under the zeroshot
and zeroshot-rust state dirs) read by the zeroshot importer, and run record files
(`*.json`, recursively) under `--runs DIR`. Every run is either selected (with its
resolved checkout) or excluded with a kind and a reason; one bad run never blocks
another.

A run that recorded no workspace (zeroshot's native ledger never does) is resolved
against the checkouts the user names with `--checkout DIR`: a candidate is accepted
only when one of its remotes is the run's repository namespace and it holds the
recorded `source.revision` as a commit; two such candidates exclude the run as
`ambiguous_checkout`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from active_memory.checkout.git import GitFailed, NotACheckout, run_git, worktree_root
from active_memory.errors import UsageError
from active_memory.init.checkouts import remote_namespaces, root_commits
from active_memory.init.ignore import opted_out
from active_memory.runlog.importers.common import namespace_from_remote
from active_memory.runlog.importers.zeroshot import import_ledger
from active_memory.runlog.record import RunRecord, Terminal, load_run_record, parse_run_record
from active_memory.store.location import zeroshot_state_dir

ExclusionKind = Literal[
    "unreadable",
    "unfinished",
    "opted_out",
    "missing_checkout",
    "ambiguous_checkout",
    "unprovable",
]


@dataclass(frozen=True, slots=True)
class Candidate:
    """A checkout named with `--checkout`: its top folder and its remotes' namespaces."""

    root: Path
    remotes: tuple[str, ...]

    def holds_commit(self, revision: str) -> bool:
        """Whether `revision` names a commit present in this checkout."""
        if not revision or revision.startswith("-"):
            return False  # never let a recorded value reach git as an option
        try:
            run_git(self.root, ["cat-file", "-e", f"{revision}^{{commit}}"])
        except GitFailed:
            return False
        return True


def candidate_roots(folders: Sequence[str | Path]) -> tuple[str, ...]:
    """The sorted, distinct working-tree tops of `--checkout` folders; UsageError if one
    is not a git working tree."""
    roots: set[str] = set()
    for folder in folders:
        try:
            roots.add(str(worktree_root(Path(folder).expanduser().absolute())))
        except NotACheckout as exc:
            reason = f"--checkout {folder}: not a git working tree ({exc.reason})"
            raise UsageError(reason) from None
    return tuple(sorted(roots))


def _candidates_of(roots: Sequence[str]) -> tuple[Candidate, ...]:
    return tuple(Candidate(Path(root), remote_namespaces(Path(root))) for root in roots)


@dataclass(frozen=True, slots=True)
class Selected:
    """A run init learns from: its record and its checkout's top folder."""

    source: str
    record: RunRecord
    checkout: Path

    def to_json(self) -> dict[str, Any]:
        """The inventory entry shown to the host."""
        record = self.record
        assert record.repository is not None
        graph = record.graph
        return {
            "run_id": record.run_id,
            "source": self.source,
            "repository": record.repository.namespace,
            "aliases": sorted(record.repository.aliases),
            "workspace": str(self.checkout),
            "graph": {"name": graph.name if graph else None, "hash": graph.hash if graph else None},
        }


@dataclass(frozen=True, slots=True)
class Excluded:
    """A run init leaves out, and why."""

    source: str
    run_id: str | None
    kind: ExclusionKind
    reason: str

    def to_json(self) -> dict[str, Any]:
        """The exclusion entry shown to the host."""
        return {
            "run_id": self.run_id,
            "source": self.source,
            "kind": self.kind,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class Inventory:
    """Every run found, selected or excluded."""

    selected: tuple[Selected, ...]
    excluded: tuple[Excluded, ...]


def state_dirs(environ: Mapping[str, str]) -> list[Path]:
    """The zeroshot (SPEC §7) and zeroshot-rust state dirs, existing ones only."""
    home = Path(environ.get("HOME") or Path.home())
    xdg = environ.get("XDG_STATE_HOME")
    rust = environ.get("ZEROSHOT_RUST_STATE_DIR")
    candidates = [
        zeroshot_state_dir(environ),
        Path(rust) if rust else Path(xdg) / "zeroshot-rust" if xdg else None,
        home / ".local" / "state" / "zeroshot-rust",
    ]
    found: list[Path] = []
    for candidate in candidates:
        if candidate is not None and candidate.is_dir() and candidate not in found:
            found.append(candidate)
    return found


def ledgers(environ: Mapping[str, str]) -> list[Path]:
    """`runs/<run_id>/runs.sqlite3` files under the state dirs, sorted."""
    return [
        file
        for folder in state_dirs(environ)
        for file in sorted(folder.glob("runs/*/runs.sqlite3"))
    ]


def _candidates(
    runs_dir: Path | None, environ: Mapping[str, str]
) -> Iterator[tuple[str, RunRecord] | Excluded]:
    for file in ledgers(environ):
        try:
            result = import_ledger(file)
        except UsageError as exc:
            yield Excluded(str(file), None, "unreadable", str(exc))
            continue
        for skipped in result.skipped:
            kind: ExclusionKind = "unfinished" if "not finished" in skipped.reason else "unreadable"
            yield Excluded(str(file), skipped.run_id, kind, skipped.reason)
        for run in result.runs:
            yield str(file), parse_run_record(run.record, str(file))
    if runs_dir is None:
        return
    for file in sorted(runs_dir.rglob("*.json")):
        try:
            yield str(file), load_run_record(file)
        except UsageError as exc:
            yield Excluded(str(file), None, "unreadable", str(exc))


def take_inventory(
    runs_dir: Path | None,
    ignore_repos: Sequence[str],
    ignore_graphs: Sequence[str],
    environ: Mapping[str, str] | None = None,
    checkouts: Sequence[str] = (),
    tick: Callable[[], None] | None = None,
) -> Inventory:
    """Find every run and select or exclude it; `checkouts` are candidate working-tree
    tops (see `candidate_roots`) for runs that recorded no workspace. `tick` is called
    once per run found (progress)."""
    env = os.environ if environ is None else environ
    candidates = _candidates_of(checkouts)
    selected: list[Selected] = []
    excluded: list[Excluded] = []
    for found in _candidates(runs_dir, env):
        if tick is not None:
            tick()
        if isinstance(found, Excluded):
            excluded.append(found)
            continue
        source, record = found
        verdict = _judge(source, record, ignore_repos, ignore_graphs, candidates)
        if isinstance(verdict, Selected):
            selected.append(verdict)
        else:
            excluded.append(verdict)
    selected.sort(key=lambda s: s.record.run_id)
    return Inventory(tuple(selected), tuple(excluded))


def _judge(
    source: str,
    record: RunRecord,
    ignore_repos: Sequence[str],
    ignore_graphs: Sequence[str],
    candidates: Sequence[Candidate] = (),
) -> Selected | Excluded:
    run_id = record.run_id
    if not any(isinstance(stored.event, Terminal) for stored in record.events):
        return Excluded(source, run_id, "unfinished", "the event log has no terminal event")
    reason = opted_out(record, ignore_repos, ignore_graphs)
    if reason is not None:
        return Excluded(source, run_id, "opted_out", reason)
    repository = record.repository
    if repository is None or not repository.checkout:
        return _resolve(source, record, candidates)
    try:
        root = worktree_root(repository.checkout)
    except NotACheckout as exc:
        if candidates:  # recorded on another machine: a --checkout may be its repository
            found = _resolve(source, record, candidates)
            if isinstance(found, Selected):
                return found
            why = found.reason.removeprefix("the run recorded no workspace, and ")
            return Excluded(source, run_id, found.kind, f"{exc}; {why}")
        return Excluded(source, run_id, "missing_checkout", str(exc))
    problem = _unproven(record, root)
    if problem is not None:
        return Excluded(source, run_id, "unprovable", problem)
    return Selected(source, record, root)


def _unproven(record: RunRecord, root: Path) -> str | None:
    """Why the checkout is not proven to be the run's repository, or None."""
    assert record.repository is not None
    remotes = remote_namespaces(root)
    if record.repository.remote:
        wanted = namespace_from_remote(record.repository.remote) or record.repository.namespace
        if wanted in remotes:
            return None
        return f"the checkout's remotes ({', '.join(remotes) or 'none'}) do not include {wanted}"
    # No recorded remote: the folder alone proves nothing; the run's revision must share
    # the checkout's root commits (its repository ID).
    revision = record.source.revision if record.source else None
    if not revision:
        return "no recorded remote and no recorded revision to prove the repository"
    theirs = root_commits(root, revision)
    if not theirs:
        return f"no recorded remote, and revision {revision[:12]} is not a commit of {root}"
    if theirs != root_commits(root):
        return f"no recorded remote, and revision {revision[:12]} has other root commits"
    return None


def _resolve(
    source: str, record: RunRecord, candidates: Sequence[Candidate]
) -> Selected | Excluded:
    """A run without a recorded workspace: the one named checkout proven to be its own."""
    run_id = record.run_id
    if not candidates:
        return Excluded(
            source,
            run_id,
            "missing_checkout",
            "the run recorded no workspace; name its checkout with --checkout DIR",
        )
    namespace = record.repository.namespace if record.repository is not None else None
    revision = record.source.revision if record.source is not None else None
    if not namespace or not revision:
        return Excluded(
            source,
            run_id,
            "missing_checkout",
            "the run recorded no workspace, and no repository and revision to match a "
            "--checkout against",
        )
    matching = [c for c in candidates if namespace in c.remotes and c.holds_commit(revision)]
    if not matching:
        return Excluded(
            source,
            run_id,
            "missing_checkout",
            f"the run recorded no workspace, and no --checkout has a remote {namespace} "
            f"and the commit {revision[:12]}",
        )
    if len(matching) > 1:
        roots = ", ".join(str(c.root) for c in matching)
        return Excluded(
            source,
            run_id,
            "ambiguous_checkout",
            f"the run recorded no workspace, and several --checkout folders have a remote "
            f"{namespace} and the commit {revision[:12]}: {roots}",
        )
    return Selected(source, record, matching[0].root)
