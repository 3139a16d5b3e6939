"""Is a recommendation a concrete action, or generic advice? (SPEC §5: "a concrete action")

The rule, deterministic and documented in docs/specialists.md:

1. **Anchor.** The recommendation names at least one concrete thing an agent can act
   on: a backticked code span, a root-relative path (`src/api/client.py`) or file name
   (`schema.json`, `Makefile`), an identifier in code spelling (`snake_case`,
   `camelCase`, `PascalCase`, `SCREAMING_CASE`, `name()`, `a.b`), or a command-line flag
   (`--frozen`, ` -k`).
2. **No filler sentence.** A sentence that is a stock phrase ("be careful", "make sure
   to test", "follow best practices", ...) and names no anchor of its own is refused:
   it costs the card bytes and tells the agent nothing.
3. **More than a stock phrase.** With stock phrases, anchors and small words removed,
   some word must remain: "Be careful with `api/schema.json`." names a file but no
   action, and is refused.
4. **Not a report.** A recommendation that narrates the run ("I fixed ...", "The agent
   ...", "In this run ...") is a task summary, not advice for next time.

`generic_advice(text)` returns None for an acceptable recommendation, or the reason.
"""

from __future__ import annotations

import re

from active_memory.lessons import RECOMMENDATION_MAX_BYTES

_CODE_SPAN = re.compile(r"`[^`\n]*[^`\s][^`\n]*`")
_ANCHORS: tuple[re.Pattern[str], ...] = (
    # A path with a slash: src/api, ./scripts/gen.sh, api/schema.json.
    # A path may start only where no path character precedes it: otherwise every dot
    # of "a.a.a..." would be a new start and the search quadratic.
    re.compile(r"(?<![\w./-])\.{0,2}/?[\w.-]+(?:/[\w.-]+)+/?"),
    # A file name with an extension: schema.json, conftest.py, CMakeLists.txt.
    re.compile(r"(?<![\w.-])[\w-]+\.(?:[A-Za-z][A-Za-z0-9]{0,7})(?![\w.])"),
    # Well-known files without an extension.
    re.compile(
        r"\b(?:Makefile|Dockerfile|Justfile|Rakefile|Gemfile|Procfile|Jenkinsfile|"
        r"Containerfile|Vagrantfile|Brewfile|Taskfile)\b"
    ),
    # snake_case / SCREAMING_CASE (an inner underscore between word characters).
    re.compile(r"\b[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]*[A-Za-z0-9]\b"),
    # camelCase and PascalCase with at least two humps.
    re.compile(r"\b[a-z]+[A-Z][A-Za-z0-9]*\b"),
    re.compile(r"\b[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*\b"),
    # A call: name().
    re.compile(r"(?<![\w.])[A-Za-z_][\w.]*\(\)"),
    # A command-line flag: --long-flag, or a single-letter flag after a space.
    re.compile(r"(?<![\w-])--[A-Za-z0-9][\w-]*"),
    re.compile(r"(?<=\s)-[A-Za-z](?![\w-])"),
)
# Sentence-level stock phrases: advice any agent already has.
_STOCK = re.compile(
    r"\b(?:"
    r"be (?:very |extra )?(?:careful|cautious|mindful|thorough|aware)"
    r"|make sure (?:to |that |you )*(?:test|check|verify|review)\w*"
    r"(?: (?:everything|thoroughly|carefully|your (?:work|changes|code)|the (?:changes?|code)))?"
    r"|follow(?:ing)? (?:the )?(?:best practices|conventions|coding standards|the style guide)"
    r"|(?:double|triple)[- ]check(?: (?:your|the) (?:work|changes|code))?"
    r"|pay (?:close )?attention(?: to detail)?"
    r"|keep (?:this |that )?in mind"
    r"|take care"
    r"|write (?:clean|good|better|maintainable|readable) code"
    r"|test (?:everything|thoroughly|carefully)"
    r"|think (?:carefully|step by step|before)"
    r"|(?:read|understand) the (?:code|codebase|requirements) (?:first|carefully|before)"
    r"|ensure (?:quality|correctness|everything works)"
    r"|avoid (?:mistakes|errors|bugs)"
    r"|as needed|where appropriate|if necessary|when possible"
    r")\b",
    re.IGNORECASE,
)
_NARRATION = re.compile(
    r"^\s*(?:(?:I|We)\s|(?:The agent|This run|In this run|During (?:this|the) run|"
    r"Fixed|Implemented|Added|Resolved)\b)",
)
_SMALL = frozenset(
    {
        "a", "an", "the", "to", "of", "in", "on", "at", "for", "with", "and", "or", "but",
        "when", "while", "before", "after", "by", "from", "into", "your", "you", "it", "its",
        "this", "that", "these", "those", "is", "are", "be", "all", "any", "every", "each",
        "always", "never", "also", "just", "so", "as", "if", "then", "than", "please", "do",
        "not", "don't",
    }
)  # fmt: skip
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")


def anchors(text: str) -> list[str]:
    """The concrete anchors rule 1 finds in `text`, in order of the rules."""
    found = [m.group(0) for m in _CODE_SPAN.finditer(text)]
    rest = _CODE_SPAN.sub(" ", text)
    for pattern in _ANCHORS:
        found.extend(m.group(0) for m in pattern.finditer(rest))
    return found


def _has_anchor(text: str) -> bool:
    """`bool(anchors(text))`, stopping at the first anchor found: a code span, or any
    rule's match outside the code spans (none here means the text is `rest` itself)."""
    if _CODE_SPAN.search(text):
        return True
    return any(pattern.search(text) for pattern in _ANCHORS)


def _strip_anchors(text: str) -> str:
    text = _CODE_SPAN.sub(" ", text)
    for pattern in _ANCHORS:
        text = pattern.sub(" ", text)
    return text


MAX_ANALYSED_CHARS = 4 * RECOMMENDATION_MAX_BYTES
"""Only this much of a text is analysed: a longer one fails the byte limit anyway, and a
model's answer must not be able to make the check slow."""


def generic_advice(text: str) -> str | None:
    """None when `text` is a concrete action; otherwise why it is generic advice."""
    text = text[:MAX_ANALYSED_CHARS]
    if _NARRATION.match(text):
        return "it reports what happened in the run; write what to do next time instead"
    if not _has_anchor(text):
        return (
            "names no concrete command, file, path, identifier or flag (put commands and "
            "names in backticks)"
        )
    if _STOCK.search(text):  # else no sentence holds one, and nothing is stock
        for sentence in _SENTENCE.split(text):
            stock = _STOCK.search(sentence)
            if stock and not _has_anchor(sentence):
                return f"generic filler {sentence.strip()!r}: say what to do, or leave it out"
        rest = _STOCK.sub(" ", _strip_anchors(text))
    else:
        rest = _strip_anchors(text)
    # One word left that is not a small word is enough.
    if not any(w.group(0).lower() not in _SMALL for w in _WORD.finditer(rest)):
        return "only a stock phrase around a name; say what to do with it"
    return None
