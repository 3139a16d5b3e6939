"""The lesson store: `LessonStore` over its two dialects, and where a store lives.

The names below load on first use (PEP 562), so a hook process can import the lean
`active_memory.store.changes` or the session-end hook's `active_memory.store.enqueue` (the
standard library's `sqlite3` only) without pydantic.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from active_memory.store.announce import on_store_change as on_store_change
    from active_memory.store.lesson_store import LessonStore as LessonStore
    from active_memory.store.location import default_store_path as default_store_path
    from active_memory.store.location import resolve_store_location as resolve_store_location
    from active_memory.store.models import ImportReport as ImportReport
    from active_memory.store.models import LessonQuery as LessonQuery
    from active_memory.store.opening import open_store as open_store
    from active_memory.store.queue import QueueEntry as QueueEntry
    from active_memory.store.queue import SessionEnd as SessionEnd
    from active_memory.store.queue_store import PostmortemQueue as PostmortemQueue

_LAZY = {
    "default_store_path": "active_memory.store.location",
    "resolve_store_location": "active_memory.store.location",
    "on_store_change": "active_memory.store.announce",
    "open_store": "active_memory.store.opening",
    "ImportReport": "active_memory.store.models",
    "LessonQuery": "active_memory.store.models",
    "LessonStore": "active_memory.store.lesson_store",
    "PostmortemQueue": "active_memory.store.queue_store",
    "QueueEntry": "active_memory.store.queue",
    "SessionEnd": "active_memory.store.queue",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
