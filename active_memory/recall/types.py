"""The values recall passes around: a tool call, what it touched (its `Signals`, read by
signals.py), where it happens, and what it receives.

These are on the per-tool-call path of a hook process, which must start fast: plain
classes with `__slots__` over the builtins only (no dataclasses, typing, pathlib or
pydantic at run time; each of those costs a hook process milliseconds to import).
"""

from __future__ import annotations

import os

from active_memory.session_budget import DEFAULT_BUDGET_BYTES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any, Literal

    MatchKind = Literal["file", "folder", "identifier", "command", "keywords"]
    SkipReason = Literal["delivered_before", "over_budget", "unchecked"]

MATCH_SCORES: dict[str, int] = {
    "file": 1000,
    "folder": 800,
    "identifier": 700,
    "command": 600,
    "keywords": 500,
}
"""SPEC §8 scores; a card counts only its strongest match."""

ALL_SCOPES: frozenset[str] = frozenset({"repository", "graph"})


class ToolCall:
    """One tool call as a harness reports it, before (or just after) it runs.

    `tool_input` is the tool's arguments exactly as the harness sent them; recall reads
    signals from them and never stores them. `cwd` is the tool's working directory
    (absolute), `session` the provider session ID (the budget ledger's key), `agent` the
    sub-agent the call came from (Claude Code's `agent_id`; None: the main agent), and
    `call_id` the harness's ID of the call (Claude Code's `tool_use_id`), which its later
    context events name (recall/contexts.py).
    """

    __slots__ = ("agent", "call_id", "cwd", "harness", "session", "tool", "tool_input")

    def __init__(
        self,
        harness: str,
        tool: str,
        tool_input: Mapping[str, Any],
        session: str | None = None,
        cwd: str | None = None,
        agent: str | None = None,
        call_id: str | None = None,
    ) -> None:
        self.agent = agent
        self.call_id = call_id
        self.harness = harness
        self.tool = tool
        self.tool_input = tool_input
        self.session = session
        self.cwd = cwd

    def __repr__(self) -> str:
        return f"ToolCall({self.harness!r}, {self.tool!r}, session={self.session!r})"


MAX_PATHS = 64
MAX_IDENTIFIERS = 64
MAX_TERMS = 256
MAX_COMMANDS = 16
MAX_LOOKUPS = 16
MAX_TEXT = 64 * 1024
"""Bounds on what one call contributes, so a huge command costs no more than a big one
(`MAX_LOOKUPS`: bare shell words checked for existence, shell_paths.py)."""


class Signals:
    """What a tool call touched: root-relative `paths`, `identifiers`, lowercase `terms`,
    and the command `families` of a shell call (`commands`).

    `folders` are the other readings of a relative path (the working directory's and the
    workspace root's), matched against folder associations only: they are not the file
    the call touched, so neither a file match nor a receipt comes from them.
    """

    __slots__ = ("commands", "folders", "identifiers", "paths", "terms")

    def __init__(self) -> None:
        self.paths: dict[str, None] = {}  # ordered set
        self.folders: dict[str, None] = {}
        self.identifiers: dict[str, None] = {}
        self.terms: set[str] = set()
        self.commands: dict[str, None] = {}

    def __repr__(self) -> str:
        return (
            f"Signals(paths={list(self.paths)}, folders={list(self.folders)}, "
            f"identifiers={list(self.identifiers)}, terms={sorted(self.terms)}, "
            f"commands={list(self.commands)})"
        )

    def add_commands(self, families: Iterable[str]) -> None:
        """Record command families (at most `MAX_COMMANDS`)."""
        for family in families:
            if len(self.commands) >= MAX_COMMANDS:
                return
            self.commands[family] = None


class RecallContext:
    """Where a tool call happens and what it may receive (docs/recall.md, "Identity").

    - `state_dir`: `<zeroshot state dir>/active-memory`; recall keeps its own files under
      `recall_dir` (`state_dir/recall`).
    - `run_key`: whose snapshot and receipts: `run:<ACTIVE_MEMORY_RUN_ID>`, else
      `session:<provider session>`.
    - `session`: the provider session whose budget and deliveries the ledger counts.
    - `repository`: the repository namespace (`repo:github.com/acme/api`), or None when
      unknown (then nothing is recalled during the work).
    - `workspace_root`: the absolute checkout root tool paths are made relative to.
    - `graph_hash`, `node`: the graph scope frozen with the snapshot (None: none).
    - `budget_bytes`: the session's total budget (SPEC §2 `budgetBytes`).
    - `store`: the lesson store to freeze from (None: `ACTIVE_MEMORY_STORE` / default).
    - `scopes`: which scopes are on (`activeMemory.repository` / `.graph`).
    - `exclude`: the `exclude` path globs (settings.py): excluded paths give no signal.
    - `dry_run`: look only: no snapshot is written, no budget spent, no receipt kept
      (`active-memory recall`).
    """

    __slots__ = (
        "budget_bytes",
        "dry_run",
        "exclude",
        "graph_hash",
        "node",
        "repository",
        "run_key",
        "scopes",
        "session",
        "state_dir",
        "store",
        "workspace_root",
    )

    def __init__(
        self,
        *,
        state_dir: str,
        run_key: str,
        session: str,
        repository: str | None,
        workspace_root: str,
        graph_hash: str | None = None,
        node: str | None = None,
        budget_bytes: int = DEFAULT_BUDGET_BYTES,
        store: str | None = None,
        scopes: frozenset[str] = ALL_SCOPES,
        dry_run: bool = False,
        exclude: tuple[str, ...] = (),
    ) -> None:
        self.state_dir = state_dir
        self.run_key = run_key
        self.session = session
        self.repository = repository
        self.workspace_root = workspace_root
        self.graph_hash = graph_hash
        self.node = node
        self.budget_bytes = budget_bytes
        self.store = store
        self.scopes = scopes
        self.dry_run = dry_run
        self.exclude = exclude

    @property
    def recall_dir(self) -> str:
        """The folder of recall's own state files (snapshots, ledgers, receipts, log)."""
        return os.path.join(self.state_dir, "recall")

    def replace(self, **changes: Any) -> RecallContext:
        """A copy with some fields changed."""
        fields = {name: getattr(self, name) for name in self.__slots__}
        fields.update(changes)
        return RecallContext(**fields)

    def __repr__(self) -> str:
        return (
            f"RecallContext(run_key={self.run_key!r}, session={self.session!r}, "
            f"repository={self.repository!r}, node={self.node!r})"
        )


class CardHit:
    """One card a tool call matched: why (`match`, `score`) and its rendered text.

    `cited`: the card's revision date and fingerprinted cited ranges (index.py), checked
    when the card is about to be admitted; `stale`: the ranges found changed then (the
    text then carries the stale line, recall/stale.py), else empty.
    """

    __slots__ = ("cited", "id", "match", "ordinal", "revision", "score", "stale", "text")

    def __init__(
        self,
        id: str,
        revision: int,
        score: int,
        match: MatchKind,
        text: str,
        ordinal: int = 0,
        cited: Any = None,
    ) -> None:
        self.id = id
        self.revision = revision
        self.score = score
        self.match: MatchKind = match
        self.text = text
        self.ordinal = ordinal  # rank in lesson-ID order inside its snapshot
        self.cited = cited
        self.stale: tuple[str, ...] = ()

    @property
    def size(self) -> int:
        """The rendered card's size in UTF-8 bytes (what it costs in the budget)."""
        return len(self.text.encode("utf-8"))

    def to_json(self) -> dict[str, Any]:
        """SPEC §10's card entry: id, revision, score, match; a stale card adds
        `"stale": true` and the changed ranges (`cited_code_changed`)."""
        entry: dict[str, Any] = {
            "id": self.id, "revision": self.revision, "score": self.score, "match": self.match
        }  # fmt: skip
        if self.stale:
            entry["stale"] = True
            entry["cited_code_changed"] = list(self.stale)
        return entry

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CardHit):
            return NotImplemented
        return (self.id, self.revision, self.score, self.match, self.text) == (
            other.id,
            other.revision,
            other.score,
            other.match,
            other.text,
        )

    def __hash__(self) -> int:
        return hash((self.id, self.revision))

    def __repr__(self) -> str:
        return f"CardHit({self.id} r{self.revision}, {self.match} {self.score})"


class Skipped:
    """A matched card that was not delivered, and why."""

    __slots__ = ("hit", "reason")

    def __init__(self, hit: CardHit, reason: SkipReason) -> None:
        self.hit = hit
        self.reason: SkipReason = reason

    def __repr__(self) -> str:
        return f"Skipped({self.hit!r}, {self.reason})"


class RecallAnswer:
    """What one tool call receives.

    `cards`: admitted cards in delivery order; `context`: their framed text ("" when
    none); `budget_left`: the session's budget after this answer; `skipped`: matched
    cards left out and why; `paths`: root-relative paths the call touched (its receipt's).
    """

    __slots__ = ("budget_left", "cards", "context", "paths", "skipped")

    def __init__(
        self,
        cards: tuple[CardHit, ...] = (),
        context: str = "",
        budget_left: int = DEFAULT_BUDGET_BYTES,
        skipped: tuple[Skipped, ...] = (),
        paths: tuple[str, ...] = (),
    ) -> None:
        self.cards = cards
        self.context = context
        self.budget_left = budget_left
        self.skipped = skipped
        self.paths = paths

    def to_json(self) -> dict[str, Any]:
        """SPEC §10 `recall --json`: cards, context, budget_left (plus `skipped`)."""
        return {
            "cards": [hit.to_json() for hit in self.cards],
            "context": self.context,
            "budget_left": self.budget_left,
            "skipped": [{**item.hit.to_json(), "reason": item.reason} for item in self.skipped],
        }

    def __repr__(self) -> str:
        return f"RecallAnswer({list(self.cards)!r}, budget_left={self.budget_left})"
