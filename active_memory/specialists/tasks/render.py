"""How a task reads in the prompt: its JSON text, and a file's content as numbered lines.

`task_text(task)` is the rendering the prompt shows: compact JSON in the models' field
order (run first, lessons after the evidence): a model reads it as well as indented JSON,
which costs about 40% more bytes (`bench/task_size_bench.py`). `rendered_size(task)` is
its UTF-8 bytes, which is what every bound on a task measures. `numbered_lines` renders a
file's first bytes as `"N: text"` entries within a budget of rendered bytes (`line_cost`
each).
"""

from __future__ import annotations

import codecs
from json.encoder import encode_basestring

from active_memory.specialists.tasks.bound import cut_utf8
from active_memory.specialists.tasks.model import DiscoveryTask, MaintenanceTask

# What one numbered line costs in the task's compact JSON beyond its quoted, escaped
# text: the comma after it.
_LINE_OVERHEAD = 1


def task_text(task: MaintenanceTask | DiscoveryTask) -> str:
    """A task's JSON as the prompt shows it: compact, in field order (the reading order:
    run, evidence with its executions, lessons, then the code), UTF-8 kept. pydantic's
    serializer: fast enough to measure a task several times while fitting it."""
    # The task a builder measured last is the one it returns and the prompt then shows:
    # its text is kept for that one task (tasks are frozen; identity, not equality).
    last = _LAST_TEXT[0]
    if last is not None and last[0] is task:
        return last[1]
    text = task.model_dump_json()
    _LAST_TEXT[0] = (task, text)
    return text


_LAST_TEXT: list[tuple[MaintenanceTask | DiscoveryTask, str] | None] = [None]


def rendered_size(task: MaintenanceTask | DiscoveryTask) -> int:
    """UTF-8 bytes of `task_text(task)`: what the model receives of the task."""
    return len(task_text(task).encode("utf-8"))


def line_cost(text: str) -> int:
    """Bytes `text` takes as one entry of a file's content list in the task's JSON (the
    JSON string as `json.dumps(text, ensure_ascii=False)` spells it, and its comma)."""
    return len(encode_basestring(text).encode("utf-8")) + _LINE_OVERHEAD


def numbered_lines(data: bytes, *, final: bool, budget: int) -> tuple[list[str], int, bool, int]:
    """`data` (a file's first bytes) as `"N: text"` lines within `budget` rendered bytes.

    Returns the lines, how many bytes of `data` they show, whether anything of the file
    is left out, and the rendered bytes the lines take. A file cut inside a line loses
    that partial line, unless it is the first: a one-line file too long for the bound is
    cut at a character boundary.
    """
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    # Not final: an incomplete character at the cut is held back, not mangled.
    text = decoder.decode(data, final=final)
    raw = text.split("\n")
    if raw and raw[-1] == "" and (final or len(raw) > 1):
        raw.pop()  # the newline that ends the last line starts no new one
    partial_last = not final and not text.endswith("\n")
    lines: list[str] = []
    shown = 0
    used = 0
    for number, line in enumerate(raw, start=1):
        if partial_last and number == len(raw) and number > 1:
            break
        entry = f"{number}: {line}"
        cost = line_cost(entry)
        if used + cost > budget:
            if number == 1:  # cut the first line itself rather than show nothing
                room = max(0, budget - _LINE_OVERHEAD - 16)
                kept, _ = cut_utf8(line, room // 2)  # escapes may double a character
                lines.append(f"1: {kept}")
                shown = len(kept.encode("utf-8"))
                used = line_cost(lines[0])
            break
        lines.append(entry)
        used += cost
        newline = number < len(raw) or text.endswith("\n")
        shown += len(line.encode("utf-8")) + (1 if newline else 0)
    shown = min(shown, len(data))
    return lines, shown, not final or shown < len(data), used
