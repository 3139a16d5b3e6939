"""What a card says (SPEC §5, §6): deterministic rules, each named in its refusal.

- `task-summary`: the card's first clause (the first of five words or more, or with a
  code name) reports the run instead of saying what to do: it opens with a narrating
  past-tense verb (`Added`, `Updated`, ...), or reports a past change or a new state
  (`was raised`, `were updated`, `passed`, `now defaults to`, `wurde`, `a été`, ...)
  outside a `when`/`if`/`after` clause.
- `generic-advice`: `actionable.generic_advice` (an anchor, no filler, more than a stock
  phrase, not a report); and the words around the anchors must hold more than vague
  words (`review`, `carefully`, `consistent`, `quality`, ... in the languages listed);
  and a repository card must name a command (a code span with arguments, or a flag)
  or something it stands on: a cited path (or its file name), an associated file,
  folder, identifier or command, or a cited failure's command.
- `restates-node-instructions`: a graph card whose text is a near-duplicate of its node's
  instructions, by the store's duplicate measure (`quality.duplicates.text_similarity`
  at `DuplicateLimits.with_shared_association`: the card and its node share the node),
  compared with the whole instructions and with each run of consecutive sentences.
- `everyday-files`: a repository card whose only path associations are files every task
  touches (READMEs, lock files, root build files) and which has no identifier or
  command association is refused, unless a cited failure's command is defined in or run
  from such a file (a `make` target the Makefile defines, an `npm run` script of
  `package.json`, ...).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from rapidfuzz import fuzz
from rapidfuzz.utils import default_process

from active_memory.lessons import Associations
from active_memory.specialists.actionable import anchors, generic_advice

FileReader = Callable[[str], "str | None"]
"""Reads a root-relative file of the checkout (None: not readable)."""

TASK_SUMMARY = "task-summary"
GENERIC_ADVICE = "generic-advice"
RESTATES = "restates-node-instructions"
EVERYDAY = "everyday-files"

_NARRATING = re.compile(
    r"^\W*(?:Added|Updated|Changed|Fixed|Implemented|Resolved|Removed|Refactored|Renamed|"
    r"Moved|Created|Replaced|Switched|Bumped|Improved|Introduced|Modified|Adjusted|Raised|"
    r"Lowered|Increased|Reduced|Converted|Migrated|Rewrote|Wrote|Made|Ran|Found|Tried|"
    r"Investigated|Discovered|Debugged|Reverted|Merged|Deleted|Cleaned|Enabled|Patched|"
    r"Reworked|Extended|Simplified|Restored|Corrected|Set up|Hinzugefügt|Geändert|"
    r"Behoben|Ajouté|Corrigé|Modifié|Añadido|Corregido|Cambiado)\b"
)
_REPORT = re.compile(
    r"\b(?:was|were|has been|have been|had been|got)\s+\w+(?:ed|en|wn|ne|de|ade|ilt|ritten|et)\b|"
    r"\b(?:code|tests?|suite|build|it|ci|checks?)\s+(?:passed|succeeded|worked|broke|failed)\b|"
    r"\bnow (?:defaults|uses|passes|works|returns|runs|is|has)\b|"
    r"\b(?:pass|passes) now\b|\b(?:wurde|wurden)\b|\b(?:a|ont) été\b|\bj'ai\b|\bnous avons\b|"
    r"\b(?:fue|fueron)\b",
    re.IGNORECASE,
)
_SUBORDINATE = re.compile(
    r"\b(?:when|whenever|if|after|before|because|since|unless|once|until|while|where|"
    r"wenn|falls|nachdem|si|quand|cuando)\b",
    re.IGNORECASE,
)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_CLAUSE = re.compile(r"[.!?;:]\s+|\n+")
_WORD = re.compile(r"[^\W\d_][\w'-]*")
_VAGUE = frozenset(
    [
        "review",
        "reviews",
        "check",
        "checks",
        "look",
        "looking",
        "into",
        "inspect",
        "examine",
        "consider",
        "impact",
        "read",
        "understand",
        "remember",
        "note",
        "mind",
        "mindful",
        "careful",
        "carefully",
        "care",
        "thorough",
        "thoroughly",
        "properly",
        "correctly",
        "consistent",
        "consistently",
        "consistency",
        "clean",
        "cleanly",
        "code",
        "codebase",
        "quality",
        "good",
        "best",
        "practice",
        "practices",
        "standard",
        "standards",
        "convention",
        "conventions",
        "style",
        "keep",
        "maintain",
        "ensure",
        "make",
        "sure",
        "verify",
        "everything",
        "works",
        "work",
        "working",
        "changes",
        "change",
        "changing",
        "making",
        "edits",
        "editing",
        "file",
        "files",
        "things",
        "stuff",
        "there",
        "here",
        "need",
        "needs",
        "attention",
        "approach",
        "appropriately",
        "safe",
        "safely",
        "robust",
        "sensible",
        "reasonable",
        "finishing",
        "finish",
        "done",
        "them",
        "overall",
        "general",
        "generally",
        "relevant",
        "related",
        "correct",
        "right",
        "issues",
        "problems",
        "potential",
        "possible",
        "some",
        "other",
        "others",
        "further",
        "more",
        "less",
        "focus",
        "detail",
        "details",
        "on",
        "of",
        "be",
        "being",
        "überprüfe",
        "überprüfen",
        "prüfe",
        "prüfen",
        "sorgfältig",
        "genau",
        "halte",
        "halten",
        "konsistent",
        "sauber",
        "achte",
        "achten",
        "auf",
        "den",
        "die",
        "das",
        "und",
        "der",
        "revisa",
        "revisar",
        "cuidadosamente",
        "código",
        "mantén",
        "consistente",
        "vérifie",
        "vérifiez",
        "soigneusement",
        "garde",
        "gardez",
        "cohérent",
        "le",
        "la",
        "les",
        "et",
    ]
)
_SMALL = frozenset(
    [
        "a",
        "an",
        "the",
        "to",
        "in",
        "at",
        "for",
        "with",
        "and",
        "or",
        "but",
        "when",
        "while",
        "before",
        "after",
        "by",
        "from",
        "your",
        "you",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "is",
        "are",
        "all",
        "any",
        "every",
        "each",
        "always",
        "never",
        "also",
        "just",
        "so",
        "as",
        "if",
        "then",
        "than",
        "please",
        "do",
        "not",
        "don't",
    ]
)

EVERYDAY_FILES = frozenset(
    [
        "README",
        "README.md",
        "README.rst",
        "README.txt",
        "CHANGELOG.md",
        "CHANGES.md",
        "LICENSE",
        "LICENSE.md",
        "CONTRIBUTING.md",
        ".gitignore",
        "package-lock.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "poetry.lock",
        "uv.lock",
        "Pipfile.lock",
        "Cargo.lock",
        "Gemfile.lock",
        "go.sum",
        "composer.lock",
        "mix.lock",
        "flake.lock",
        "Makefile",
        "GNUmakefile",
        "package.json",
        "pyproject.toml",
        "setup.py",
        "setup.cfg",
        "requirements.txt",
        "Cargo.toml",
        "go.mod",
        "Gemfile",
        "composer.json",
        "mix.exs",
        "build.gradle",
        "pom.xml",
        "CMakeLists.txt",
        "Justfile",
        "tox.ini",
        "noxfile.py",
        "Dockerfile",
    ]
)
"""Root-level files every task touches: alone, they say nothing about where work is."""

_RUNNERS: dict[str, tuple[str, ...]] = {
    "make": ("Makefile", "GNUmakefile"),
    "npm": ("package.json", "package-lock.json"),
    "yarn": ("package.json", "yarn.lock"),
    "pnpm": ("package.json", "pnpm-lock.yaml"),
    "just": ("Justfile",),
    "cargo": ("Cargo.toml", "Cargo.lock"),
    "go": ("go.mod", "go.sum"),
    "poetry": ("pyproject.toml", "poetry.lock"),
    "uv": ("pyproject.toml", "uv.lock"),
    "tox": ("tox.ini",),
    "nox": ("noxfile.py",),
    "mix": ("mix.exs", "mix.lock"),
    "bundle": ("Gemfile", "Gemfile.lock"),
    "gradle": ("build.gradle",),
    "mvn": ("pom.xml",),
}


def task_summary(text: str) -> str | None:
    """Why the card's first clause reports the run, or None."""
    if _NARRATING.match(text):
        return "it reports what was done; say what to do next time"
    for clause in _CLAUSE.split(text):
        words = _WORD.findall(_CODE_SPAN.sub(" ", clause))
        if len(words) < 5 and not _CODE_SPAN.search(clause):
            continue
        plain = _CODE_SPAN.sub(" code ", clause)
        report = _REPORT.search(plain)
        if report and not _SUBORDINATE.search(plain[: report.start()]):
            return "it reports what happened in the run; say what to do next time"
        return None
    return None


def generic(text: str, tie: Iterable[str] | None) -> str | None:
    """Why `text` is generic advice, or None; `tie` (a repository card): the names a
    concrete action must be tied to."""
    found = generic_advice(text)
    if found is not None:
        return found
    rest = _CODE_SPAN.sub(" ", text)
    words = [w.casefold() for w in _WORD.findall(rest)]
    named = {a.strip("`").casefold() for a in anchors(text)}
    if all(w in _VAGUE or w in _SMALL or w in named for w in words):
        return "only vague words around a name; say what to do with it"
    if tie is None:
        return None
    if any(
        (a.startswith("`") and " " in a.strip("` ")) or a.startswith("-") for a in anchors(text)
    ):
        return None  # a command is a concrete action of its own
    ties = {t.casefold() for t in tie if t}
    for anchor in named:
        if any(t in anchor or anchor in t for t in ties if len(anchor) >= 3):
            return None
    return "no concrete action tied to a cited path, associated name or cited command"


def restates_instructions(
    title: str, recommendation: str, instructions: str, limit: float
) -> float | None:
    """The similarity (0-100) when a graph card restates `instructions`, else None."""
    card = f"{title} {recommendation}"
    sentences = [s for s in re.split(r"(?<=[.!?;])\s+", instructions) if s.strip()]
    windows = [instructions] + [
        " ".join(sentences[i:j])
        for i in range(len(sentences))
        for j in range(i + 1, min(len(sentences), i + 8) + 1)
    ]
    best = max(fuzz.token_sort_ratio(card, w, processor=default_process) for w in windows)
    return float(best) if best >= limit else None


def everyday_only(
    associations: Associations, commands: Sequence[str], read_file: FileReader
) -> str | None:
    """Why the card's associations are only files every task touches, or None."""
    paths = [*associations.files, *associations.folders]
    if associations.identifiers or associations.commands or not paths:
        return None
    if not all(p in EVERYDAY_FILES for p in paths):
        return None
    for command in commands:
        if any(_defines(path, command, read_file) for path in associations.files):
            return None
    return f"{', '.join(paths)} alone: every task touches it; associate what the lesson is about"


def _defines(path: str, command: str, read_file: FileReader) -> bool:
    """Whether `command` is defined in or run from the root file `path`."""
    parts = command.split()
    if not parts or path not in _RUNNERS.get(parts[0], ()):
        return False
    program, rest = parts[0], parts[1:]
    target = next((p for p in rest if not p.startswith("-") and p != "run"), None)
    if program in ("make", "just"):
        text = read_file(path) or ""
        return target is None or re.search(rf"(?m)^{re.escape(target)}\s*:", text) is not None
    if program in ("npm", "yarn", "pnpm") and path == "package.json" and target is not None:
        return f'"{target}"' in (read_file(path) or "")
    return True
