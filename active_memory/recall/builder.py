"""`python -m active_memory.recall.builder RECALL_DIR STORE KIND REPOSITORY HASH NODE`.

The detached process a hook starts to build a large scope's first generation
(snapshot.py, `_detach_if_large`); a module of its own so that `-m` does not load
`snapshot` twice.
"""

from __future__ import annotations

import sys

from active_memory.recall.snapshot import build_detached

if __name__ == "__main__":
    build_detached(sys.argv[1:])
