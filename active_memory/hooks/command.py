"""The command hook: one process per tool call, stdin JSON in, stdout JSON out.

`active-memory-hook session-end HARNESS` enqueues a finished session instead
(`hooks/session_end.py`), and `active-memory-hook context HARNESS [EVENT]` applies a context
event (a batch handed back, a new prompt, a compaction: `recall/contexts.py`; EVENT names
the event when the payload does not, as Copilot CLI's); both print nothing.

OpenCode's and Hermes' plugins call `after-tool` (with `harness` in the payload).

Run as `active-memory-hook claude|codex|gemini|copilot|pi|after-tool`, `python -m
active_memory.hooks.command claude`, or `active-memory hook claude` (the same code behind
the full CLI). The first two import only what answering needs: the standard library and
`active_memory.recall` (pydantic, anyio and SQLite load only when a run's first call
reads the store's changes).

A hook never fails the tool call: whatever goes wrong (bad stdin, unreadable snapshot or
store, full disk), it prints nothing, exits 0, and writes one line to
`<zeroshot state dir>/active-memory/recall/hook.log` (`hooks/hook_log.py`).

When the recall server has announced itself (`<state dir>/active-memory/server.json`
exists), its thin client `active_memory.hooks.client.ask_server(harness, stdin_bytes,
env=env)` is asked first: it returns the object to print (`{}`: print nothing) or None
when no server answered, and then the call is answered here.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

USAGE = (
    "usage: active-memory-hook claude|codex|gemini|copilot|pi|after-tool  (hook JSON on "
    "stdin), active-memory-hook session-end claude|codex|opencode|pi|gemini|copilot|hermes, "
    "or active-memory-hook context claude|codex|gemini|pi|copilot|opencode [EVENT]"
)


def respond(harness: str, data: bytes, env: Mapping[str, str]) -> str | None:
    """The hook's stdout for one payload (None: print nothing). Raises on any problem."""
    from active_memory.recall import jsonio
    from active_memory.recall.harness import HARNESSES

    if harness not in HARNESSES:
        raise ValueError(f"unknown harness {harness!r}; {USAGE}")
    answered = _ask_server(harness, data, env)
    if answered is not None:
        return jsonio.dumps(answered) if answered else None
    from active_memory.recall.engine import answer_hook

    payload: Any = jsonio.loads(data.decode("utf-8"))
    output = answer_hook(harness, payload, env)
    return jsonio.dumps(output) if output else None


SERVER_DISCOVERY_FILE = "server.json"
"""Written by a running `active-memory serve` under the state dir (hooks/paths.py)."""


def _ask_server(harness: str, data: bytes, env: Mapping[str, str]) -> dict[str, Any] | None:
    # The client is imported only when a server has announced itself: without one, its
    # imports would cost every tool call for nothing.
    from active_memory.store.location import state_dir

    if not os.path.exists(os.path.join(state_dir(env), SERVER_DISCOVERY_FILE)):
        return None
    try:
        from active_memory.hooks import client
    except ImportError:
        return None
    answer: dict[str, Any] | None = client.ask_server(harness, data, env=env)
    return answer


def _context_event(arguments: Sequence[str], data: bytes, env: Mapping[str, str]) -> None:
    from active_memory.recall import jsonio
    from active_memory.recall.contexts import handle_event

    if len(arguments) not in (1, 2):
        raise ValueError(USAGE)
    event = arguments[1] if len(arguments) == 2 else None
    from active_memory.hooks import compaction

    client = arguments[0].lower()  # `Claude` is claude
    if compaction.handles(client):
        compaction.handle(client, jsonio.loads(data.decode("utf-8")), env)
        return
    handle_event(client, jsonio.loads(data.decode("utf-8")), env, event)


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    """Answer one hook call from stdin; always 0 (errors are logged, never raised)."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    environment = os.environ if env is None else env
    harness = (arguments[0] if arguments else "").lower()  # `Claude` is claude
    if harness in ("-h", "--help", "--version"):  # a person, not a harness, is asking
        from active_memory import __version__

        usage = "" if harness == "--version" else f"{USAGE}\n"
        sys.stdout.write(f"active-memory-hook {__version__}\n{usage}")
        return 0
    if environment.get("ACTIVE_MEMORY_HOOK_PROBE"):  # `hook doctor` runs us as a harness would
        from active_memory.hooks.hook_probe import probe_answer

        sys.stdout.write(f"{probe_answer(environment, ' '.join(arguments[:2]))}\n")
        return 0
    from active_memory.private import use_private_umask

    previous_umask = use_private_umask()  # logs, ledgers, snapshots: owner only
    if harness == "session-end":
        from active_memory.hooks import session_end

        return session_end.main(arguments[1:], environment)
    from active_memory.recall import pins

    built_in_call, pins.BUILD_IN_CALL = pins.BUILD_IN_CALL, False  # never wait for a build
    try:
        from active_memory.reader import MAX_STDIN_BYTES, read_stream

        data = read_stream(sys.stdin.buffer, MAX_STDIN_BYTES)
        if data is None:
            raise ValueError(f"stdin holds more than {MAX_STDIN_BYTES} bytes; no card given")
        if harness == "context":
            _context_event(arguments[1:], data, environment)
            return 0
        output = respond(harness, data, environment)
        if output is not None:
            sys.stdout.write(output + "\n")
            sys.stdout.flush()
    except BaseException as exc:  # a hook must never fail the tool call
        from active_memory.hooks.hook_log import log_error

        log_error(harness, exc, environment)
    finally:
        os.umask(previous_umask)
        pins.BUILD_IN_CALL = built_in_call
    return 0


def run() -> None:
    """Console-script entry point (`active-memory-hook`).

    Ends with `os._exit` once the answer is flushed: tearing down the interpreter (module
    cleanup, garbage collection) would cost the tool call time for nothing, and every file
    this process wrote is already closed.
    """
    code = main()
    try:  # noqa: SIM105 - contextlib would cost every hook process an import
        sys.stdout.flush()
    except BaseException:  # a closed stdout: nothing more to say
        pass
    os._exit(code)


if __name__ == "__main__":
    run()
