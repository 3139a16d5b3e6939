"""One call of `active-memory init`: create or resume the session and advance it.

Phases: `discovery` (tasks waiting for answer files) → `complete` (the publication
receipt). A call after completion returns the saved receipt and changes nothing.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio

from active_memory.init.checkouts import fingerprint, identity
from active_memory.init.ignore import parse_list
from active_memory.init.inventory import candidate_roots, take_inventory
from active_memory.init.maintenance import maintain
from active_memory.init.phases import Discovery, discover
from active_memory.init.progress import Silent, Steps
from active_memory.init.publish import publish_session, verify_checkouts
from active_memory.init.session import STATE_SCHEMA, Options, Requested, Session, open_session
from active_memory.known_checkouts import remember_all
from active_memory.runlog.record import RunRecord, load_run_record
from active_memory.store import open_store

ANSWER_ACTION = (
    "answer every task in `tasks`: read its task_file (active-memory/exchange-task@1) and "
    "write its answer_file beside it (active-memory/exchange-answer@1, same specialist and "
    "digest; a task with `repair_of` is a repair: answer it again, corrected for its "
    "`failures`), then run this command again"
)
DONE_ACTION = "none: the session is complete; running it again returns the same receipt"
NOTHING_ACTION = (
    "none: no finished run to learn from was found ({found}); pass --runs DIR with run "
    "records (`active-memory import …` makes them from session logs), or --checkout DIR "
    "for runs recorded on another machine, and run this command again: nothing was saved"
)


def advance(
    directory: Path,
    *,
    store: str,
    runs_dir: Path | None = None,
    ignore_repos: Sequence[str] | None = None,
    ignore_graphs: Sequence[str] | None = None,
    environ: Mapping[str, str] | None = None,
    checkouts: Sequence[str | Path] | None = None,
    steps: Steps | None = None,
) -> dict[str, Any]:
    """Advance the session at `directory` as far as it can go; the JSON to print.

    An option left as None is omitted: a new session takes its default, a resume its
    saved value. `checkouts` are candidate checkouts for runs that recorded no
    workspace; a folder that is not a git working tree is a UsageError. `steps` is told
    each stage (reading the run history, discovery tasks, maintenance, publishing).
    """
    steps = steps or Silent()
    requested = Requested(
        parse_list(ignore_repos) if ignore_repos is not None else None,
        parse_list(ignore_graphs) if ignore_graphs is not None else None,
        str(runs_dir.expanduser().absolute()) if runs_dir is not None else None,
        candidate_roots(checkouts) if checkouts is not None else None,
    )
    with open_session(directory, requested) as (session, new):
        receipt = session.read("receipt.json")
        state: dict[str, Any] | None = (
            _start(session, requested.defaults(), environ, steps)
            if new
            else session.read("session.json")
        )
        assert state is not None
        head = {"session": str(session.path), "inventory": state["inventory"]}
        if new and not state["inventory"]["selected"]:
            # Nothing to do is no completed session: the next call looks again.
            (session.path / "session.json").unlink()
            excluded = len(state["inventory"]["excluded"])
            looked = f"{excluded} run(s) excluded, see inventory.excluded" if excluded else (
                "no run records or zeroshot ledgers")  # fmt: skip
            return {"phase": "complete", "next_action": NOTHING_ACTION.format(found=looked),
                    **head, "receipt": None}  # fmt: skip
        if receipt is not None:
            return {"phase": "complete", "next_action": DONE_ACTION, **head, "receipt": receipt}
        if session.read("publishing.json") is not None:
            # Every answer was in and checked: only the publication is left (or recovered).
            return anyio.run(_publish, session, state, store, None, head, steps)
        found = discover(_selected(session, state), session.exchange, steps)
        if found.pending:
            return _waiting("discovery", found, head)
        return anyio.run(_publish, session, state, store, found, head, steps)


def _waiting(phase: str, found: Discovery, head: dict[str, Any]) -> dict[str, Any]:
    tasks = [
        {
            "specialist": p.specialist,
            "digest": p.digest,
            "task_file": str(p.task_file),
            "answer_file": str(p.answer_file),
            # A repair task: the answer to `repair_of` was refused for `failures`.
            **(
                {"repair_of": str(p.repair_of), "failures": list(p.failures)}
                if p.repair_of is not None
                else {}
            ),
        }
        for p in found.pending
    ]
    return {"phase": phase, "next_action": ANSWER_ACTION, **head, "tasks": tasks}


def _start(
    session: Session, options: Options, environ: Mapping[str, str] | None, steps: Steps
) -> dict[str, Any]:
    """The first call: take the inventory, keep the selected records, save the state."""
    runs_dir = Path(options.runs_dir) if options.runs_dir is not None else None
    steps.stage("reading the run history")
    inventory = take_inventory(
        runs_dir,
        options.ignore_repos,
        options.ignore_graphs,
        environ,
        options.checkouts,
        tick=steps.advance,
    )
    shutil.rmtree(session.runs, ignore_errors=True)
    session.runs.mkdir(mode=0o700)
    selected = []
    for index, chosen in enumerate(inventory.selected):
        name = f"{index:04d}.json"
        session.write(
            f"runs/{name}", chosen.record.model_dump(mode="json", by_alias=True, exclude_none=True)
        )
        selected.append({**chosen.to_json(), "file": name})
    roots = sorted({str(s.checkout) for s in inventory.selected})
    # This machine learns where each repository is (known_checkouts.py).
    remember_all(((s.record.repository.namespace, s.checkout) for s in inventory.selected
                  if s.record.repository is not None), "init", environ)  # fmt: skip
    state = {
        "schema": STATE_SCHEMA,
        "options": options.to_json(),
        "inventory": {"selected": selected, "excluded": [x.to_json() for x in inventory.excluded]},
        "checkouts": {
            root: {"identity": identity(Path(root)), "fingerprint": fingerprint(Path(root))}
            for root in roots
        },
    }
    session.write("session.json", state)
    return state


def _selected(session: Session, state: dict[str, Any]) -> list[tuple[RunRecord, Path]]:
    return [
        (load_run_record(session.runs / entry["file"]), Path(entry["workspace"]))
        for entry in state["inventory"]["selected"]
    ]


async def _publish(
    session: Session,
    state: dict[str, Any],
    location: str,
    found: Discovery | None,
    head: dict[str, Any],
    steps: Steps,
) -> dict[str, Any]:
    """Maintenance (when `found` is given), then the one publication."""

    def verify() -> None:
        verify_checkouts(state["checkouts"])

    async with open_store(location) as store:
        if found is not None:
            steps.stage("maintenance tasks")
            await maintain(_selected(session, state), store, session.exchange, found)
            if found.pending:
                return _waiting("maintenance", found, head)
        steps.stage("publishing")
        receipt = await publish_session(
            session,
            store,
            verify=verify,
            mutations=found.mutations if found is not None else (),
            results=found.results if found is not None else (),
        )
    return {"phase": "complete", "next_action": DONE_ACTION, **head, "receipt": receipt}
