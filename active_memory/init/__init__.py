"""`active-memory init`: resumable initialisation from local run history (docs/init.md)."""

from __future__ import annotations

from active_memory.init.errors import InitRefused as InitRefused
from active_memory.init.errors import InitStopped as InitStopped
from active_memory.init.flow import advance as advance
