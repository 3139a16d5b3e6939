"""The postmortem's engine (being implemented)."""

from __future__ import annotations

from pathlib import Path

from active_memory.checkout import Checkout
from active_memory.config import RuntimeConfig
from active_memory.orchestrator.options import PostmortemLimits, Progress
from active_memory.orchestrator.report import PostmortemReport
from active_memory.orchestrator.sessions import SessionFactory
from active_memory.prompts import Prompts
from active_memory.runlog.record import RunRecord
from active_memory.store import LessonStore


class Postmortem:
    """One postmortem run."""

    def __init__(
        self,
        record: RunRecord,
        config: RuntimeConfig,
        store: LessonStore,
        *,
        checkout: Checkout | None,
        sessions: SessionFactory | None,
        dry_run: bool,
        progress: Progress | None,
        limits: PostmortemLimits,
        journal_dir: Path | None,
        prompts: Prompts | None,
    ) -> None:
        self.record = record

    async def run(self) -> PostmortemReport:
        """Run it."""
        raise NotImplementedError
