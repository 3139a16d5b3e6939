"""The Active Memory init skill for the user's own agent, and where each client keeps it.

A skill is a folder with a `SKILL.md` (YAML front matter `name` and `description`, then
Markdown instructions) that the client lists to its model and loads on demand:

| client | project | user |
|---|---|---|
| Claude Code | `<checkout>/.claude/skills/<name>/` | `~/.claude/skills/<name>/` |
| Codex | `<checkout>/.agents/skills/<name>/` | `~/.agents/skills/<name>/` |

(`$CLAUDE_CONFIG_DIR/skills` replaces `~/.claude/skills` when that variable is set.)

(Checked with the real binaries, Claude Code 2.1.332 and Codex 0.171: `claude -p`
lists both in its `init` event's `skills`; `codex debug prompt-input` lists both roots.)

Ours carries a marker line; installing writes or refreshes only a `SKILL.md` that is
absent or ours, uninstalling removes only ours. A skill of the same name that is not ours
(in our folder, or another folder of the same root declaring our `name`) is a conflict:
nothing is written (`SkillConflict`, exit 2).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from string import Template
from typing import Literal

from active_memory.errors import UsageError
from active_memory.hooks.installers import find_project_root
from active_memory.hooks.installers.files import FileChange, read_text
from active_memory.lessons import (
    KEYWORD_GROUP_MAX_TERMS,
    KEYWORD_GROUP_MIN_TERMS,
    RECOMMENDATION_MAX_BYTES,
    TITLE_MAX_BYTES,
)

Client = Literal["claude", "codex"]
Where = Literal["project", "user"]
CLIENTS: tuple[Client, ...] = ("claude", "codex")

SKILL_NAME = "active-memory-init"
MARKER = "<!-- active-memory: generated skill; `active-memory skill install` refreshes it -->"
DESCRIPTION = (
    "Initialise Active Memory from this machine's finished agent runs, driving the resumable "
    "`active-memory init` command until its session is complete and answering its discovery "
    "and maintenance tasks with fresh subagents. Use when the user asks to set up or "
    "initialise Active Memory, or to learn lessons from past runs."
)
# Codex refuses a description over 500 characters, a name over 100 (one line each).
assert len(DESCRIPTION) <= 500 and "\n" not in DESCRIPTION


class SkillConflict(UsageError):
    """A skill of our name exists there and is not ours; nothing was written."""


@dataclass(frozen=True, slots=True)
class SkillChange:
    """The change to one client's `SKILL.md`; an uninstall also removes the skill's
    folder when that leaves it empty."""

    file: FileChange

    @property
    def changed(self) -> bool:
        """False when the skill is already exactly as asked."""
        return self.file.changed

    def diff(self) -> str:
        """A unified diff of the change ("" when nothing changes)."""
        return self.file.diff()

    def apply(self) -> None:
        """Write (or remove) the skill; an emptied skill folder is removed too."""
        if self.file.after is not None:
            self.file.path.parent.mkdir(parents=True, exist_ok=True)
        self.file.apply()
        if self.file.after is None and self.file.changed:
            folder = self.file.path.parent
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()


def command_path() -> str:
    """The `active-memory` command the skill tells the agent to run: the console script
    beside this interpreter (a virtualenv's `bin`), else the one on PATH."""
    beside = Path(sys.executable).parent / "active-memory"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("active-memory") or "active-memory"


def render_skill(command: str | None = None, *, shell_word: str | None = None) -> str:
    """The whole `SKILL.md` (front matter, marker, instructions), the same for every
    client. The command is `command` quoted for the shell, or `shell_word` as given (a
    plugin's command, e.g. `"${CODEX_HOME:-$HOME/.codex}/…/active-memory"`, whose
    variables the shell expands)."""
    body = resources.files(__name__).joinpath("active-memory-init.md").read_text("utf-8")
    text = Template(body).substitute(
        # pasted into shell commands
        command=shell_word or shlex.quote(command or command_path()),
        title_max=TITLE_MAX_BYTES,
        recommendation_max=RECOMMENDATION_MAX_BYTES,
        keyword_min=KEYWORD_GROUP_MIN_TERMS,
        keyword_max=KEYWORD_GROUP_MAX_TERMS,
    )
    # A JSON string is a valid YAML double-quoted scalar: no character of the description
    # can break the front matter.
    described = json.dumps(DESCRIPTION, ensure_ascii=False)
    return f"---\nname: {SKILL_NAME}\ndescription: {described}\n---\n\n{MARKER}\n\n{text}"


def skills_root(
    client: Client, where: Where, cwd: Path, env: Mapping[str, str] | None = None
) -> Path:
    """The folder that holds `client`'s skills at project or user level."""
    env = os.environ if env is None else env
    if where == "project":
        top = find_project_root(cwd)
        return top / (".claude" if client == "claude" else ".agents") / "skills"
    home = Path(env.get("HOME") or Path.home())
    if client == "claude":
        configured = env.get("CLAUDE_CONFIG_DIR")
        return (Path(configured) if configured else home / ".claude") / "skills"
    return home / ".agents" / "skills"


def is_ours(text: str | None) -> bool:
    """Whether a `SKILL.md`'s text is one we wrote."""
    return text is not None and MARKER in text


def plan(root: Path, *, install: bool, command: str | None = None) -> SkillChange:
    """The change that installs (or uninstalls) our skill under `root`; nothing is
    written. Raises `SkillConflict` when a skill of our name there is not ours."""
    path = root / SKILL_NAME / "SKILL.md"
    if path.parent.exists() and (path.parent.is_symlink() or not path.parent.is_dir()):
        raise SkillConflict(f"{path.parent} is not a folder we wrote; nothing was changed")
    if path.is_symlink():
        raise SkillConflict(f"{path} is a link, not a skill we wrote; nothing was changed")
    before = read_text(path)
    if before is not None and not is_ours(before):
        raise SkillConflict(
            f"{path} is a skill named {SKILL_NAME} that Active Memory did not write; "
            "nothing was changed (move it away, then run this again)"
        )
    if install:
        other = _same_name_elsewhere(root, path.parent)
        if other is not None:
            raise SkillConflict(
                f"{other} already declares the skill name {SKILL_NAME}; nothing was changed "
                "(rename or remove it, then run this again)"
            )
    after = render_skill(command) if install else None
    return SkillChange(FileChange(path, before, after))


def _same_name_elsewhere(root: Path, ours: Path) -> Path | None:
    """Another skill folder of `root` whose `SKILL.md` front matter names our skill
    (Codex keys skills by that name, so two would shadow each other)."""
    if not root.is_dir():
        return None
    for folder in sorted(root.iterdir()):
        skill = folder / "SKILL.md"
        if folder == ours or not skill.is_file():
            continue
        try:
            head = skill.read_text(encoding="utf-8", errors="replace")[:4096]
        except OSError:
            continue
        if _front_matter_name(head) == SKILL_NAME:
            return skill
    return None


def _front_matter_name(text: str) -> str | None:
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return None
    for line in lines[1:]:
        if line.strip() == "---":
            return None
        key, colon, value = line.partition(":")
        if colon and key.strip() == "name":
            return value.strip().strip("'\"")
    return None
