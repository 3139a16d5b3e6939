"""The worker's progress on stderr: a live rich display on a terminal, plain lines
otherwise (and in CI)."""

from __future__ import annotations

import logging
import os
from typing import Any

from active_memory.worker.engine import WorkerEvent

_DONE_STYLE = {
    "done": "green",
    "failed": "red",
    "lost": "yellow",
    "error": "red",
    "retry": "yellow",
    "released": "yellow",
}


class OneLineLog(logging.Handler):
    """What the libraries under the worker log (the connection pool's retries while the
    store is away, a specialist's crash) as one line each on the worker's stderr, never
    a traceback; `ACTIVE_MEMORY_DEBUG=1` keeps the tracebacks."""

    def __init__(self, display: WorkerDisplay) -> None:
        super().__init__(logging.WARNING)
        self.display = display

    def emit(self, record: logging.LogRecord) -> None:
        """Say the record in one line (its exception as `Type: message`)."""
        try:
            text = " ".join(record.getMessage().split())
            failure = record.exc_info[1] if record.exc_info else None
            if failure is not None:
                text += f" ({type(failure).__name__}: {' '.join(str(failure).split())})"
            self.display.say(f"{record.name}: {text}"[:2000])
        except Exception:  # a log line must never stop the worker
            self.handleError(record)


class WorkerDisplay:
    """Receives `WorkerEvent`s (on the event loop: never blocks long)."""

    def __init__(self) -> None:
        from rich.console import Console

        self.console = Console(stderr=True, highlight=False)
        if not os.environ.get("ACTIVE_MEMORY_DEBUG"):
            logging.getLogger().addHandler(OneLineLog(self))
        self.live = self.console.is_terminal and not os.environ.get("CI")
        self._tasks: dict[int, Any] = {}
        self._progress: Any = None
        if self.live:
            from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            self._progress = Progress(
                SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                console=self.console, transient=True,
            )  # fmt: skip
            self._progress.start()

    def say(self, text: str) -> None:
        """One line of the worker's own (its start, the store away, the daily cap)."""
        self.console.print(f"worker: {text}", soft_wrap=True, markup=False)

    def event(self, event: WorkerEvent) -> None:
        """Show one step."""
        entry = event.entry
        if entry is None:
            self.say(event.detail)
            return
        name = f"#{entry.id} {entry.harness} {entry.session_id[:12]}"
        if event.stage == "retrying":
            self.console.print(f"{name}: {event.detail}", soft_wrap=True, markup=False)
            return
        if event.stage == "claimed" and self.live:
            self._tasks[entry.id] = self._progress.add_task(f"{name}: postmortem", total=None)
            return
        task = self._tasks.pop(entry.id, None)
        if task is not None:
            self._progress.remove_task(task)
        if event.stage == "claimed":
            line = f"{name}: claimed (attempt {entry.attempts})"
        else:
            line = f"{name}: {event.stage}" + (f": {event.detail}" if event.detail else "")
        style = _DONE_STYLE.get(event.stage, "")
        self.console.print(line, style=style, soft_wrap=True, markup=False)

    def close(self) -> None:
        """Stop the live display (and its log handler)."""
        root = logging.getLogger()
        for handler in [h for h in root.handlers if isinstance(h, OneLineLog)]:
            if handler.display is self:
                root.removeHandler(handler)
        if self._progress is not None:
            self._progress.stop()
