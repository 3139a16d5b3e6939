"""A small POSIX shell tokenizer: enough to read which paths a command line touches.

Not `shlex`: it imports `re`, which a hook process cannot afford, and it does not split
`a&&b` or skip here-document bodies. This reads quotes ('…', "…" with backslash
escapes, $'…' as plain quotes), backslash escapes, comments, the control operators
(`&&`, `||`, `;`, `|`, `&`, newline) and redirections. A here-document body is skipped,
because its lines are data, not arguments. Expansions (`$x`, `$(…)`, globs) are kept as
literal text: recall never runs anything.
"""

from __future__ import annotations

CONTROL = frozenset({"&&", "||", ";", "|", "&", "\n", ";;", "|&", "(", ")"})
"""Tokens that end one simple command."""

REDIRECTIONS = frozenset({">", ">>", "<", "<>", ">|", "&>", "&>>", ">&", "<&"})
"""Tokens after which the next word is a file (or a descriptor)."""

_OPERATOR_CHARS = "&|;<>()"
_OPERATORS = sorted(
    CONTROL | REDIRECTIONS | {"<<", "<<-", "<<<"}, key=len, reverse=True
)  # longest first


class Word(str):
    """A shell word; `quoted` is True when any part of it was quoted."""

    quoted: bool = False


def tokenize(text: str) -> list[str]:
    """Split a command line into words and operator tokens (newlines become `"\\n"`)."""
    tokens: list[str] = []
    pending_heredocs: list[tuple[str, bool]] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\n":
            tokens.append("\n")
            i += 1
            if pending_heredocs:
                i = _skip_heredocs(text, i, pending_heredocs)
                pending_heredocs = []
            continue
        if ch in " \t\r":
            i += 1
            continue
        if ch == "#" and (not tokens or tokens[-1] in CONTROL):
            while i < n and text[i] != "\n":
                i += 1
            continue
        if ch in _OPERATOR_CHARS:
            for op in _OPERATORS:
                if text.startswith(op, i):
                    break
            else:  # pragma: no cover - every operator char starts some operator
                op = ch
            i += len(op)
            if op in ("<<", "<<-"):
                word, i = _read_word(text, i, skip_space=True)
                pending_heredocs.append((str(word).strip(), op == "<<-"))
                continue
            tokens.append(op)
            continue
        word, i = _read_word(text, i)
        tokens.append(word)
    return tokens


def _read_word(text: str, i: int, *, skip_space: bool = False) -> tuple[Word, int]:
    n = len(text)
    if skip_space:
        while i < n and text[i] in " \t":
            i += 1
    parts: list[str] = []
    quoted = False
    while i < n:
        ch = text[i]
        if ch in " \t\r\n" or ch in _OPERATOR_CHARS:
            break
        if ch == "\\":
            if i + 1 < n and text[i + 1] != "\n":
                parts.append(text[i + 1])
            i += 2
            continue
        if ch == "'" or (ch == "$" and text.startswith("$'", i)):
            i += 2 if ch == "$" else 1
            end = text.find("'", i)
            end = n if end < 0 else end
            parts.append(text[i:end])
            quoted = True
            i = end + 1
            continue
        if ch == '"':
            i += 1
            while i < n and text[i] != '"':
                if text[i] == "\\" and i + 1 < n and text[i + 1] in '"\\$`':
                    i += 1
                parts.append(text[i])
                i += 1
            quoted = True
            i += 1
            continue
        parts.append(ch)
        i += 1
    word = Word("".join(parts))
    word.quoted = quoted
    return word, i


def _skip_heredocs(text: str, i: int, heredocs: list[tuple[str, bool]]) -> int:
    n = len(text)
    for delimiter, strip_tabs in heredocs:
        while i < n:
            end = text.find("\n", i)
            end = n if end < 0 else end
            line = text[i:end]
            i = end + 1
            if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                break
    return min(i, n)


def simple_commands(text: str) -> list[list[str]]:
    """The simple commands of a command line, each a list of words (redirections kept).

    `a && cd x && b > out` → `[["a"], ["cd", "x"], ["b", ">", "out"]]`.
    """
    commands: list[list[str]] = []
    current: list[str] = []
    for token in tokenize(text):
        if token in CONTROL and not isinstance(token, Word):
            if current:
                commands.append(current)
            current = []
        else:
            current.append(token)
    if current:
        commands.append(current)
    return commands
