"""The background builder: `python -m active_memory.recall.builder RECALL_DIR STORE KIND
REPOSITORY GRAPH_HASH NODE` brings one scope's generation up to the store and exits.

Started by `background.start_builder` (hooks, `serve`, writers), never waited for. It
runs at the lowest CPU priority (`nice` 19: a cache; on an idle machine it still runs at
full speed), holds the scope's builder lock while it builds (building.settle), resumes
a complete build an earlier builder left unfinished (full_build.py), writes failures to
`<recall dir>/builder.log`, and removes the `starting` marker as it exits.
"""

from __future__ import annotations

import os
import sys
import time

from active_memory.recall.background import STARTING
from active_memory.recall.generations import scope_dir

NICE = 19
"""The builder's CPU priority: the lowest. It is a cache; on an idle machine it runs at
full speed, and a tool call's hook never waits behind it."""
LOG_FILE = "builder.log"


def main(argv: list[str]) -> int:
    """The builder process: settle one scope, log a failure, remove the marker."""
    from active_memory.recall.building import settle
    from active_memory.store.changes import ScopeKey

    if len(argv) != 6:
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    recall_dir, location, kind, repository, graph_hash, node = argv
    scope = ScopeKey(kind, repository=repository or None, graph_hash=graph_hash or None,
                     node=node or None)  # fmt: skip
    try:  # noqa: SIM105 - best effort: a builder at normal priority still builds
        os.nice(NICE)
    except (OSError, AttributeError):
        pass
    folder = scope_dir(recall_dir, location, scope)
    try:
        settle(recall_dir, location, scope)
    except Exception as exc:
        _log(recall_dir, f"{kind} {repository or node}: {type(exc).__name__}: {exc}")
        return 1
    finally:
        try:  # noqa: SIM105 - the marker only stops duplicate starts
            os.unlink(os.path.join(folder, STARTING))
        except OSError:
            pass
    return 0


def _log(recall_dir: str, message: str) -> None:
    from active_memory.credential_gate import mask
    from active_memory.recall.files import append_line

    stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
    # An error may quote the store's URL (a PostgreSQL password): masked before it rests.
    line = f"{stamp} {mask(' '.join(message.split()))}"
    try:  # noqa: SIM105 - a builder that cannot log still exits
        append_line(os.path.join(recall_dir, LOG_FILE), line)
    except OSError:
        pass


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
